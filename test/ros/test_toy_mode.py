"""A mode written outside the package, in this file alone, runs in the node over DDS (issue 23).

``OneJointMode`` identifies the link one joint moves (the Panda's ``panda_joint2``, the others
locked) from that joint's torque: its own parameter (``one_joint``), settings, session factory and
ROS wiring (``OneJointIO``: the link on ``~/one_link``, latched; ``~/identify`` answers with it).
The node loads it from its ``mode`` parameter, ``test_toy_mode:OneJointMode``, with this directory
on ``PYTHONPATH``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from helpers.dds import identify, spin_until, wait_until_inputs_matched
from helpers.paths import REPO
from inertia_id_ros.chain.friction import JointDrive
from inertia_id_ros.chain.links import LinkModel
from inertia_id_ros.core.inertia import check_consistency
from inertia_id_ros.core.robots import example_robot_urdf, load_model
from inertia_id_ros.errors import JointNotFound, StartupError
from inertia_id_ros.modes import Mode, NodeSettings, ParameterSpec
from inertia_id_ros.modes.base import load_robot
from inertia_id_ros.msg import InertialParameters
from inertia_id_ros.online.link_session import LinkSession, link_session
from inertia_id_ros.online.session import Update
from inertia_id_ros.ros.conversions import joint_state, theta_to_msg
from inertia_id_ros.ros.qos import LATCHED
from inertia_id_ros.ros.wiring.base import ModeWiring

MODE = "test_toy_mode:OneJointMode"
JOINT = "panda_joint2"
NO_DRIVE = JointDrive(viscous=False, coulomb=False, offset=False, armature=False)
RATE_HZ, DURATION, NOISE = 200.0, 20.0, 0.05


@dataclass(frozen=True)
class OneJointSettings:
    joint: str


class OneJointMode(Mode):
    """One link from its joint's torque (the robot's other joints locked at zero)."""

    name = "one_joint"
    title = "One-joint mode"
    summary = "the link one joint moves, from that joint's torque"
    parameters = (
        ParameterSpec(
            "one_joint",
            "",
            "One-joint mode: the joint whose link is identified (the others are locked).",
        ),
    )
    default_weighting = "none"
    wiring = "test_toy_mode:OneJointIO"

    def read_settings(self, values: Mapping[str, Any]) -> OneJointSettings:
        return OneJointSettings(values["one_joint"])

    def check_settings(self, settings: NodeSettings) -> None:
        if not settings.mode_settings.joint:
            raise StartupError("parameter 'one_joint' is required in one_joint mode")

    def build_session(self, settings: NodeSettings) -> LinkSession:
        try:
            model = LinkModel.from_model(
                load_robot(settings), [settings.mode_settings.joint], drives=NO_DRIVE
            )
        except JointNotFound as error:
            raise StartupError(f"parameter 'one_joint': {error}") from error
        return link_session(
            model,
            window_sec=settings.window_sec,
            method=settings.method,
            solver_options=settings.solver_options,
            max_input_rate_hz=settings.max_input_rate_hz,
            weighting=settings.weighting,
        )


class OneJointIO(ModeWiring):
    """The link on ``~/one_link`` (latched, ``InertialParameters``), and in ``~/identify``'s
    ``estimate``."""

    def __init__(self, node, session: LinkSession, settings: NodeSettings, sensor_qos) -> None:
        super().__init__(node, session, settings, sensor_qos)
        self.hardware_id = settings.mode_settings.joint
        self.description = f"identifying the link of {self.hardware_id} from its torque"
        self._link = node.create_publisher(InertialParameters, "~/one_link", LATCHED)

    def _msg(self, update: Update) -> InertialParameters:
        estimate = update.estimate
        msg = theta_to_msg(
            estimate.thetas[0], estimate.link_names[0], self.hardware_id, estimate.t_last
        )
        msg.residual_rms, msg.num_samples = estimate.residual_rms, estimate.n_samples
        return msg

    def publish(self, update: Update, markers: bool = True) -> None:
        if update.ok:
            self._link.publish(self._msg(update))

    def respond(self, response, update: Update) -> None:
        response.estimate = self._msg(update)


def _truth() -> tuple[LinkModel, np.ndarray]:
    """The chain of ``JOINT`` and its true parameters: the URDF's link, 30 % heavier."""
    model = LinkModel.from_model(
        load_model(urdf_path=str(example_robot_urdf("panda"))), [JOINT], drives=NO_DRIVE
    )
    return model, 1.3 * model.prior


def _motion(t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(N, 1) positions, velocities, accelerations of a two-sine motion of the joint."""
    w = 2.0 * np.pi * np.array([0.3, 0.7])
    a = np.array([0.6, 0.25])
    q = (a * np.sin(np.outer(t, w))).sum(1)
    dq = (a * w * np.cos(np.outer(t, w))).sum(1)
    ddq = -(a * w**2 * np.sin(np.outer(t, w))).sum(1)
    return q[:, None], dq[:, None], ddq[:, None]


def test_a_mode_from_a_test_file_runs_in_the_node(launch, ros_env, rclpy_context, monkeypatch):
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import JointState

    from inertia_id_ros.srv import Identify

    here = REPO / "test"
    monkeypatch.setitem(ros_env, "PYTHONPATH", f"{here / 'ros'}:{here}")
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
        q, dq, ddq = _motion(t)
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
