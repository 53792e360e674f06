"""The ``payload`` mode: the body beyond an F/T sensor, from joint states and wrenches.

Session: :class:`~inertia_id_ros.online.payload_session.PayloadSession` (change detection, tare);
ROS wiring: :class:`inertia_id_ros.ros.wiring.payload.PayloadWiring`; ``~/excite`` designs for the
``payload`` target; ``inertia-id fit-payload``; replays of joint states and wrenches (a bag, or
a described log; with a parameter file or, the node's default mode, with the command line's
flags) and their report (:mod:`inertia_id_ros.modes.payload_replay`); its results (fit-payload's,
a replay's: one body and the F/T offset) predict held-out wrenches (:meth:`PayloadMode.evaluate`);
its example: ``config/panda_payload.yaml``, the simulated Panda with an F/T sensor at its flange.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inertia_id_ros.errors import ConfigError, FrameNotFound, InputError, StartupError
from inertia_id_ros.modes.base import (
    ExcitationTarget,
    Mode,
    NodeSettings,
    ParameterSpec,
    bounding_volume_parameters,
    ft_calibration_parameter,
    load_robot,
    read_bounding_volume,
    read_ft_calibration_parameter,
)
from inertia_id_ros.options import (
    DEFAULT_WRENCH_TOPIC,
    FT_CALIBRATION_KINDS,
    ONLINE_CALIBRATION_MIN_IMPROVEMENT,
    ONLINE_CALIBRATION_PERIOD_SEC,
    ONLINE_CALIBRATION_WINDOW_SEC,
    PAYLOAD_CHANGE_THRESHOLD,
    PAYLOAD_DEFAULT_WEIGHTING,
)

if TYPE_CHECKING:
    from pathlib import Path as PathType

    import numpy as np

    from inertia_id_ros.core.kinematics import SensorKinematics
    from inertia_id_ros.formats.data import PayloadRecording
    from inertia_id_ros.modes.base import ExampleLog
    from inertia_id_ros.modes.payload_replay import PayloadReplay
    from inertia_id_ros.offline.replay import ReplayLog, ReplayReport
    from inertia_id_ros.offline.validation import DataSource, Prediction
    from inertia_id_ros.offline.volumes import Volume
    from inertia_id_ros.online.payload_session import PayloadSession

WINDOW_SHAPE = (6, 16)
"""(rows per sample, parameters) of the payload window at its largest (with the offset)."""


class PayloadMode(Mode["PayloadSession", "PayloadReplay"]):
    """See the module docstring."""

    name = "payload"
    title = "Payload mode"
    summary = "the body beyond an F/T sensor, from joint states and wrenches"
    default_weighting = PAYLOAD_DEFAULT_WEIGHTING
    wiring = "inertia_id_ros.ros.wiring.payload:PayloadWiring"
    commands = ("inertia_id_ros.cli.fit_payload",)
    replay_options = (
        "sensor_frame",
        "wrench_topic",
        "change_threshold",
        "no_offset",
        "flip_wrench_sign",
        "ft_calibration",
        "no_change_detection",
        "png",
        "truth",
    )
    example = "config/panda_payload.yaml"

    parameters = (
        ParameterSpec(
            "sensor_frame",
            "",
            "Payload mode: URDF frame of the F/T sensor; wrenches must carry this frame_id.",
        ),
        ParameterSpec(
            "body_name", "payload", "Payload mode: name of the identified body in the estimate."
        ),
        ParameterSpec(
            "wrench_topic",
            DEFAULT_WRENCH_TOPIC,
            "Payload mode: geometry_msgs/WrenchStamped input topic.",
        ),
        ParameterSpec(
            "estimate_offset",
            True,
            "Payload mode: estimate the 6-D F/T offset jointly with the inertia.",
        ),
        ParameterSpec(
            "wrench_limits",
            None,
            "Payload mode: the F/T sensor's range [fx, fy, fz, tx, ty, tz] (N, N m, > 0; "
            ".inf for no limit on a channel): a wrench reaching it on any channel is "
            "saturated and dropped (reason 'saturated'). Unset: no check.",
            array_type="double_array",
        ),
        ParameterSpec(
            "flip_wrench_sign",
            False,
            "Payload mode: set for sensors reporting the wrench the body exerts on the "
            "sensor (the opposite of the convention: the wrench the sensor exerts on the "
            "body beyond it).",
        ),
        ft_calibration_parameter("wrench_calibration_file", "Payload mode", "flip_wrench_sign"),
        ParameterSpec(
            "wrench_calibration_online_body",
            "",
            "Payload mode: a result JSON (fit-payload's layout; its body about and in the "
            "sensor frame) of a body of known inertia attached when the node starts. Until "
            "the payload changes, the sensor is calibrated against it online (calibrate-ft's "
            f"in-situ calibration on the newest {ONLINE_CALIBRATION_WINDOW_SEC:g} s, refitted "
            f"every {ONLINE_CALIBRATION_PERIOD_SEC:g} s, starting from "
            "wrench_calibration_file's): each refit is published on ~/ft_calibration with its "
            "standard errors and applied (the window restarts) when it predicts the newest "
            f"readings {100 * ONLINE_CALIBRATION_MIN_IMPROVEMENT:g} % better than the one in "
            "use; from the change on, the last one applied stays. Empty: no online calibration.",
        ),
        ParameterSpec(
            "wrench_calibration_online_kind",
            "gains",
            "Payload mode: what wrench_calibration_online_body fits: 'gains' (one gain per "
            "axis and an offset) or 'full' (a 6x6 matrix and an offset). One rigid body makes "
            "the torques follow the forces, so the cross-coupling between them is poorly "
            "determined: 'full' needs fast motion.",
        ),
        ParameterSpec(
            "detect_payload_change",
            True,
            "Payload mode: detect a grasp or release (CUSUM of the wrench residuals), "
            "publish ~/payload_change and restart the window.",
        ),
        ParameterSpec(
            "payload_change_threshold",
            PAYLOAD_CHANGE_THRESHOLD,
            "Payload mode: CUSUM alarm level (> 0); higher = fewer false alarms, later "
            "detection (see inertia_id_ros.online.change_detection).",
        ),
        ParameterSpec(
            "payload_prior",
            "",
            "Payload mode: the payload's CAD values, the prior of method cad_prior: a "
            "result JSON (path ending in .json; its body in the sensor frame), a URDF "
            "link (its inertial and everything beyond it, moved to the sensor frame), "
            "'none', or empty for the URDF's links beyond the sensor frame (none if it "
            "has none). cad_prior without a prior is refused at start-up.",
        ),
        *bounding_volume_parameters("payload", "Payload mode", "the sensor frame"),
    )

    def read_settings(self, values: Mapping[str, Any]) -> PayloadSettings:
        """``wrench_limits`` 6 floats > 0 (or unset), ``payload_change_threshold`` and
        ``payload_bounding_sphere`` > 0, ``payload_bounding_box`` 3 floats > 0 (or unset)."""
        limits = values["wrench_limits"]
        if limits is not None:
            if (
                len(limits) != 6
                or not all(isinstance(x, float) for x in limits)
                or not all(x > 0 for x in limits)
            ):
                raise StartupError(
                    f"parameter 'wrench_limits' must be 6 floats > 0 (N, N m; "
                    f".inf for none), got {list(limits)!r}"
                )
            limits = tuple(float(x) for x in limits)
        if not float(values["payload_change_threshold"]) > 0.0:
            raise StartupError(
                f"parameter 'payload_change_threshold' must be > 0, got "
                f"{values['payload_change_threshold']!r}"
            )
        return PayloadSettings(
            sensor_frame=values["sensor_frame"],
            body_name=values["body_name"],
            wrench_topic=values["wrench_topic"],
            estimate_offset=bool(values["estimate_offset"]),
            wrench_limits=limits,
            flip_wrench_sign=bool(values["flip_wrench_sign"]),
            wrench_calibration_file=str(values["wrench_calibration_file"]),
            wrench_calibration_online_body=str(values["wrench_calibration_online_body"]),
            wrench_calibration_online_kind=str(values["wrench_calibration_online_kind"]),
            detect_payload_change=bool(values["detect_payload_change"]),
            payload_change_threshold=float(values["payload_change_threshold"]),
            payload_prior=str(values["payload_prior"]),
            volume=read_bounding_volume(values, "payload"),
        )

    def check_settings(self, settings: NodeSettings) -> None:
        """The sensor frame is required; the window's memory; what can be checked of
        ``payload_prior`` without the URDF (the rest: :meth:`build_session`)."""
        from inertia_id_ros.formats.prior import NO_PRIOR
        from inertia_id_ros.online.payload_estimator import check_prior_available

        own: PayloadSettings = settings.mode_settings
        if not own.sensor_frame:
            raise StartupError("parameter 'sensor_frame' is required in payload mode")
        self.check_startup_window(settings, WINDOW_SHAPE)
        try:
            check_prior_available(settings.method, own.payload_prior != NO_PRIOR)
        except ValueError as error:
            raise StartupError(
                f"parameter 'method': {error} (payload_prior is {NO_PRIOR!r})"
            ) from error
        if own.payload_prior.endswith(".json") and not Path(own.payload_prior).is_file():
            raise StartupError(f"parameter 'payload_prior': no file {own.payload_prior!r}")

    def build_session(self, settings: NodeSettings) -> PayloadSession:
        """The sensor's kinematics, the prior (``payload_prior`` resolved), the bounding
        ellipsoid (``bounding_ellipsoid``), the session."""
        from inertia_id_ros.core.kinematics import SensorKinematics
        from inertia_id_ros.formats.prior import resolve_payload_prior
        from inertia_id_ros.online.payload_estimator import check_prior_available
        from inertia_id_ros.online.payload_session import payload_session

        own: PayloadSettings = settings.mode_settings
        try:
            kinematics = SensorKinematics(load_robot(settings), own.sensor_frame)
        except FrameNotFound as error:
            raise StartupError(f"parameter 'sensor_frame': {error}") from error
        try:
            prior = resolve_payload_prior(own.payload_prior, kinematics)
        except ConfigError as error:
            raise StartupError(f"parameter 'payload_prior': {error}") from error
        try:
            check_prior_available(settings.method, prior is not None)
        except ValueError as error:
            raise StartupError(
                f"parameter 'method': {error} (the URDF has no links with mass "
                f"beyond {own.sensor_frame!r})"
            ) from error
        return payload_session(
            kinematics,
            window_sec=settings.window_sec,
            method=settings.method,
            solver_options=settings.solver_options,
            estimate_offset=own.estimate_offset,
            flip_wrench_sign=own.flip_wrench_sign,
            wrench_limits=own.wrench_limits,
            max_input_rate_hz=settings.max_input_rate_hz,
            detect_payload_change=own.detect_payload_change,
            payload_change_threshold=own.payload_change_threshold,
            prior=None if prior is None else prior.tolist(),
            weighting=settings.weighting,
            bounding_ellipsoid=(
                own.volume.ellipsoid_matrix() if settings.bounding_ellipsoid else None
            ),
            wrench_calibration=read_ft_calibration_parameter(
                "wrench_calibration_file", own.wrench_calibration_file, [own.sensor_frame]
            ).get(own.sensor_frame),
            **_online_calibration(own),
        )

    def check_session_method(self, session: PayloadSession, method: str) -> None:
        """``cad_prior`` needs the payload's CAD values (``payload_prior``)."""
        from inertia_id_ros.online.payload_estimator import check_prior_available

        check_prior_available(method, session.prior_available)

    def excitation(self, session: PayloadSession, settings: NodeSettings) -> ExcitationTarget:
        """The ``payload`` target beyond the sensor frame, over the joints that move it."""
        kinematics = session.estimator.kinematics
        return ExcitationTarget(
            kinematics.model,
            tuple(kinematics.joint_names),
            "payload",
            settings.mode_settings.sensor_frame,
        )

    def replay(
        self, log: ReplayLog, session: PayloadSession, settings: NodeSettings
    ) -> PayloadReplay:
        """:func:`~inertia_id_ros.modes.payload_replay.replay_payload` on the joint-state and
        wrench topics, the final estimate checked against ``payload_bounding_sphere`` or
        ``payload_bounding_box``."""
        from inertia_id_ros.modes.payload_replay import replay_payload

        own: PayloadSettings = settings.mode_settings
        return replay_payload(
            log,
            session,
            settings.update_rate_hz,
            settings.joint_states_topic,
            own.wrench_topic,
            own.volume,
        )

    def replay_flags(self, log: ReplayLog, values: Mapping[str, Any]) -> PayloadReplay:
        """:func:`~inertia_id_ros.modes.payload_replay.replay_bag`: the sensor frame of
        ``sensor_frame``, else the wrenches'; the URDF of ``urdf_path``, else the bag's; no
        prior; the session's parameters (``window_sec``, ``method``, ``estimate_offset``,
        ``flip_wrench_sign``, ``wrench_calibration_file``, ``max_input_rate_hz``,
        ``detect_payload_change``, ``payload_change_threshold``)
        as given, else the node's defaults."""
        from inertia_id_ros.modes.parameters import node_parameters
        from inertia_id_ros.modes.payload_replay import replay_bag

        given = {name: value for name, value in values.items() if value is not None}
        defaults = {p.name: p.default for p in node_parameters()}
        session = (
            "window_sec",
            "method",
            "estimate_offset",
            "flip_wrench_sign",
            "wrench_calibration_file",
            "max_input_rate_hz",
            "detect_payload_change",
            "payload_change_threshold",
        )
        return replay_bag(
            log,
            given.get("sensor_frame"),
            given.get("urdf_path"),
            given.get("joint_states_topic", defaults["joint_states_topic"]),
            given.get("wrench_topic", defaults["wrench_topic"]),
            given.get("update_rate_hz", defaults["update_rate_hz"]),
            {name: given.get(name, defaults[name]) for name in session},
        )

    def replay_report(
        self, replay: PayloadReplay, checked: Mapping[str, Any], elapsed: float, truth: Any
    ) -> ReplayReport:
        """:func:`~inertia_id_ros.modes.payload_replay.payload_replay_report`."""
        from inertia_id_ros.modes.payload_replay import payload_replay_report

        return payload_replay_report(self.name, replay, checked, truth)

    def write_replay_csv(self, replay: PayloadReplay, path: str | PathType) -> None:
        """:func:`~inertia_id_ros.modes.payload_replay.write_csv`."""
        from inertia_id_ros.modes.payload_replay import write_csv

        write_csv(replay, path)

    def plot_replay(self, replay: PayloadReplay, path: str | PathType, truth: Any) -> None:
        """:func:`~inertia_id_ros.modes.payload_replay.plot_payload_replay`."""
        from inertia_id_ros.modes.payload_replay import plot_payload_replay

        plot_payload_replay(replay, path, truth)

    def recognises(self, result: Mapping[str, Any]) -> bool:
        """A result with the F/T offset, ``sensor_offset`` of the wrench channels (fit-payload,
        a replay, record-sim's truth)."""
        from inertia_id_ros.core.regressors import WRENCH_CHANNEL_NAMES

        names = result.get("offset_names", WRENCH_CHANNEL_NAMES)
        return "sensor_offset" in result and tuple(names) == WRENCH_CHANNEL_NAMES

    def evaluate(
        self,
        result: Mapping[str, Any],
        held_out: DataSource,
        urdf: str | None,
        train: DataSource | None,
    ) -> dict[str, Prediction]:
        """Wrenches (``fx fy fz`` N, ``tx ty tz`` N m) at the wrench stamps: the result's
        (``body_regressor(v, a_g) @ theta + offset``), the URDF's links beyond the sensor frame
        (no offset; with the offset fitted: the mean residual, on ``train`` or else on the
        held-out data), OLS refitted on ``train``; joint states interpolated to the stamps."""
        import numpy as np

        from inertia_id_ros.core.regressors import WRENCH_CHANNEL_NAMES
        from inertia_id_ros.offline.validation import Prediction, urdf_model
        from inertia_id_ros.solvers import Problem, solve

        robot = urdf_model(urdf, "payload")
        if len(result["bodies"]) != 1:
            raise InputError(f"a payload result has one body, this one {len(result['bodies'])}")
        body = result["bodies"][0]
        recording = held_out.payload_recording()
        kinematics = _sensor_kinematics(robot, body["frame"], recording)
        t, Y, wrench = payload_rows(kinematics, recording)
        prior = kinematics.subtree_inertia()
        models = {
            "fit": np.concatenate([body["theta"], result["sensor_offset"]]),
            "urdf": np.concatenate([prior, np.zeros(6)]),
        }
        Y_offset, w_offset = Y, wrench
        if train is not None:
            _, Y_offset, w_offset = payload_rows(kinematics, train.payload_recording())
            problem = Problem.from_regressor(Y_offset.reshape(-1, 16), w_offset.ravel(), n_bodies=1)
            models["ols"] = solve(problem, method="ols").x
        offset = np.mean(w_offset - Y_offset[:, :, :10] @ prior, axis=0)  # the constant's LSQ
        models["urdf_offsets"] = np.concatenate([prior, offset])
        return {
            name: Prediction(WRENCH_CHANNEL_NAMES, t, wrench, Y @ x) for name, x in models.items()
        }

    def example_log(self, directory: PathType, seed: int = 0) -> ExampleLog:
        """A bag of the simulated Panda with its F/T sensor at ``panda_link8`` (4 s at 250 Hz;
        :func:`~inertia_id_ros.sim.recorders.record_simulation`)."""
        from inertia_id_ros.modes.base import ExampleLog
        from inertia_id_ros.sim.recorders import record_simulation

        bag = str(directory / f"payload_{seed}")
        record_simulation(bag, 4.0, 250.0, seed)
        return ExampleLog(bag, bag)


