"""The ``payload_torques`` mode: the body beyond a frame of an arm without an F/T sensor, from its
joint states with efforts, minus a link model (a ``fit-links`` result, or the URDF's links).

Session: :class:`~inertia_id_ros.online.payload_session.PayloadTorqueSession` (change detection on
the joints' torque residuals, a tare of the joints' torque offsets); ROS wiring:
:class:`inertia_id_ros.ros.wiring.payload_torques.PayloadTorquesWiring`; ``~/excite`` designs for
the ``payload`` target beyond the frame; ``inertia-id fit-payload-torques``; replays of joint states
with efforts (a bag, or a described log) and their report, a payload's
(:mod:`inertia_id_ros.modes.payload_replay`); its results (fit-payload-torques', a replay's: one
body and the joints' torque offsets) predict held-out joint torques
(:meth:`PayloadTorquesMode.evaluate`); its example: ``config/panda_payload_torques.yaml``, the
simulated Panda without an F/T sensor.

Its derivative filter: ``torques_filter_half_width`` (s), a zero-phase local polynomial fit of
the joint states; not chosen by cross-validation, which on torque prediction picks wide filters
that lose the payload's inertia (docs/measurements.md, "The payload's derivative filter"): keep
it narrow, as ``fit-payload-torques``' default (0.03 s, five samples and a half each side at low
rates).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inertia_id_ros.errors import (
    ConfigError,
    FrameNotFound,
    InputError,
    JointNotFound,
    StartupError,
)
from inertia_id_ros.modes.base import (
    ExcitationTarget,
    Mode,
    NodeSettings,
    ParameterSpec,
    bounding_volume_parameters,
    check_positive,
    load_robot,
    read_bounding_volume,
)
from inertia_id_ros.options import (
    LINK_FILTER_RATIO,
    METHOD_NAMES,
    PAYLOAD_CHANGE_THRESHOLD,
    PAYLOAD_DEFAULT_WEIGHTING,
    PAYLOAD_TORQUES_HALF_WIDTH,
    PAYLOAD_TORQUES_MIN_SAMPLES,
)

if TYPE_CHECKING:
    from pathlib import Path as PathType

    import numpy as np
    import pinocchio as pin

    from inertia_id_ros.chain.links import LinkModel
    from inertia_id_ros.findings import Finding
    from inertia_id_ros.formats.data import JointStates
    from inertia_id_ros.modes.base import ExampleLog
    from inertia_id_ros.modes.payload_replay import PayloadReplay
    from inertia_id_ros.offline.replay import ReplayLog, ReplayReport
    from inertia_id_ros.offline.validation import DataSource, Prediction
    from inertia_id_ros.offline.volumes import Volume
    from inertia_id_ros.online.payload_session import PayloadTorqueSession


TITLE = "Payload torques mode"


ARRAYS = ("torques_torque_constants", "torques_gear_ratios", "torques_effort_signs")


class PayloadTorquesMode(Mode["PayloadTorqueSession", "PayloadReplay"]):
    """See the module docstring."""

    name = "payload_torques"
    title = TITLE
    summary = (
        "the body beyond a frame of an arm without an F/T sensor, from joint states with "
        "efforts minus a link model"
    )
    default_weighting = PAYLOAD_DEFAULT_WEIGHTING
    methods = tuple(m for m in METHOD_NAMES if m != "cad_prior")
    """No parameter gives the payload's CAD values: every method but ``cad_prior``."""
    wiring = "inertia_id_ros.ros.wiring.payload_torques:PayloadTorquesWiring"
    fixed_mmap_threshold = False  # less CPU and less memory growth without (docs/measurements.md)
    commands = ("inertia_id_ros.cli.fit_payload_torques",)
    replay_options = ("png", "truth")
    example = "config/panda_payload_torques.yaml"

    parameters = (
        ParameterSpec(
            "torques_frame",
            "",
            f"{TITLE}: URDF frame the payload is attached to (e.g. the flange); the "
            "estimate is about and in it.",
        ),
        ParameterSpec(
            "torques_body_name", "payload", f"{TITLE}: name of the identified body in the estimate."
        ),
        ParameterSpec(
            "torques_links_result",
            "",
            f"{TITLE}: the links and drives without the payload: a fit-links result JSON "
            "(with friction and torque offsets), fitted with torques_filter_half_width "
            f"(fit-links --filter-half-width; one fitted over {LINK_FILTER_RATIO:g} "
            "times wider is warned about at start-up). Empty: the URDF's links, "
            "without friction (their errors then go into the payload).",
        ),
        ParameterSpec(
            "torques_joints",
            None,
            f"{TITLE}: the chain's joints, whose efforts are read (the robot's other "
            "joints are locked at 0). Default: the joints that move torques_frame.",
            array_type="string_array",
        ),
        ParameterSpec(
            "torques_torque_constants",
            None,
            f"{TITLE}: the efforts are motor currents (A): each joint's torque constant "
            "(N m/A at the motor), in torques_joints order. Unset: efforts are joint "
            "torques.",
            array_type="double_array",
        ),
        ParameterSpec(
            "torques_gear_ratios",
            None,
            f"{TITLE}: each joint's gear ratio (with torques_torque_constants). Unset: 1.",
            array_type="double_array",
        ),
        ParameterSpec(
            "torques_effort_signs",
            None,
            f"{TITLE}: each joint's effort sign, +1 or -1. Unset: +1.",
            array_type="double_array",
        ),
        ParameterSpec(
            "torques_estimate_offset",
            True,
            f"{TITLE}: estimate how much each joint's torque offset moved since the link "
            "model, jointly with the payload.",
        ),
        ParameterSpec(
            "torques_detect_change",
            True,
            f"{TITLE}: detect a grasp or release (CUSUM of the joint torque residuals), "
            "publish ~/payload_change and restart the window.",
        ),
        ParameterSpec(
            "torques_change_threshold",
            PAYLOAD_CHANGE_THRESHOLD,
            f"{TITLE}: CUSUM alarm level (> 0); higher = fewer false alarms, later detection.",
        ),
        ParameterSpec(
            "torques_filter_half_width",
            PAYLOAD_TORQUES_HALF_WIDTH,
            f"{TITLE}: half-width (s, > 0) of the joint states' differentiation (as the "
            "link model's fit, when it comes from one); at least "
            f"{PAYLOAD_TORQUES_MIN_SAMPLES} samples on each side (0.044 at 125 Hz).",
        ),
        *bounding_volume_parameters("torques", TITLE, "torques_frame"),
    )

    def read_settings(self, values: Mapping[str, Any]) -> PayloadTorquesSettings:
        """``torques_change_threshold`` and ``torques_filter_half_width`` > 0; the effort
        scaling's arrays finite numbers."""
        for name in ("torques_change_threshold", "torques_filter_half_width"):
            check_positive(name, values[name])
        arrays: dict[str, tuple[float, ...] | None] = {}
        for name in ARRAYS:
            given = values[name]
            arrays[name] = None if given is None else tuple(float(v) for v in given)
        return PayloadTorquesSettings(
            frame=values["torques_frame"],
            body_name=values["torques_body_name"],
            links_result=values["torques_links_result"],
            joints=tuple(values["torques_joints"] or ()),
            torque_constants=arrays["torques_torque_constants"],
            gear_ratios=arrays["torques_gear_ratios"],
            effort_signs=arrays["torques_effort_signs"],
            estimate_offset=bool(values["torques_estimate_offset"]),
            detect_change=bool(values["torques_detect_change"]),
            change_threshold=float(values["torques_change_threshold"]),
            filter_half_width=float(values["torques_filter_half_width"]),
            volume=read_bounding_volume(values, "torques"),
        )

    def check_settings(self, settings: NodeSettings) -> None:
        """The frame is required; a links result must exist (the window's memory is checked
        once the chain is known: :meth:`build_session`)."""
        own: PayloadTorquesSettings = settings.mode_settings
        if not own.frame:
            raise StartupError("parameter 'torques_frame' is required in payload_torques mode")
        if own.links_result and not Path(own.links_result).is_file():
            raise StartupError(f"parameter 'torques_links_result': no file {own.links_result!r}")

    def build_session(self, settings: NodeSettings) -> PayloadTorqueSession:
        """The chain and its link model (:func:`link_model`), the window's memory checked, the
        bounding ellipsoid (``bounding_ellipsoid``)."""
        from inertia_id_ros.online.payload_session import payload_torque_session

        own: PayloadTorquesSettings = settings.mode_settings
        links, links_x = link_model(settings)
        self.check_startup_window(settings, (links.n_joints, 10 + links.n_joints))
        try:
            return payload_torque_session(
                links,
                links_x,
                own.frame,
                window_sec=settings.window_sec,
                method=settings.method,
                solver_options=settings.solver_options,
                estimate_offset=own.estimate_offset,
                max_input_rate_hz=settings.max_input_rate_hz,
                detect_payload_change=own.detect_change,
                payload_change_threshold=own.change_threshold,
                weighting=settings.weighting,
                filter_half_width=own.filter_half_width,
                bounding_ellipsoid=(
                    own.volume.ellipsoid_matrix() if settings.bounding_ellipsoid else None
                ),
            )
        except FrameNotFound as error:
            raise StartupError(f"parameter 'torques_frame': {error}") from error
        except ValueError as error:  # a frame no joint of the chain moves
            raise StartupError(f"parameter 'torques_joints': {error}") from error

    def excitation(self, session: PayloadTorqueSession, settings: NodeSettings) -> ExcitationTarget:
        """The ``payload`` target beyond the frame, over the chain's joints."""
        links = session.estimator.links
        return ExcitationTarget(
            links.model, tuple(links.joint_names), "payload", settings.mode_settings.frame
        )

    def replay(
        self, log: ReplayLog, session: PayloadTorqueSession, settings: NodeSettings
    ) -> PayloadReplay:
        """:func:`~inertia_id_ros.modes.payload_replay.replay_payload_torques` on the
        joint-state topic, the final estimate checked against ``torques_bounding_sphere`` or
        ``torques_bounding_box``, the link model against the filter
        (:meth:`PayloadTorquesSettings.link_model_findings`)."""
        from inertia_id_ros.modes.payload_replay import replay_payload_torques

        own: PayloadTorquesSettings = settings.mode_settings
        replay = replay_payload_torques(
            log, session, settings.update_rate_hz, settings.joint_states_topic, own.volume
        )
        replay.findings = own.link_model_findings() + replay.findings
        return replay

    def replay_report(
        self, replay: PayloadReplay, checked: Mapping[str, Any], elapsed: float, truth: Any
    ) -> ReplayReport:
        """A payload's report
        (:func:`~inertia_id_ros.modes.payload_replay.payload_replay_report`)."""
        from inertia_id_ros.modes.payload_replay import payload_replay_report

        return payload_replay_report(self.name, replay, checked, truth)

    def write_replay_csv(self, replay: PayloadReplay, path: str | PathType) -> None:
        """A payload's CSV, the offsets the joints'
        (:func:`~inertia_id_ros.modes.payload_replay.write_csv`)."""
        from inertia_id_ros.modes.payload_replay import write_csv

        write_csv(replay, path)

    def plot_replay(self, replay: PayloadReplay, path: str | PathType, truth: Any) -> None:
        """A payload's PNG (:func:`~inertia_id_ros.modes.payload_replay.plot_payload_replay`)."""
        from inertia_id_ros.modes.payload_replay import plot_payload_replay

        plot_payload_replay(replay, path, truth)

    def recognises(self, result: Mapping[str, Any]) -> bool:
        """A fit-payload-torques result (``offset_changes``), or a replay's whose offsets are
        the joints' (``offset_names`` not the wrench channels)."""
        from inertia_id_ros.core.regressors import WRENCH_CHANNEL_NAMES

        names = tuple(result.get("offset_names", WRENCH_CHANNEL_NAMES))
        return "offset_changes" in result or names != WRENCH_CHANNEL_NAMES

    def evaluate(
        self,
        result: Mapping[str, Any],
        held_out: DataSource,
        urdf: str | None,
        train: DataSource | None,
    ) -> dict[str, Prediction]:
        """Joint torques (N m) of the result's chain (its joints: ``offset_names`` or
        ``offset_changes``; the others locked at their mean positions): its links and drives
        (:func:`result_link_model`) plus the payload at its frame and the torque offsets'
        changes; ``"urdf"`` the links alone (no payload, no offset change), ``"urdf_offsets"``
        with the offset changes fitted (the mean residual, on ``train`` or else the held-out
        data), ``"ols"`` the payload and offset changes refitted on ``train``. The efforts are
        taken as joint torques."""
        import numpy as np

        from inertia_id_ros.chain.payload_from_torques import PayloadTorqueModel
        from inertia_id_ros.offline.validation import Prediction, torque_data, urdf_model
        from inertia_id_ros.solvers import solve

        robot = urdf_model(urdf, "payload_torques")
        if len(result["bodies"]) != 1:
            raise InputError(f"a payload result has one body, this one {len(result['bodies'])}")
        body = result["bodies"][0]
        offsets = dict(
            result.get("offset_changes") or zip(result["offset_names"], result["sensor_offset"])
        )
        states = held_out.joint_states()
        links, links_x = result_link_model(result, robot, list(offsets), states)
        try:
            model = PayloadTorqueModel(links, str(body["frame"]))
        except ValueError as e:  # a frame no joint of the chain moves
            raise InputError(str(e)) from None

        def rows(states: JointStates) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            data = links.in_joint_order(torque_data(states))
            Y = model.regressor(data.positions, data.velocities, data.accelerations)
            return Y, model.payload_torques(links_x, data), links.measured_torques(data.efforts)

        Y, left, measured = rows(states)
        change = [float(offsets[joint]) for joint in links.joint_names]
        models = {"fit": np.concatenate([body["theta"], change]), "urdf": np.zeros(Y.shape[2])}
        Y_train, left_train = Y, left
        if train is not None:
            Y_train, left_train, _ = rows(train.joint_states())
            models["ols"] = solve(model.problem(None, _channels(Y_train, left_train)), "ols").x
        models["urdf_offsets"] = np.concatenate([np.zeros(10), left_train.mean(axis=0)])
        base = measured - left  # the links' torques
        return {
            name: Prediction(tuple(links.joint_names), states.t, measured, base + Y @ x)
            for name, x in models.items()
        }

    def example_log(self, directory: PathType, seed: int = 0) -> ExampleLog:
        """The simulated Panda without an F/T sensor, its payload at ``panda_link8``
        (:func:`~inertia_id_ros.modes.links.panda_torques_log`)."""
        from inertia_id_ros.modes.links import panda_torques_log

        return panda_torques_log(directory / f"payload_torques_{seed}", seed, with_payload=True)


