"""The ``payload_torques`` mode: the body beyond a frame of an arm without an F/T sensor, from its
joint states with efforts, minus a link model (a ``fit-links`` result, or the URDF's links).

Session: :class:`~inertia_id_ros.online.payload_session.PayloadTorqueSession` (change detection on
the joints' torque residuals, a tare of the joints' torque offsets); ROS wiring:
:class:`inertia_id_ros.ros.wiring.payload_torques.PayloadTorquesWiring`; ``~/excite`` designs for
the ``payload`` target beyond the frame; ``inertia-id fit-payload-torques``; replays of joint states
with efforts (a bag, or a described log).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inertia_id_ros.errors import ConfigError, FrameNotFound, JointNotFound, StartupError
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
    import numpy as np
    import pinocchio as pin

    from inertia_id_ros.chain.links import LinkModel
    from inertia_id_ros.findings import Finding
    from inertia_id_ros.offline.plausibility import Volume
    from inertia_id_ros.offline.replay import ReplayLog
    from inertia_id_ros.online.payload_session import PayloadTorqueSession


TITLE = "Payload torques mode"


ARRAYS = ("torques_torque_constants", "torques_gear_ratios", "torques_effort_signs")


class PayloadTorquesMode(Mode):
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
    commands = ("inertia_id_ros.cli.fit_payload_torques",)
    replay_options = ("png", "truth")

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

    def replay(self, log: ReplayLog, session: PayloadTorqueSession, settings: NodeSettings) -> Any:
        """:func:`~inertia_id_ros.offline.replay.replay_payload_torques` on the joint-state topic,
        the final estimate checked against ``torques_bounding_sphere`` or ``torques_bounding_box``,
        the link model against the filter (:meth:`PayloadTorquesSettings.link_model_findings`)."""
        from inertia_id_ros.offline.replay import replay_payload_torques

        own: PayloadTorquesSettings = settings.mode_settings
        replay = replay_payload_torques(
            log, session, settings.update_rate_hz, settings.joint_states_topic, own.volume
        )
        replay.findings = own.link_model_findings() + replay.findings
        return replay


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
