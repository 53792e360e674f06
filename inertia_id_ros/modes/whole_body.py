"""The ``whole_body`` mode: every link of a floating-base (fixed, suspended) robot, from joint
states, an IMU and several F/T sensors.

Session: :class:`~inertia_id_ros.online.whole_body_session.WholeBodySession`; ROS wiring:
:class:`inertia_id_ros.ros.wiring.whole_body.WholeBodyWiring`; no ``~/excite`` (no wizard for a
floating base); ``inertia-id fit-whole-body``; replays of joint states, an IMU and F/T sensors
(a bag, or a described log) and their report (the result JSON of fit-whole-body's shape, every
update, sensors that stopped); its results (fit-whole-body's, a replay's: every link and the
sensors' offsets) predict the held-out rows (the base's and each internal sensor's wrench:
:meth:`WholeBodyMode.evaluate`); its example: ``config/go1_whole_body.yaml``, the simulated Go1.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from inertia_id_ros.errors import ConfigError, FrameNotFound, StartupError
from inertia_id_ros.modes.base import (
    Mode,
    NodeSettings,
    ParameterSpec,
    check_positive,
    ft_calibration_parameter,
    load_robot,
    read_ft_calibration_parameter,
    urdf_file,
)
from inertia_id_ros.options import (
    BASE_KINDS,
    DEFAULT_IMU_TILT,
    DEFAULT_IMU_TOPIC,
    FT_CALIBRATION_KINDS,
    IMU_TILT_USES,
    ONLINE_CALIBRATION_MIN_IMPROVEMENT,
    ONLINE_CALIBRATION_PERIOD_SEC,
    ONLINE_CALIBRATION_WINDOW_SEC,
    SENSOR_KINDS,
    WHOLE_BODY_DEFAULT_WEIGHTING,
    WHOLE_BODY_METHODS,
    WHOLE_BODY_SAMPLE_RATE_HZ,
    WHOLE_BODY_SENSOR_TIMEOUT_SEC,
)

if TYPE_CHECKING:
    from pathlib import Path

    from inertia_id_ros.modes.base import ExampleLog
    from inertia_id_ros.offline.replay import ReplayLog, ReplayReport, ReplayUpdates
    from inertia_id_ros.offline.validation import DataSource, Prediction
    from inertia_id_ros.online.whole_body_config import WholeBodyEstimate
    from inertia_id_ros.online.whole_body_session import WholeBodySession


class WholeBodyMode(Mode["WholeBodySession", "ReplayUpdates[WholeBodyEstimate]"]):
    """See the module docstring."""

    name = "whole_body"
    title = "Whole-body mode"
    summary = (
        "every link of a floating-base robot, from joint states, an IMU and several F/T sensors"
    )
    default_weighting = WHOLE_BODY_DEFAULT_WEIGHTING
    methods = WHOLE_BODY_METHODS
    wiring = "inertia_id_ros.ros.wiring.whole_body:WholeBodyWiring"
    fixed_mmap_threshold = False  # 4 MB rows and 1.4 MB matrices at every update (measurements)
    commands = ("inertia_id_ros.cli.fit_whole_body",)
    example = "config/go1_whole_body.yaml"

    parameters = (
        ParameterSpec(
            "base",
            "floating",
            "Whole-body mode: the robot's base: 'floating' (free, motion from the IMU, "
            "base rows from the contact wrenches), 'suspended' (hanging through a "
            "contact F/T sensor; base rows as floating) or 'fixed' (on a stand: no base "
            "rows, the stand's wrench is not measured). Without an IMU a suspended or "
            "fixed base is at rest and level; with one, its readings give the base's "
            "motion and tilt.",
        ),
        ParameterSpec(
            "fixed_frame",
            "",
            "Whole-body mode: with base 'fixed', the URDF frame held still. Empty means the "
            "URDF root (on a stand); e.g. 'l_sole' for a humanoid on its left foot, "
            "whose pelvis then moves with the stance leg (no IMU needed).",
        ),
        ParameterSpec(
            "fixed_tilt",
            None,
            "Whole-body mode: with base 'fixed', the fixed frame's roll and pitch in the "
            "world [roll, pitch] (rad). Unset: level.",
            array_type="double_array",
        ),
        ParameterSpec(
            "imu_topic",
            DEFAULT_IMU_TOPIC,
            "Whole-body mode: sensor_msgs/Imu input topic; its stamps are the samples. "
            "Empty: no IMU (base 'fixed' or 'suspended' only; the samples are then the "
            "first live F/T sensor's stamps, else the joint states').",
        ),
        ParameterSpec(
            "imu_frame",
            "",
            "Whole-body mode: URDF frame of the IMU, required with an imu_topic; "
            "readings must carry this frame_id.",
        ),
        ParameterSpec(
            "imu_tilt",
            DEFAULT_IMU_TILT,
            "Whole-body mode: with base 'fixed' and an imu_topic, 'correct' uses the IMU's "
            "mean specific force as the fixed frame's tilt; 'check' keeps fixed_tilt "
            "and reports the IMU's, warning past 2 deg.",
        ),
        ParameterSpec(
            "ft_frames",
            None,
            "Whole-body mode: URDF frames of the F/T sensors (a link or a fixed joint); "
            "wrenches must carry these frame_ids. Required, but on a fixed base with "
            "use_efforts (the joint torques alone).",
            array_type="string_array",
        ),
        ParameterSpec(
            "ft_topics",
            None,
            "Whole-body mode: geometry_msgs/WrenchStamped topic of each F/T sensor, in "
            "ft_frames order.",
            array_type="string_array",
        ),
        ParameterSpec(
            "ft_types",
            None,
            "Whole-body mode: kind of each F/T sensor, in ft_frames order: 'contact' "
            "(the environment's wrench on the robot at the frame) or 'internal' (the "
            "root side's wrench on the part beyond; its offset is estimated).",
            array_type="string_array",
        ),
        ParameterSpec(
            "ft_flip_wrench_sign",
            None,
            "Whole-body mode: frames (of ft_frames) whose sensors report the opposite "
            "wrench, e.g. the real iCub's child_to_parent sensors; their readings are "
            "negated.",
            array_type="string_array",
        ),
        ParameterSpec(
            "ft_estimate_offset",
            None,
            "Whole-body mode: frames (of ft_frames) whose offsets are estimated besides "
            "the internal sensors' (e.g. contact sensors that drift).",
            array_type="string_array",
        ),
        ft_calibration_parameter("ft_calibration_file", "Whole-body mode", "ft_flip_wrench_sign"),
        ParameterSpec(
            "ft_calibration_online",
            None,
            "Whole-body mode: internal F/T sensors (of ft_frames) to calibrate while "
            "identifying, against the URDF's links (calibrate-ft's in-situ calibration on "
            f"the newest {ONLINE_CALIBRATION_WINDOW_SEC:g} s of samples, refitted every "
            f"{ONLINE_CALIBRATION_PERIOD_SEC:g} s, starting from ft_calibration_file's): "
            "each refit is published on ~/ft_calibration with its standard errors and applied "
            "to the readings (the window restarts) when it predicts the newest readings "
            f"{100 * ONLINE_CALIBRATION_MIN_IMPROVEMENT:g} % better than the one in use. "
            "The URDF's links are the reference, and errors of the motion (the derivative "
            "filter, the IMU) are absorbed too: name only the sensors whose calibration you "
            "doubt. Empty: none.",
            array_type="string_array",
        ),
        ParameterSpec(
            "ft_calibration_online_kind",
            FT_CALIBRATION_KINDS[0],
            "Whole-body mode: what ft_calibration_online fits per sensor: 'full' (a 6x6 "
            "matrix and an offset) or 'gains' (one gain per axis and an offset).",
        ),
        ParameterSpec(
            "use_efforts",
            False,
            "Whole-body mode: add the joint-torque rows of the joint states' efforts.",
        ),
        ParameterSpec(
            "sensor_timeout_sec",
            WHOLE_BODY_SENSOR_TIMEOUT_SEC,
            "Whole-body mode: an F/T sensor silent this long (s) behind the IMU "
            "(without an IMU: behind the newest wrench or joint state) has stopped: "
            "reported, and the rows needing its wrench dropped; if its stamps were the "
            "samples, the next live sensor's are.",
        ),
        ParameterSpec(
            "sample_rate_hz",
            WHOLE_BODY_SAMPLE_RATE_HZ,
            "Whole-body mode: IMU stamps (without an IMU, the F/T or joint-state stamps "
            "that are the samples) become samples at most at this rate (Hz, > 0; the "
            "other IMU readings still feed the gyro's derivative): a humanoid's rows "
            "cost milliseconds per sample.",
        ),
    )

    def read_settings(self, values: Mapping[str, Any]) -> WholeBodySettings:
        """``fixed_tilt`` two finite angles (or unset), ``imu_tilt`` one of
        :data:`~inertia_id_ros.options.IMU_TILT_USES`; the other values as they are (checked
        when the mode is selected: :meth:`check_settings`)."""
        tilt = values["fixed_tilt"]
        tilt = (0.0, 0.0) if tilt is None else tuple(tilt)
        if len(tilt) != 2 or not all(isinstance(a, float) and math.isfinite(a) for a in tilt):
            raise StartupError(
                f"parameter 'fixed_tilt' must be two finite angles [roll, pitch] "
                f"(rad), got {list(tilt)!r}"
            )
        if values["imu_tilt"] not in IMU_TILT_USES:
            raise StartupError(
                f"parameter 'imu_tilt': {values['imu_tilt']!r} is not one of {list(IMU_TILT_USES)}"
            )
        return WholeBodySettings(
            base=values["base"],
            fixed_frame=values["fixed_frame"],
            fixed_tilt=tilt,
            imu_topic=values["imu_topic"],
            imu_frame=values["imu_frame"],
            imu_tilt=values["imu_tilt"],
            ft_frames=tuple(values["ft_frames"] or ()),
            ft_topics=tuple(values["ft_topics"] or ()),
            ft_types=tuple(values["ft_types"] or ()),
            ft_flip_wrench_sign=tuple(values["ft_flip_wrench_sign"] or ()),
            ft_estimate_offset=tuple(values["ft_estimate_offset"] or ()),
            ft_calibration_file=str(values["ft_calibration_file"]),
            ft_calibration_online=tuple(values["ft_calibration_online"] or ()),
            ft_calibration_online_kind=str(values["ft_calibration_online_kind"]),
            use_efforts=bool(values["use_efforts"]),
            sensor_timeout_sec=float(values["sensor_timeout_sec"]),
            sample_rate_hz=float(values["sample_rate_hz"]),
        )

    def check_settings(self, settings: NodeSettings) -> None:
        """The whole-body parameters that need no URDF; raises StartupError naming the item."""
        own: WholeBodySettings = settings.mode_settings
        if own.base not in BASE_KINDS:
            raise StartupError(f"parameter 'base': {own.base!r} is not one of {BASE_KINDS}")
        if not own.imu_topic and own.base == "floating":
            raise StartupError(
                "parameter 'imu_topic' is required with base 'floating' (empty: "
                "no IMU, for base 'fixed' or 'suspended' only)"
            )
        if own.imu_topic and not own.imu_frame:
            raise StartupError(
                f"parameter 'imu_frame' is required with an imu_topic "
                f"({own.imu_topic!r}; empty imu_topic: no IMU)"
            )
        if not own.ft_frames and not (own.base == "fixed" and own.use_efforts):
            raise StartupError(
                "parameter 'ft_frames' is required in whole_body mode (but on a "
                "fixed base with use_efforts)"
            )
        for name in ("ft_topics", "ft_types"):
            if len(getattr(own, name)) != len(own.ft_frames):
                raise StartupError(
                    f"parameter '{name}' has {len(getattr(own, name))} entries "
                    f"for the {len(own.ft_frames)} sensors of 'ft_frames' "
                    f"{list(own.ft_frames)}"
                )
        for frame, topic, kind in zip(own.ft_frames, own.ft_topics, own.ft_types):
            if kind not in SENSOR_KINDS:
                raise StartupError(
                    f"parameter 'ft_types': sensor {frame!r} has type {kind!r}, "
                    "neither 'contact' nor 'internal'"
                )
            if not topic:
                raise StartupError(f"parameter 'ft_topics': sensor {frame!r} has no topic")
        duplicates = sorted({f for f in own.ft_frames if own.ft_frames.count(f) > 1})
        if duplicates:
            raise StartupError(f"parameter 'ft_frames': {duplicates} listed twice")
        internal = [f for f, kind in zip(own.ft_frames, own.ft_types) if kind == "internal"]
        for name, frames in (
            ("ft_flip_wrench_sign", own.ft_frames),
            ("ft_estimate_offset", own.ft_frames),
            ("ft_calibration_online", internal),
        ):
            unknown = [f for f in getattr(own, name) if f not in frames]
            if unknown:
                raise StartupError(
                    f"parameter '{name}': {unknown[0]!r} is not one of the "
                    f"{'internal sensors of ' if frames is internal else ''}"
                    f"'ft_frames' {list(frames)}"
                )
        if own.ft_calibration_online_kind not in FT_CALIBRATION_KINDS:
            raise StartupError(
                f"parameter 'ft_calibration_online_kind': {own.ft_calibration_online_kind!r} "
                f"is not one of {list(FT_CALIBRATION_KINDS)}"
            )
        for name, unset in (("fixed_frame", ""), ("fixed_tilt", (0.0, 0.0))):
            if own.base != "fixed" and getattr(own, name) != unset:
                raise StartupError(f"parameter '{name}' applies to base 'fixed', not {own.base!r}")
        if own.base == "fixed" and not own.use_efforts and "internal" not in own.ft_types:
            raise StartupError(
                "parameter 'ft_types': a fixed base has rows only from internal "
                f"F/T sensors and joint efforts; no sensor is internal "
                f"({list(own.ft_types)}) and use_efforts is false"
            )
        for name in ("sensor_timeout_sec", "sample_rate_hz"):
            check_positive(name, getattr(own, name))

    def check_window(
        self, window_sec: float, max_input_rate_hz: float, window_shape: tuple[int, int]
    ) -> None:
        """Nothing to check: the whole-body window keeps normal equations, not rows."""

    def build_session(self, settings: NodeSettings) -> WholeBodySession:
        """The URDF with a free-flyer root (a fixed one for base ``fixed`` on a stand; held at
        ``fixed_frame`` if given), the sensors, the IMU frame (none without an imu_topic), the
        links' bounding ellipsoids (``bounding_ellipsoid``)."""
        from inertia_id_ros.core.whole_body_model import FTSensor, WholeBodyModel
        from inertia_id_ros.offline.volumes import ellipsoids_of, link_volumes, volumes_holding
        from inertia_id_ros.online.whole_body_session import whole_body_session

        own: WholeBodySettings = settings.mode_settings
        load_robot(settings)  # an unreadable URDF names its parameter
        sensors = [
            FTSensor(
                frame,
                kind,
                flip_wrench_sign=frame in own.ft_flip_wrench_sign,
                estimate_offset=True if frame in own.ft_estimate_offset else None,
            )
            for frame, kind in zip(own.ft_frames, own.ft_types)
        ]
        with urdf_file(settings) as urdf:  # the model needs a file
            try:
                model = WholeBodyModel.from_urdf(
                    urdf,
                    own.base,
                    sensors,
                    own.imu_frame if own.imu_topic else None,
                    fixed_frame=own.fixed_frame or None,
                    fixed_tilt=own.fixed_tilt,
                )
            except FrameNotFound as error:
                name = {own.imu_frame: "imu_frame", own.fixed_frame: "fixed_frame"}.get(
                    error.name, "ft_frames"
                )
                raise StartupError(f"parameter '{name}': {error}") from error
            except (ConfigError, ValueError) as error:
                raise StartupError(f"parameter 'urdf_path': {error}") from error
            volumes = (
                volumes_holding(
                    link_volumes(urdf, model.bodies), dict(zip(model.links, model.link_prior))
                )
                if settings.bounding_ellipsoid
                else None
            )
        from inertia_id_ros.online.ft_calibrator import OnlineCalibrationConfig

        return whole_body_session(
            model,
            window_sec=settings.window_sec,
            method=settings.method,
            solver_options=settings.solver_options,
            with_efforts=own.use_efforts,
            max_input_rate_hz=settings.max_input_rate_hz,
            sensor_timeout_sec=own.sensor_timeout_sec,
            sample_rate_hz=own.sample_rate_hz,
            weighting=settings.weighting,
            imu_tilt=own.imu_tilt,
            bounding_ellipsoids=(None if volumes is None else ellipsoids_of(volumes, model.bodies)),
            ft_calibrations=read_ft_calibration_parameter(
                "ft_calibration_file", own.ft_calibration_file, own.ft_frames
            ),
            online_calibration=(
                OnlineCalibrationConfig(
                    own.ft_calibration_online, kind=own.ft_calibration_online_kind
                )
                if own.ft_calibration_online
                else None
            ),
        )

    def replay(
        self, log: ReplayLog, session: WholeBodySession, settings: NodeSettings
    ) -> ReplayUpdates[WholeBodyEstimate]:
        """:func:`~inertia_id_ros.modes.whole_body_offline.replay_whole_body`: the joint-state,
        IMU and F/T topics; the links whose mass sits at its bound."""
        from inertia_id_ros.modes.whole_body_offline import replay_whole_body

        return replay_whole_body(log, session, settings)

    def replay_report(
        self,
        replay: ReplayUpdates[WholeBodyEstimate],
        checked: Mapping[str, Any],
        elapsed: float,
        truth: Any,
    ) -> ReplayReport:
        """:func:`~inertia_id_ros.modes.whole_body_offline.whole_body_replay_report`."""
        from inertia_id_ros.modes.whole_body_offline import whole_body_replay_report

        return whole_body_replay_report(self.name, replay, checked, elapsed)

    def write_replay_csv(self, replay: ReplayUpdates[WholeBodyEstimate], path: str | Path) -> None:
        """:func:`~inertia_id_ros.modes.whole_body_offline.write_whole_body_csv`."""
        from inertia_id_ros.modes.whole_body_offline import write_whole_body_csv

        write_whole_body_csv(replay, path)

    def recognises(self, result: Mapping[str, Any]) -> bool:
        """A fit-whole-body result: its sensors' ``sensor_offsets``."""
        return "sensor_offsets" in result

    def evaluate(
        self,
        result: Mapping[str, Any],
        held_out: DataSource,
        urdf: str | None,
        train: DataSource | None,
    ) -> dict[str, Prediction]:
        """:func:`~inertia_id_ros.modes.whole_body_offline.evaluate_whole_body`: the base's and
        each internal sensor's wrench."""
        from inertia_id_ros.modes.whole_body_offline import evaluate_whole_body

        return evaluate_whole_body(result, held_out, urdf, train)

    def example_log(self, directory: Path, seed: int = 0) -> ExampleLog:
        """The simulated Go1 (seed 0's robot, off its URDF; its base and legs moving along
        ``seed``'s motion, four foot contacts, the IMU), 5 s at 200 Hz: a bag
        (:func:`~inertia_id_ros.sim.recorders.record_whole_body`) and an NPZ of the same motion
        (:func:`~inertia_id_ros.sim.whole_body_simulator.write_recording`)."""
        from inertia_id_ros.modes.base import ExampleLog
        from inertia_id_ros.sim.recorders import record_whole_body
        from inertia_id_ros.sim.whole_body_robots import go1
        from inertia_id_ros.sim.whole_body_simulator import write_recording

        truth = go1(seed=0).true_xml
        bag, npz = directory / f"whole_body_{seed}", directory / f"whole_body_{seed}.npz"
        record_whole_body(bag, go1(seed=seed, true_xml=truth), 5.0, 200.0, seed)
        write_recording(str(npz), go1(seed=seed, true_xml=truth), 5.0, 200.0)
        return ExampleLog(str(bag), str(npz))


@dataclass(frozen=True)
class WholeBodySettings:
    """The whole-body mode's parameters (see :attr:`WholeBodyMode.parameters`, in its order)."""

    base: str
    fixed_frame: str
    fixed_tilt: tuple[float, float]
    imu_topic: str
    imu_frame: str
    imu_tilt: str
    ft_frames: tuple[str, ...]
    ft_topics: tuple[str, ...]
    ft_types: tuple[str, ...]
    ft_flip_wrench_sign: tuple[str, ...]
    ft_estimate_offset: tuple[str, ...]
    ft_calibration_file: str
    ft_calibration_online: tuple[str, ...]
    ft_calibration_online_kind: str
    use_efforts: bool
    sensor_timeout_sec: float
    sample_rate_hz: float