def _channels(Y: np.ndarray, torques: np.ndarray) -> Any:
    """The per-joint normal equations of ``Y x = torques`` ((N, n, p), (N, n))."""
    from inertia_id_ros.core.covariance import ChannelNormalEquations

    return ChannelNormalEquations.from_samples(Y, torques)


def result_link_model(
    result: Mapping[str, Any], robot: pin.Model, joints: list[str], states: JointStates
) -> tuple[LinkModel, np.ndarray]:
    """The links and drives a payload-torques ``result`` subtracts: the fit-links result its
    ``link_model`` names (fit-payload-torques' ``"fit-links result PATH"``; :class:`InputError`
    when that file is not there), else the URDF's links (no friction; a replay's result does not
    say which its session subtracted), over ``joints`` of ``robot``, the others locked at their
    mean positions in ``states``."""
    from pathlib import Path

    from inertia_id_ros.chain.friction import JointDrive
    from inertia_id_ros.chain.links import LinkModel
    from inertia_id_ros.formats.link_result import read_link_result

    try:
        links = LinkModel.from_model(robot, joints, states.mean_positions(), JointDrive())
    except (JointNotFound, ValueError) as e:
        raise InputError(str(e)) from None
    named = str(result.get("link_model", ""))
    if not named.startswith(LINKS_RESULT_PREFIX):
        return links, links.prior
    path = named.removeprefix(LINKS_RESULT_PREFIX)
    if not Path(path).is_file():
        raise InputError(
            f"the result's link model, the fit-links result {path!r}, is not there (a relative "
            "path is read from the working directory, as fit-payload-torques took it)"
        )
    fitted = read_link_result(path, links)
    return fitted.model, fitted.x


