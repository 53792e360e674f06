"""A mode from outside the package, in this module alone (no rclpy): ``OneJointMode`` identifies
the link one joint moves (the Panda's ``panda_joint2``, the others locked) from that joint's
torque. It has everything a mode has, none of it known to the package: its parameter
(``one_joint``), settings, its own session (:class:`OneJointSession`), its replay with its own
report (the result JSON of its own kind, ``"mode": "helpers.toy_mode:OneJointMode"``, its
summary, its CSV), its results' evaluation on held-out data (the joint's torque), its example
(``test/helpers/toy_mode.yaml`` and :meth:`OneJointMode.example_log`). Its ROS wiring is
``helpers.toy_mode_wiring:OneJointIO``. The node, ``inertia-id replay`` and ``inertia-id
validate`` load it from its import path, :data:`MODE`, with ``test/`` on ``PYTHONPATH``.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from inertia_id_ros.chain.friction import JointDrive
from inertia_id_ros.chain.link_fit import fit_links
from inertia_id_ros.chain.links import LinkModel
from inertia_id_ros.core.robots import example_robot_urdf, load_model
from inertia_id_ros.errors import JointNotFound, StartupError
from inertia_id_ros.formats.bag_writer import BagWriter
from inertia_id_ros.formats.data import ROBOT_DESCRIPTION_TOPIC
from inertia_id_ros.formats.export import body_json
from inertia_id_ros.modes import ExampleLog, Mode, NodeSettings, ParameterSpec
from inertia_id_ros.modes.base import load_robot
from inertia_id_ros.offline.replay import (
    ReplayInputs,
    ReplayReport,
    ReplayUpdates,
    json_ready,
    replay_log,
)
from inertia_id_ros.offline.validation import DataSource, Prediction, torque_data, urdf_model
from inertia_id_ros.online.estimator import window_capacities
from inertia_id_ros.online.link_estimator import LinkEstimate, LinkEstimator, LinkEstimatorConfig
from inertia_id_ros.online.session import Session

MODE = "helpers.toy_mode:OneJointMode"
"""The mode's import path: the node's ``mode`` parameter, and its results' ``"mode"``."""
JOINT = "panda_joint2"
NO_DRIVE = JointDrive(viscous=False, coulomb=False, offset=False, armature=False)
RATE_HZ, NOISE = 200.0, 0.05
"""The example's joint-state rate (Hz) and torque noise (N m)."""
KIND = "one_joint_link"
"""The key an older result of this mode has (:meth:`OneJointMode.recognises`)."""


@dataclass(frozen=True)
class OneJointSettings:
    joint: str


class OneJointSession(Session[LinkEstimator, LinkEstimate]):
    """The link of one joint: its own summary and diagnostics (the link's mass)."""

    def _summary(self, estimate: LinkEstimate) -> str:
        return (
            f"{estimate.link_names[0]}: {estimate.thetas[0, 0]:.3f} kg from "
            f"{estimate.n_samples} joint states"
        )

    def _estimate_diagnostics(self, estimate: LinkEstimate) -> tuple[dict[str, str], str]:
        return {"link_mass": f"{estimate.thetas[0, 0]:.4f}"}, ""