def payload_rows(
    kinematics: SensorKinematics, recording: PayloadRecording
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(t (M,), Y (M, 6, 16), wrench (M, 6))`` at the wrench stamps of ``recording`` within
    its joint states' span, the joint states interpolated there."""
    import numpy as np

    from inertia_id_ros.core.regressors import payload_regressor_batch

    states, wrenches = recording.joint_states, recording.wrenches
    keep = (wrenches.t >= states.t[0]) & (wrenches.t <= states.t[-1])
    if not keep.any():
        raise InputError(f"{recording.source}: no wrench within the joint states' time span")
    t = wrenches.t[keep]
    order = [states.joint_names.index(name) for name in kinematics.joint_names]

    def at(values: np.ndarray) -> np.ndarray:
        return np.stack([np.interp(t, states.t, values[:, j]) for j in order], axis=1)

    assert states.dq is not None and states.ddq is not None, "differentiated by the data source"
    V, A = kinematics.compute_batch(at(states.q), at(states.dq), at(states.ddq))
    return t, payload_regressor_batch(V, A), wrenches.wrench[keep]


def _sensor_kinematics(
    robot: Any, sensor_frame: str, recording: PayloadRecording
) -> SensorKinematics:
    """The kinematics of ``sensor_frame``; :class:`InputError` for a frame not in ``robot`` or
    joints moving it that the recording lacks."""
    from inertia_id_ros.core.kinematics import SensorKinematics

    try:
        kinematics = SensorKinematics(robot, sensor_frame)
    except ValueError as e:
        raise InputError(str(e)) from None
    missing = [j for j in kinematics.joint_names if j not in recording.joint_states.joint_names]
    if missing:
        raise InputError(f"the data lack joints {missing} that move {sensor_frame!r}")
    return kinematics


@dataclass(frozen=True)
class PayloadSettings:
    """The payload mode's parameters (see :attr:`PayloadMode.parameters`), validated."""

    sensor_frame: str
    body_name: str
    wrench_topic: str
    estimate_offset: bool
    wrench_limits: tuple[float, ...] | None
    flip_wrench_sign: bool
    wrench_calibration_file: str
    wrench_calibration_online_body: str
    wrench_calibration_online_kind: str
    detect_payload_change: bool
    payload_change_threshold: float
    payload_prior: str
    volume: Volume
    """The payload's bounding volume about the sensor frame's origin (``payload_bounding_sphere``
    or ``payload_bounding_box``)."""


def _online_calibration(own: PayloadSettings) -> dict[str, Any]:
    """The session's ``online_calibration`` and ``calibration_body`` of
    ``wrench_calibration_online_body`` and ``_kind`` (none when empty); :class:`StartupError`
    naming the parameter of a file that cannot be read or whose body is in another frame."""
    from inertia_id_ros.errors import ExportError
    from inertia_id_ros.formats.export import read_known_body
    from inertia_id_ros.online.ft_calibrator import OnlineCalibrationConfig

    path = own.wrench_calibration_online_body
    if not path:
        return {}
    if own.wrench_calibration_online_kind not in FT_CALIBRATION_KINDS:
        raise StartupError(
            f"parameter 'wrench_calibration_online_kind': "
            f"{own.wrench_calibration_online_kind!r} is not one of {list(FT_CALIBRATION_KINDS)}"
        )
    try:
        theta = tuple(read_known_body(path, own.sensor_frame).tolist())
    except ExportError as error:
        raise StartupError(f"parameter 'wrench_calibration_online_body': {error}") from None
    config = OnlineCalibrationConfig((own.sensor_frame,), kind=own.wrench_calibration_online_kind)
    return {"online_calibration": config, "calibration_body": theta}