LINKS_RESULT_PREFIX = "fit-links result "
"""How a fit-payload-torques result's ``link_model`` names the fit-links result it subtracted."""


@dataclass(frozen=True)
class PayloadTorquesSettings:
    """The payload-torques mode's parameters (see :attr:`PayloadTorquesMode.parameters`),
    validated."""

    frame: str
    body_name: str
    links_result: str
    joints: tuple[str, ...]
    torque_constants: tuple[float, ...] | None
    gear_ratios: tuple[float, ...] | None
    effort_signs: tuple[float, ...] | None
    estimate_offset: bool
    detect_change: bool
    change_threshold: float
    filter_half_width: float
    volume: Volume
    """The payload's bounding volume about the frame's origin (``torques_bounding_sphere`` or
    ``torques_bounding_box``)."""

    def link_model_findings(self) -> list[Finding]:
        """:func:`~inertia_id_ros.offline.plausibility.link_filter_findings` of
        ``torques_links_result`` against ``torques_filter_half_width``; none without a result
        (a file that cannot be read: :func:`link_model` refuses it)."""
        from inertia_id_ros.formats.export import read_result
        from inertia_id_ros.offline.plausibility import link_filter_findings

        if not self.links_result:
            return []
        try:
            result = read_result(self.links_result, ConfigError)
        except ConfigError:
            return []
        return link_filter_findings(
            result, self.links_result, self.filter_half_width, self.filter_half_width
        )


