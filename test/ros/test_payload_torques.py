"""A payload from joint torques over DDS, the simulator in its own process.

The simulator's ``panda_torques`` robot (the Panda without an F/T sensor, links off the URDF by
up to 10 %, friction, torque noise) publishes; its joint states are received in the test process
and fed, as they arrive, to the session the node's ``payload_torques`` mode runs
(:func:`~inertia_id_ros.online.session.payload_torque_session`), with an imperfect link model:
``fit-links`` on an unloaded recording with noise. (The node's mode itself is wired with the mode
registry; this is its session on the simulator's DDS stream.)
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from helpers.dds import spin_until
from inertia_id_ros import cli
from inertia_id_ros.core.inertia import inertia_from_theta
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.io.link_result import read_link_result
from inertia_id_ros.options import PAYLOAD_TORQUES_HALF_WIDTH
from inertia_id_ros.sim.torques import panda_payload_torque_runs

MOTION_SEC = 60.0
RATE_HZ = 1000.0
SEED = 4


def unloaded_link_model(directory: Path):
    """The link model from ``fit-links`` on an unloaded recording with noise of the simulated
    Panda (the same truth as the simulator's for ``SEED``): an imperfect one. Its
    ``read_link_result``."""
    runs = panda_payload_torque_runs(duration=MOTION_SEC, rate=RATE_HZ, seed=SEED)
    rec = runs.unloaded
    data, result = directory / "unloaded.npz", directory / "links.json"
    np.savez(data, t=rec.t, joint_names=np.array(runs.links.joint_names), q=rec.q, dq=rec.dq,
             effort=rec.effort)
    assert cli.main(["fit-links", "--urdf", str(example_robot_urdf("panda")), "--data",
                     str(data), "--json", str(result), "--filter-half-width",
                     str(PAYLOAD_TORQUES_HALF_WIDTH)]) == 0
    return read_link_result(result, runs.links)


def delivered(messages: list, quiet_sec: float = 0.5):
    """A predicate: true once ``messages`` has not grown for ``quiet_sec`` (the publisher has
    exited: what is still in flight has arrived)."""
    state = {"count": -1, "since": time.monotonic()}

    def settled() -> bool:
        if len(messages) != state["count"]:
            state["count"], state["since"] = len(messages), time.monotonic()
        return time.monotonic() - state["since"] >= quiet_sec

    return settled


def test_simulated_panda_torques_over_dds_give_the_payload(launch, rclpy_context, tmp_path):
    import rclpy
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState

    from inertia_id_ros.msg import InertialParameters
    from inertia_id_ros.online.session import payload_torque_session
    from inertia_id_ros.ros.conversions import joint_state_arrays, joint_state_groups

    links = unloaded_link_model(tmp_path)
    session = payload_torque_session(links.model, links.x, "panda_link8",
                                     window_sec=MOTION_SEC + 5.0, max_input_rate_hz=RATE_HZ)
    peer = rclpy.create_node("inertia_id_payload_torques_client")
    received: dict[str, list] = {"truth": [], "dropped": [], "joint_states": []}
    latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                         reliability=ReliabilityPolicy.RELIABLE)
    peer.create_subscription(InertialParameters, "/inertia_id_sim/ground_truth",
                             received["truth"].append, latched)

    pending: list[JointState] = []

    def on_joint_state(msg: JointState) -> None:
        received["joint_states"].append(msg.header.stamp)
        pending.append(msg)

    def take_joint_states() -> None:
        """The received joint states into the session in batches, then into its window (the
        node's worker does so; a solve here, in the spinning thread, would hold up 1 kHz)."""
        batch = pending[:]
        del pending[:len(batch)]
        for group in joint_state_groups(batch):
            received["dropped"] += session.add_joint_states(*joint_state_arrays(group))
        session.estimator.process()

    subscription = peer.create_subscription(JointState, "/joint_states", on_joint_state,
                                            QoSProfile(depth=1000,
                                                       reliability=ReliabilityPolicy.RELIABLE))
    peer.create_timer(0.2, take_joint_states)
    sim = launch("inertia-id-sim", "inertia_id_ros.ros.sim_node", "-p", "robot:=panda_torques",
                 "-p", f"seed:={SEED}", "-p", f"rate_hz:={RATE_HZ}",
                 "-p", f"duration_sec:={MOTION_SEC}")
    try:
        assert spin_until(peer, lambda: subscription.get_publisher_count() > 0, 30.0), \
            sim.output()
        assert spin_until(peer, lambda: not sim.alive(), MOTION_SEC + 40.0), sim.output()
        assert sim.popen.returncode == 0, sim.output()
        played = int(round(MOTION_SEC * RATE_HZ))  # the simulator's count; on a loaded
        # machine a reliable keep-last writer loses some, as the node's own tests allow for
        assert spin_until(peer, delivered(received["joint_states"]), 20.0), \
            len(received["joint_states"])
        assert len(received["joint_states"]) > 0.9 * played
        take_joint_states()
        dropped = session.estimator.stats().dropped  # gaps of lost messages, the filter's ends
        assert not received["dropped"] and not dropped.get("overflow"), (received, dropped)
        update = session.update()
        assert update.ok, update.message
        assert received["truth"], "no ground truth from the simulator"
        truth = np.array(received["truth"][-1].theta)
        assert received["truth"][-1].header.frame_id == "panda_link8"
        estimate = update.estimate
        assert estimate.n_samples > 0.85 * played
        m0, c0, i0 = inertia_from_theta(truth)
        m, c, i = inertia_from_theta(estimate.theta)
        print(f"payload from joint torques over DDS: mass {100 * (m - m0) / m0:+.3f} %, COM "
              f"{1e3 * np.linalg.norm(c - c0):.2f} mm, inertia "
              f"{100 * np.linalg.norm(i - i0) / np.linalg.norm(i0):.1f} %, mass standard error "
              f"{estimate.theta_std[0]:.4f} kg, {estimate.n_samples} joint states")
        assert abs(m - m0) / m0 < 0.01
        assert np.linalg.norm(c - c0) < 0.005
        assert np.linalg.norm(i - i0) / np.linalg.norm(i0) < 0.15
        assert abs(m - m0) < 5 * estimate.theta_std[0] + 1e-3
    finally:
        peer.destroy_node()
