"""A mode written outside the package, in two modules of its own, runs in the node over DDS
(issue 23): ``helpers.toy_mode`` (``OneJointMode``: its parameter, settings, its own session,
replay, report, results and their evaluation; no rclpy) and ``helpers.toy_mode_wiring``
(``OneJointIO``: the link on ``~/one_link``, latched; ``~/identify`` answers with it). The node
loads it from its ``mode`` parameter, ``helpers.toy_mode:OneJointMode``, with ``test/`` on
``PYTHONPATH``; no package file names it. Its replay and validation through the registry:
``test/unit/modes/test_mode_contract.py`` and ``test/unit/modes/test_toy_mode_offline.py``.
"""

from __future__ import annotations

import os

import numpy as np

from helpers.dds import identify, spin_until, wait_until_inputs_matched
from helpers.paths import REPO
from helpers.toy_mode import JOINT, MODE, NOISE, RATE_HZ, chain, motion
from inertia_id_ros.core.inertia import check_consistency
from inertia_id_ros.core.robots import example_robot_urdf, load_model
from inertia_id_ros.msg import InertialParameters
from inertia_id_ros.ros.conversions import joint_state
from inertia_id_ros.ros.qos import LATCHED

DURATION = 20.0


def _truth():
    """The chain of ``JOINT`` and its true parameters: the URDF's link, 30 % heavier."""
    model = chain(load_model(urdf_path=str(example_robot_urdf("panda"))), JOINT)
    return model, 1.3 * model.prior


def test_a_mode_from_a_test_file_runs_in_the_node(launch, ros_env, rclpy_context, monkeypatch):
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import JointState

    from inertia_id_ros.srv import Identify

    paths = [str(REPO / "test"), ros_env.get("PYTHONPATH", "")]
    monkeypatch.setitem(ros_env, "PYTHONPATH", os.pathsep.join(filter(None, paths)))
    node = launch(
        "inertia-id-node",
        "inertia_id_ros.ros.node",
        "-p",
        f"mode:={MODE}",
        "-p",
        f"urdf_path:={example_robot_urdf('panda')}",
        "-p",
        f"one_joint:={JOINT}",
        "-p",
        "window_sec:=30.0",
        "-p",
        "update_rate_hz:=2.0",
    )
    peer = rclpy.create_node("inertia_id_toy_client")
    links: list = []
    peer.create_subscription(InertialParameters, "/inertia_id/one_link", links.append, LATCHED)
    diagnostics: list[dict[str, str]] = []
    peer.create_subscription(
        DiagnosticArray,
        "/diagnostics",
        lambda msg: diagnostics.extend(
            {kv.key: kv.value for kv in s.values}
            for s in msg.status
            if s.name.startswith("inertia_id")
        ),
        10,
    )
    joints = peer.create_publisher(JointState, "/joint_states", 1000)
    client = peer.create_client(Identify, "/inertia_id/identify")
    try:
        wait_until_inputs_matched(peer, [joints], node=node)
        assert spin_until(peer, lambda: diagnostics, 30.0), node.output()[-3000:]
        assert diagnostics[-1]["mode"] == "one_joint"
        model, x_true = _truth()
        t = np.arange(int(DURATION * RATE_HZ)) / RATE_HZ
        q, dq, ddq = motion(t)
        tau = model.joint_torque_regressor(q, dq, ddq) @ x_true
        effort = tau + np.random.default_rng(0).normal(0.0, NOISE, tau.shape)
        for k in range(t.size):
            joints.publish(joint_state(100.0 + t[k], [JOINT], q[k], dq[k], effort[k]))
            if k % 50 == 0:
                rclpy.spin_once(peer, timeout_sec=0.005)
        received = len(diagnostics)
        assert spin_until(
            peer,
            lambda: len(diagnostics) > received + 1
            and int(diagnostics[-1].get("received.joint_state", 0)) == t.size,
            30.0,
        ), diagnostics[-1:]
        response = identify(peer, client)
        assert response.success, response.message
        theta = np.array(response.estimate.theta)
        assert check_consistency(theta).fully_consistent
        assert response.estimate.body_name == JOINT
        # the data determine the torque the link needs along the motion, not every parameter:
        # the estimate predicts it within the noise, the URDF's link (30 % light) far off
        regressor = model.joint_torque_regressor(q, dq, ddq)
        rms = float(np.sqrt(np.mean(tau**2)))
        error = float(np.sqrt(np.mean((regressor @ theta - tau) ** 2)))
        urdf_error = float(np.sqrt(np.mean((regressor @ model.prior - tau) ** 2)))
        print(
            f"\none_joint mode: torque RMS {rms:.3f} N m; prediction error {error:.4f} N m "
            f"(noise {NOISE} N m), the URDF's {urdf_error:.3f} N m"
        )
        assert error < 0.005 * rms and error < 0.02 * urdf_error
        assert spin_until(peer, lambda: bool(links), 10.0), "nothing on ~/one_link"
        assert check_consistency(np.array(links[-1].theta)).fully_consistent
        assert "identifying the link of panda_joint2" in node.output()
    finally:
        peer.destroy_node()