def supporting_joints(robot: pin.Model, frame: str) -> list[str]:
    """The joints of ``robot`` from its root to ``frame`` (those that move it), root first;
    :class:`FrameNotFound` for an unknown frame."""
    from inertia_id_ros.core.robots import frame_id

    joint = robot.frames[frame_id(robot, frame)].parentJoint
    return [robot.names[j] for j in robot.supports[joint] if j != 0]


def link_model(settings: NodeSettings) -> tuple[LinkModel, np.ndarray]:
    """The chain of the payload-torques mode (``torques_joints``, else the joints that move
    ``torques_frame``; each joint's efforts scaled by its torque constant, gear ratio and sign)
    and its parameters without the payload: the ``torques_links_result``'s (its drives too), or
    the URDF's links (no friction). Raises StartupError naming the parameter."""
    from inertia_id_ros.chain.actuators import effort_scales
    from inertia_id_ros.chain.friction import JointDrive
    from inertia_id_ros.chain.links import LinkModel
    from inertia_id_ros.formats.link_result import read_link_result

    own: PayloadTorquesSettings = settings.mode_settings
    robot = load_robot(settings)
    try:
        joints = list(own.joints) or supporting_joints(robot, own.frame)
    except FrameNotFound as error:
        raise StartupError(f"parameter 'torques_frame': {error}") from error
    try:
        scales = effort_scales(joints, own.torque_constants, own.gear_ratios, own.effort_signs)
    except ConfigError as error:
        raise StartupError(
            f"parameter 'torques_torque_constants' (with torques_gear_ratios, "
            f"torques_effort_signs): {error}"
        ) from error
    try:
        links = LinkModel.from_model(
            robot, joints, drives=[JointDrive(effort_scale=s) for s in scales]
        )
    except (JointNotFound, ValueError) as error:  # unknown, or not a 1-DoF joint
        raise StartupError(f"parameter 'torques_joints': {error}") from error
    if not own.links_result:
        return links, links.prior
    try:
        result = read_link_result(own.links_result, links)
    except ConfigError as error:
        raise StartupError(f"parameter 'torques_links_result': {error}") from error
    return result.model, result.x
