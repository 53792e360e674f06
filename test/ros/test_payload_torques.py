"""A payload from joint torques over DDS: the simulator's ``panda_torques`` robot (the Panda without
an F/T sensor, links off the URDF by up to 10 %, friction, torque noise) in its own process, its
joint states received in the test process and fed, as they arrive, to the session the node's
``payload_torques`` mode runs (:func:`~inertia_id_ros.online.session.payload_torque_session`),
with an imperfect link model: a fit-links fit of an unloaded recording with noise."""

from __future__ import annotations

import numpy as np

from helpers import spin_until
from inertia_id_ros.chain.links import fit_links
from inertia_id_ros.core.inertia import inertia_from_theta
from inertia_id_ros.options import PAYLOAD_TORQUES_HALF_WIDTH
from inertia_id_ros.sim.torques import panda_payload_torque_runs

MOTION_SEC = 20.0
RATE_HZ = 500.0
SEED = 4


def unloaded_link_fit(links):
    """The links and drives fitted to an unloaded recording of the simulated Panda (the same
    truth as the simulator's for ``SEED``), with noise: an imperfect link model."""
    from inertia_id_ros.chain.links import JointTorqueData
    from inertia_id_ros.io.data import JointStates, with_derivatives

    rec = panda_payload_torque_runs(duration=MOTION_SEC, rate=RATE_HZ, seed=SEED).unloaded
    states = with_derivatives(JointStates(rec.t, links.joint_names, rec.q, rec.dq,
                                          effort=rec.effort), PAYLOAD_TORQUES_HALF_WIDTH)
    data = JointTorqueData(states.q, states.dq, states.ddq, states.effort, links.joint_names)
    return fit_links(links, data, prior_weight=1e-6).x


def test_simulated_panda_torques_over_dds_give_the_payload(launch, rclpy_context):
    import rclpy
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState

    from inertia_id_ros.msg import InertialParameters
    from inertia_id_ros.online.session import payload_torque_session
    from inertia_id_ros.ros.conversions import stamp_to_seconds

    links = panda_payload_torque_runs(duration=1.0, seed=SEED).links
    session = payload_torque_session(links, unloaded_link_fit(links), "panda_link8",
                                     window_sec=MOTION_SEC + 5.0, max_input_rate_hz=RATE_HZ)
    peer = rclpy.create_node("inertia_id_payload_torques_client")
    received: dict[str, list] = {"truth": [], "dropped": [], "joint_states": []}
    latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                         reliability=ReliabilityPolicy.RELIABLE)
    peer.create_subscription(InertialParameters, "/inertia_id_sim/ground_truth",
                             received["truth"].append, latched)

    def on_joint_state(msg: JointState) -> None:
        received["joint_states"].append(msg.header.stamp)
        warning = session.add_joint_state(stamp_to_seconds(msg.header.stamp), list(msg.name),
                                          np.array(msg.position), np.array(msg.velocity),
                                          np.array(msg.effort))
        if warning is not None:
            received["dropped"].append(warning)

    subscription = peer.create_subscription(JointState, "/joint_states", on_joint_state,
                                            QoSProfile(depth=1000,
                                                       reliability=ReliabilityPolicy.RELIABLE))
    sim = launch("inertia-id-sim", "inertia_id_ros.ros.sim_node", "-p", "robot:=panda_torques",
                 "-p", f"seed:={SEED}", "-p", f"rate_hz:={RATE_HZ}",
                 "-p", f"duration_sec:={MOTION_SEC}")
    try:
        assert spin_until(peer, lambda: subscription.get_publisher_count() > 0, 30.0), \
            sim.output()
        assert spin_until(peer, lambda: not sim.alive(), MOTION_SEC + 40.0), sim.output()
        assert sim.popen.returncode == 0, sim.output()
        played = int(round(MOTION_SEC * RATE_HZ))  # the simulator's count, all delivered
        assert spin_until(peer, lambda: len(received["joint_states"]) == played, 10.0), \
            len(received["joint_states"])
        update = session.update()
        assert update.ok, update.message
        assert not received["dropped"], received["dropped"][:3]
        assert received["truth"], "no ground truth from the simulator"
        truth = np.array(received["truth"][-1].theta)
        assert received["truth"][-1].header.frame_id == "panda_link8"
        estimate = update.estimate
        assert estimate.n_samples > 0.95 * MOTION_SEC * RATE_HZ
        m0, c0, i0 = inertia_from_theta(truth)
        m, c, i = inertia_from_theta(estimate.theta)
        assert abs(m - m0) / m0 < 0.01
        assert np.linalg.norm(c - c0) < 0.005
        assert np.linalg.norm(i - i0) / np.linalg.norm(i0) < 0.15
        assert abs(m - m0) < 5 * estimate.theta_std[0] + 1e-3
    finally:
        peer.destroy_node()