class OneJointMode(Mode[OneJointSession, ReplayUpdates[LinkEstimate]]):
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
    wiring = "helpers.toy_mode_wiring:OneJointIO"
    example = "test/helpers/toy_mode.yaml"

    def read_settings(self, values: Mapping[str, Any]) -> OneJointSettings:
        return OneJointSettings(values["one_joint"])

    def check_settings(self, settings: NodeSettings) -> None:
        if not settings.mode_settings.joint:
            raise StartupError("parameter 'one_joint' is required in one_joint mode")

    def build_session(self, settings: NodeSettings) -> OneJointSession:
        config = LinkEstimatorConfig(
            window_sec=settings.window_sec,
            method=settings.method,
            solver_options=dict(settings.solver_options),
            weighting=settings.weighting,
            **window_capacities(settings.window_sec, settings.max_input_rate_hz),
        )
        model = chain(load_robot(settings), settings.mode_settings.joint)
        return OneJointSession(LinkEstimator(model, config), settings.max_input_rate_hz)

    def replay(
        self, log: Any, session: OneJointSession, settings: NodeSettings
    ) -> ReplayUpdates[LinkEstimate]:
        inputs = ReplayInputs(settings.joint_states_topic)
        model = session.estimator.link_model.model
        return ReplayUpdates(
            **replay_log(session, log, settings.update_rate_hz, inputs, model), session=session
        )

    def replay_report(
        self,
        replay: ReplayUpdates[LinkEstimate],
        checked: Mapping[str, Any],
        elapsed: float,
        truth: Any,
    ) -> ReplayReport:
        final = replay.final
        assert final is not None
        document = {
            "mode": MODE,
            KIND: final.link_names[0],
            "joint": replay.session.estimator.link_model.joint_names[0],
            "bodies": [body_json(final.link_names[0], final.link_names[0], final.thetas[0])],
            **checked,
            "residual_rms": final.residual_rms,
            "updates": [
                {"time": u.time, "status": u.status, "mass": json_ready(_mass(u))}
                for u in replay.updates
            ],
        }
        summary = (
            f"one_joint replay: {len(replay.updates)} updates of {replay.source}",
            f"{final.link_names[0]}: mass {final.thetas[0, 0]:.3f} kg, torque rms "
            f"{final.residual_rms:.3g} N m",
        )
        return ReplayReport(document, summary)

    def write_replay_csv(self, replay: ReplayUpdates[LinkEstimate], path: str | Path) -> None:
        with open(path, "w", newline="") as stream:
            writer = csv.writer(stream)
            writer.writerow(("time", "status", "mass"))
            writer.writerows((u.time, u.status, _mass(u)) for u in replay.updates)

    def recognises(self, result: Mapping[str, Any]) -> bool:
        return KIND in result

    def evaluate(
        self,
        result: Mapping[str, Any],
        held_out: DataSource,
        urdf: str | None,
        train: DataSource | None,
    ) -> dict[str, Prediction]:
        """The joint's torque: the result's link, the URDF's, OLS refitted on ``train``."""
        model = chain(urdf_model(urdf, "one_joint"), str(result["joint"]))
        states = held_out.joint_states()
        data = model.in_joint_order(torque_data(states))
        regressor = model.joint_torque_regressor(
            data.positions, data.velocities, data.accelerations
        )
        theta = np.asarray(result["bodies"][0]["theta"], dtype=float)
        models = {"fit": theta, "urdf": model.prior}
        if train is not None:
            models["ols"] = fit_links(model, torque_data(train.joint_states()), method="ols").x
        return {
            name: Prediction(model.joint_names, states.t, data.efforts, regressor @ x)
            for name, x in models.items()
        }

    def example_log(self, directory: Path, seed: int = 0) -> ExampleLog:
        """4 s of ``panda_joint2`` moving (two sines), its link 30 % heavier than the URDF's,
        its torque with noise, in a bag with the URDF."""
        urdf = Path(example_robot_urdf("panda"))
        model = chain(load_model(urdf_path=str(urdf)), JOINT)
        t = np.arange(int(4.0 * RATE_HZ)) / RATE_HZ
        q, dq, ddq = motion(t, seed)
        rng = np.random.default_rng(seed)
        tau = model.joint_torque_regressor(q, dq, ddq) @ (1.3 * model.prior)
        effort = tau + rng.normal(0.0, NOISE, tau.shape)
        bag = directory / f"one_joint_{seed}"
        start = 100.0
        with BagWriter(bag, "mcap") as writer:
            writer.write(ROBOT_DESCRIPTION_TOPIC, writer.string(urdf.read_text()), start, 0.0)
            for k, stamp in enumerate(start + t):
                message = writer.joint_state(stamp, [JOINT], q[k], dq[k], effort[k])
                writer.write("/joint_states", message, stamp)
        return ExampleLog(str(bag), str(bag))


def chain(robot: Any, joint: str) -> LinkModel:
    """The one-link chain of ``joint`` (no drive terms); StartupError naming ``one_joint``."""
    try:
        return LinkModel.from_model(robot, [joint], drives=NO_DRIVE)
    except JointNotFound as error:
        raise StartupError(f"parameter 'one_joint': {error}") from error


def motion(t: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(N, 1) positions, velocities, accelerations of a two-sine motion of the joint (phases
    from ``seed``)."""
    w = 2.0 * np.pi * np.array([0.3, 0.7])
    a = np.array([0.6, 0.25])
    phase = np.random.default_rng(seed + 100).uniform(0.0, 2.0 * np.pi, 2) if seed else 0.0
    angle = np.outer(t, w) + phase
    q = (a * np.sin(angle)).sum(1)
    dq = (a * w * np.cos(angle)).sum(1)
    ddq = -(a * w**2 * np.sin(angle)).sum(1)
    return q[:, None], dq[:, None], ddq[:, None]


def _mass(update: Any) -> float:
    """The link's mass of an update (kg; NaN without an estimate)."""
    return float("nan") if update.estimate is None else float(update.estimate.thetas[0, 0])
