"""The node's parameters: the table, their validation, and the session they build (no rclpy).

- :data:`PARAMETERS`: every parameter with its default (or type, when it has none), its
  description, and whether it may change at run time; the node declares them from this table.
- :func:`settings_from_parameters`: the values read at start-up -> validated
  :class:`NodeSettings`, or :class:`~inertia_id_ros.errors.StartupError` naming the parameter.
- :func:`build_session`: :class:`NodeSettings` -> the mode's
  :class:`~inertia_id_ros.online.session.Session` (robot model, estimator, change detector).
- :func:`validate_change`: a run-time change (all of one set-parameters call) -> the settings it
  would give, or ValueError with the reason (the node's on-set callback: validation only).
- :func:`parameters_from_file`: the node's values in a ROS 2 parameter file (``--params-file``),
  for running the node's session without the node (``inertia-id replay --params-file``).
"""

from __future__ import annotations

import dataclasses
import math
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from inertia_id_ros.chain.actuators import ActuatorConfig, ChainConfig
from inertia_id_ros.chain.friction import DRIVE_TERMS
from inertia_id_ros.chain.links import DEFAULT_PRIOR_WEIGHT, LinkModel
from inertia_id_ros.chain.whole_body_fit import DEFAULT_WEIGHTING as WHOLE_BODY_WEIGHTING
from inertia_id_ros.chain.whole_body_fit import WHOLE_BODY_METHODS
from inertia_id_ros.core.kinematics import SensorKinematics
from inertia_id_ros.core.robots import load_model
from inertia_id_ros.core.weighting import WEIGHTINGS
from inertia_id_ros.core.whole_body import BASE_KINDS, SENSOR_KINDS, FTSensor, WholeBodyModel
from inertia_id_ros.errors import (
    ConfigError,
    FrameNotFound,
    JointNotFound,
    ProblemError,
    StartupError,
)
from inertia_id_ros.io.prior import NO_PRIOR, resolve_payload_prior
from inertia_id_ros.motion.design import DEFAULT_MAX_ACCELERATION
from inertia_id_ros.motion.run import RunConfig
from inertia_id_ros.online.estimator import window_capacities
from inertia_id_ros.online.payload_estimator import check_prior_available
from inertia_id_ros.online.session import Session, link_session, payload_session, whole_body_session
from inertia_id_ros.solvers import METHODS, check_options

MODES = ("payload", "links", "whole_body")
"""What the node identifies (parameter ``mode``)."""

MAX_UPDATE_RATE_HZ = 100.0
"""Highest ``update_rate_hz``: a faster periodic solve would starve the input callbacks."""

MAX_WINDOW_MEMORY_BYTES = 2 * 1024**3
"""Largest memory the window may take (window_sec x max_input_rate_hz samples, preallocated
twice): a window_sec or max_input_rate_hz beyond it is refused."""


@dataclass(frozen=True)
class ParameterSpec:
    """One node parameter: ``default`` value, or, for a parameter without one, its type name
    (``"double_array"``, ``"string_array"``) in ``array_type``; ``runtime``: may change while the
    node runs."""

    name: str
    default: Any
    description: str
    runtime: bool = False
    array_type: str = ""


PARAMETERS: tuple[ParameterSpec, ...] = (
    ParameterSpec("mode", "payload",
                  "What to identify: 'payload' (the body beyond an F/T sensor, from joint states "
                  "and wrenches), 'links' (a chain's links and joint drives, from joint states "
                  "with efforts) or 'whole_body' (every link of a floating-base robot, from joint "
                  "states, an IMU and several F/T sensors)."),
    ParameterSpec("urdf_path", "", "Path of the robot's URDF (or give robot_description; in "
                                   "links mode chain_config may give it)."),
    ParameterSpec("robot_description", "",
                  "The robot's URDF as a string (used when urdf_path is empty)."),
    ParameterSpec("joint_states_topic", "/joint_states", "sensor_msgs/JointState input topic."),
    ParameterSpec("window_sec", 10.0, "Length of the sliding window of samples (s), > 0; run-time "
                                      "changes keep the newest samples that fit.", runtime=True),
    ParameterSpec("update_rate_hz", 2.0, "Rate of the periodic consistent solve and publication "
                                         "(Hz), > 0 and <= 100.", runtime=True),
    ParameterSpec("method", "lmi", "Identification method: " + ", ".join(sorted(METHODS))
                  + " (whole_body: " + ", ".join(WHOLE_BODY_METHODS) + ").", runtime=True),
    ParameterSpec("solver_options", "",
                  "Options of the method's solver as a YAML/JSON mapping, e.g. '{tol: 1.0e-8}' or "
                  "'{backend: cvxpy, solver: CLARABEL}' for lmi (inertia_id_ros.solvers: the "
                  "keyword arguments of solve_<method>); empty = the method's defaults.",
                  runtime=True),
    ParameterSpec("max_input_rate_hz", 1000.0,
                  "Highest expected rate of each input (Hz); sizes the window's buffers "
                  "(window_sec x this rate samples)."),
    ParameterSpec("qos_depth", 2000,
                  "Depth of the best-effort (sensor-data) input queues; deep enough to ride out "
                  "solves at 1 kHz."),
    ParameterSpec("warning_period_sec", 5.0,
                  "Minimum time between two warnings of the same kind (s)."),
    ParameterSpec("weighting", "",
                  "'none': unweighted least squares; 'channel': each wrench component (payload), "
                  "joint torque (links), or the base's and each F/T sensor's force rows and "
                  "torque rows and each joint torque (whole_body) weighted by its inverse "
                  "residual variance over the window, iterated at every solve; the covariance "
                  "(whole_body: the identifiability) follows the weights. Empty: the mode's "
                  f"default (payload: channel, links: none, whole_body: {WHOLE_BODY_WEIGHTING})."),
    # payload mode
    ParameterSpec("sensor_frame", "", "Payload mode: URDF frame of the F/T sensor; wrenches must "
                                      "carry this frame_id."),
    ParameterSpec("body_name", "payload",
                  "Payload mode: name of the identified body in the estimate."),
    ParameterSpec("wrench_topic", "/ft_sensor/wrench",
                  "Payload mode: geometry_msgs/WrenchStamped input topic."),
    ParameterSpec("estimate_offset", True,
                  "Payload mode: estimate the 6-D F/T offset jointly with the inertia."),
    ParameterSpec("wrench_limits", None,
                  "Payload mode: the F/T sensor's range [fx, fy, fz, tx, ty, tz] (N, N m, > 0; "
                  ".inf for no limit on a channel): a wrench reaching it on any channel is "
                  "saturated and dropped (reason 'saturated'). Unset: no check.",
                  array_type="double_array"),
    ParameterSpec("flip_wrench_sign", False,
                  "Payload mode: set for sensors reporting the wrench the body exerts on the "
                  "sensor (the opposite of the convention: the wrench the sensor exerts on the "
                  "body beyond it)."),
    ParameterSpec("detect_payload_change", True,
                  "Payload mode: detect a grasp or release (CUSUM of the wrench residuals), "
                  "publish ~/payload_change and restart the window."),
    ParameterSpec("payload_change_threshold", 50.0,
                  "Payload mode: CUSUM alarm level (> 0); higher = fewer false alarms, later "
                  "detection (see inertia_id_ros.online.change_detection)."),
    ParameterSpec("payload_prior", "",
                  "Payload mode: the payload's CAD values, the prior of method cad_prior: a "
                  "result JSON (path ending in .json; its body in the sensor frame), a URDF link "
                  "(its inertial and everything beyond it, moved to the sensor frame), 'none', "
                  "or empty for the URDF's links beyond the sensor frame (none if it has "
                  "none). cad_prior without a prior is refused at start-up."),
    # links mode
    ParameterSpec("joints", None,
                  "Links mode: the chain's joints (each moves one link to identify; the robot's "
                  "other joints are locked). Default: chain_config's joints; required without "
                  "it.", array_type="string_array"),
    ParameterSpec("chain_config", "",
                  "Links mode: path (absolute, or relative to the working directory) of a chain "
                  "configuration YAML (inertia_id_ros.chain.actuators.ChainConfig, e.g. "
                  "config/go1_front_left_leg.yaml): the URDF unless urdf_path/robot_description "
                  "is given, the joints unless 'joints' is, locked positions, the drive terms to "
                  "estimate, gear ratios, rotor inertias (armature priors) and effort scaling "
                  "(torque constants)."),
    ParameterSpec("prior_weight", DEFAULT_PRIOR_WEIGHT,
                  "Links mode: weight of the prior toward the URDF per torque sample ((N m)^2 per "
                  "SI unit^2), >= 0; small (1e-6) for clean, exciting data, larger for noisy or "
                  "short data."),
    ParameterSpec("coulomb_velocity", 0.0,
                  "Links mode: width of the smooth Coulomb sign tanh(dq / v) (rad/s), >= 0, 0 = "
                  "exact sign, for joints that chain_config does not configure."),
    # whole_body mode
    ParameterSpec("base", "floating",
                  "Whole-body mode: the robot's base: 'floating' (free, motion from the IMU, base "
                  "rows from the contact wrenches), 'suspended' (hanging through a contact F/T "
                  "sensor; base rows as floating) or 'fixed' (on a stand: no base rows, the "
                  "stand's wrench is not measured). Without an IMU a suspended or fixed base is "
                  "at rest and level; with one, its readings give the base's motion and tilt."),
    ParameterSpec("imu_topic", "/imu",
                  "Whole-body mode: sensor_msgs/Imu input topic; its stamps are the samples. "
                  "Empty: no IMU (base 'fixed' or 'suspended' only; the samples are then the "
                  "first live F/T sensor's stamps, else the joint states')."),
    ParameterSpec("imu_frame", "",
                  "Whole-body mode: URDF frame of the IMU, required with an imu_topic; readings "
                  "must carry this frame_id."),
    ParameterSpec("ft_frames", None,
                  "Whole-body mode: URDF frames of the F/T sensors (a link or a fixed joint); "
                  "wrenches must carry these frame_ids. Required, but on a fixed base with "
                  "use_efforts (the joint torques alone).", array_type="string_array"),
    ParameterSpec("ft_topics", None,
                  "Whole-body mode: geometry_msgs/WrenchStamped topic of each F/T sensor, in "
                  "ft_frames order.", array_type="string_array"),
    ParameterSpec("ft_types", None,
                  "Whole-body mode: kind of each F/T sensor, in ft_frames order: 'contact' (the "
                  "environment's wrench on the robot at the frame) or 'internal' (the root side's "
                  "wrench on the part beyond; its offset is estimated).",
                  array_type="string_array"),
    ParameterSpec("ft_flip_wrench_sign", None,
                  "Whole-body mode: frames (of ft_frames) whose sensors report the opposite "
                  "wrench, e.g. the real iCub's child_to_parent sensors; their readings are "
                  "negated.", array_type="string_array"),
    ParameterSpec("use_efforts", False,
                  "Whole-body mode: add the joint-torque rows of the joint states' efforts."),
    ParameterSpec("sensor_timeout_sec", 0.5,
                  "Whole-body mode: an F/T sensor silent this long (s) behind the IMU (without "
                  "an IMU: behind the newest wrench or joint state) has stopped: reported, and "
                  "the rows needing its wrench dropped; if its stamps were the samples, the next "
                  "live sensor's are."),
    ParameterSpec("sample_rate_hz", 50.0,
                  "Whole-body mode: IMU stamps (without an IMU, the F/T or joint-state stamps "
                  "that are the samples) become samples at most at this rate (Hz, > 0; the other "
                  "IMU readings still feed the gyro's derivative): a humanoid's rows cost "
                  "milliseconds per sample."),
    # ~/excite
    ParameterSpec("trajectory_topic", "/joint_trajectory_controller/joint_trajectory",
                  "~/excite: trajectory_msgs/JointTrajectory output topic (the trajectory "
                  "controller's command topic)."),
    ParameterSpec("excite_max_start_distance", RunConfig.max_start_distance,
                  "~/excite: largest distance of any joint from the motion's start pose (rad, "
                  "m), > 0; further away, the excitation is refused (move the robot there first)."),
    ParameterSpec("excite_ramp_velocity", RunConfig.ramp_velocity,
                  "~/excite: peak joint speed of the ramps in and out (rad/s, m/s), > 0."),
    ParameterSpec("excite_joint_state_timeout", RunConfig.joint_state_timeout,
                  "~/excite: joint states older than this are stale (s), > 0: an excitation is "
                  "refused, or stopped (holding the last measured pose)."),
    ParameterSpec("excite_max_tracking_error", RunConfig.max_tracking_error,
                  "~/excite: largest distance of a measured joint from the command (rad, m), > 0; "
                  "beyond, the excitation stops and holds."),
    ParameterSpec("excite_max_acceleration", DEFAULT_MAX_ACCELERATION,
                  "~/excite: joint acceleration limit of motions designed on the spot "
                  "(rad/s^2, m/s^2), > 0."),
)

EXCITE_PARAMETERS = {f"excite_{field}": field for field in (
    "max_start_distance", "ramp_velocity", "joint_state_timeout", "max_tracking_error")}
"""The parameters of :class:`~inertia_id_ros.motion.run.RunConfig` -> its fields."""

RUNTIME_PARAMETERS = tuple(p.name for p in PARAMETERS if p.runtime)
"""Parameters that may change while the node runs (the others are read-only)."""

MODE_WEIGHTINGS = {"payload": "channel", "links": "none", "whole_body": WHOLE_BODY_WEIGHTING}
"""The default weighting of each mode (parameter ``weighting`` empty): the estimators' defaults
(:class:`~inertia_id_ros.online.payload_estimator.EstimatorConfig`,
:data:`inertia_id_ros.chain.identify.DEFAULT_WEIGHTING`,
:data:`inertia_id_ros.chain.whole_body_fit.DEFAULT_WEIGHTING`)."""


@dataclass(frozen=True)
class NodeSettings:
    """The node's validated parameters (SI units; see :data:`PARAMETERS` for each)."""

    mode: str
    urdf_path: str
    robot_description: str
    joint_states_topic: str
    window_sec: float
    update_rate_hz: float
    method: str
    solver_options: dict[str, Any]
    max_input_rate_hz: float
    qos_depth: int
    warning_period_sec: float
    weighting: str
    sensor_frame: str
    body_name: str
    wrench_topic: str
    estimate_offset: bool
    wrench_limits: tuple[float, ...] | None
    flip_wrench_sign: bool
    detect_payload_change: bool
    payload_change_threshold: float
    payload_prior: str
    joints: tuple[str, ...]
    chain_config: str
    prior_weight: float
    coulomb_velocity: float
    trajectory_topic: str
    excitation: RunConfig
    """The ``excite_*`` parameters but ``excite_max_acceleration``."""
    excite_max_acceleration: float
    base: str = "floating"
    imu_topic: str = "/imu"
    imu_frame: str = ""
    ft_frames: tuple[str, ...] = ()
    ft_topics: tuple[str, ...] = ()
    ft_types: tuple[str, ...] = ()
    ft_flip_wrench_sign: tuple[str, ...] = ()
    use_efforts: bool = False
    sensor_timeout_sec: float = 0.5
    sample_rate_hz: float = 50.0


def settings_from_parameters(values: Mapping[str, Any]) -> NodeSettings:
    """Validated settings from the parameters' values (name -> value; missing names take the
    table's default; an array parameter not set is ``None``). Raises
    :class:`~inertia_id_ros.errors.StartupError` naming the first invalid parameter."""
    unknown = sorted(set(values) - {p.name for p in PARAMETERS})
    if unknown:
        raise StartupError(f"parameter {unknown[0]!r} is not a parameter of the node")
    v = {p.name: values.get(p.name, p.default) for p in PARAMETERS}
    for name in ("window_sec", "update_rate_hz", "warning_period_sec", "max_input_rate_hz",
                 *EXCITE_PARAMETERS, "excite_max_acceleration"):
        if not _positive(v[name]):
            raise StartupError(f"parameter '{name}' must be > 0, got {v[name]!r}")
    if float(v["update_rate_hz"]) > MAX_UPDATE_RATE_HZ:
        raise StartupError(f"parameter 'update_rate_hz' must be <= {MAX_UPDATE_RATE_HZ:g} Hz, "
                           f"got {v['update_rate_hz']!r}")
    if int(v["qos_depth"]) < 1:
        raise StartupError(f"parameter 'qos_depth' must be >= 1, got {v['qos_depth']!r}")
    if v["mode"] not in MODES:
        raise StartupError(f"parameter 'mode': unknown mode {v['mode']!r}; choose one of "
                           f"{list(MODES)}")
    v["weighting"] = v["weighting"] or MODE_WEIGHTINGS[v["mode"]]
    if v["weighting"] not in WEIGHTINGS:
        raise StartupError(f"parameter 'weighting': unknown weighting {v['weighting']!r}; choose "
                           f"one of {list(WEIGHTINGS)}")
    if v["method"] not in METHODS:
        raise StartupError(f"parameter 'method': unknown method {v['method']!r}; choose one of "
                           f"{sorted(METHODS)}")
    try:
        options = solver_options(v["method"], v["solver_options"])
    except ValueError as error:
        raise StartupError(f"parameter 'solver_options': {error}") from error
    limits = v["wrench_limits"]
    if limits is not None:
        if (len(limits) != 6 or not all(isinstance(x, float) for x in limits)
                or not all(x > 0 for x in limits)):
            raise StartupError(f"parameter 'wrench_limits' must be 6 floats > 0 (N, N m; .inf "
                               f"for none), got {list(limits)!r}")
        limits = tuple(float(x) for x in limits)
    if not float(v["payload_change_threshold"]) > 0.0:
        raise StartupError(f"parameter 'payload_change_threshold' must be > 0, got "
                           f"{v['payload_change_threshold']!r}")
    for name in ("prior_weight", "coulomb_velocity"):
        if not float(v[name]) >= 0.0:
            raise StartupError(f"parameter '{name}' must be >= 0, got {v[name]!r}")
    settings = NodeSettings(
        mode=v["mode"], urdf_path=v["urdf_path"], robot_description=v["robot_description"],
        joint_states_topic=v["joint_states_topic"], window_sec=float(v["window_sec"]),
        update_rate_hz=float(v["update_rate_hz"]), method=v["method"], solver_options=options,
        max_input_rate_hz=float(v["max_input_rate_hz"]), qos_depth=int(v["qos_depth"]),
        warning_period_sec=float(v["warning_period_sec"]), weighting=v["weighting"],
        sensor_frame=v["sensor_frame"],
        body_name=v["body_name"], wrench_topic=v["wrench_topic"],
        estimate_offset=bool(v["estimate_offset"]), wrench_limits=limits,
        flip_wrench_sign=bool(v["flip_wrench_sign"]),
        detect_payload_change=bool(v["detect_payload_change"]),
        payload_change_threshold=float(v["payload_change_threshold"]),
        payload_prior=str(v["payload_prior"]),
        joints=tuple(v["joints"] or ()), chain_config=v["chain_config"],
        prior_weight=float(v["prior_weight"]), coulomb_velocity=float(v["coulomb_velocity"]),
        trajectory_topic=v["trajectory_topic"],
        excitation=RunConfig(**{field: float(v[name])
                                for name, field in EXCITE_PARAMETERS.items()}),
        excite_max_acceleration=float(v["excite_max_acceleration"]),
        base=v["base"], imu_topic=v["imu_topic"], imu_frame=v["imu_frame"],
        ft_frames=tuple(v["ft_frames"] or ()), ft_topics=tuple(v["ft_topics"] or ()),
        ft_types=tuple(v["ft_types"] or ()),
        ft_flip_wrench_sign=tuple(v["ft_flip_wrench_sign"] or ()),
        use_efforts=bool(v["use_efforts"]),
        sensor_timeout_sec=float(v["sensor_timeout_sec"]),
        sample_rate_hz=float(v["sample_rate_hz"]))
    if settings.mode == "payload" and not settings.sensor_frame:
        raise StartupError("parameter 'sensor_frame' is required in payload mode")
    if settings.mode == "links" and not settings.joints and not settings.chain_config:
        raise StartupError("parameter 'joints' is required in links mode (or give "
                           "'chain_config')")
    if settings.mode == "whole_body":
        _check_whole_body(settings)
    if settings.mode == "payload":  # links: once the chain is known (build_session)
        _check_startup_window(settings, PAYLOAD_WINDOW_SHAPE)
        _check_payload_prior(settings)
    return settings


NODE_NAME = "inertia_id"
"""The node's default name (the key of its entries in a parameter file)."""


def parameters_from_file(path: str | Path, node_name: str = NODE_NAME) -> dict[str, Any]:
    """The values (name -> value) that a ROS 2 parameter file gives the node ``node_name``:
    the ``ros__parameters`` of the entries for every node (``/**``) and then of those naming it
    (``inertia_id``, ``/inertia_id``, ``/ns/inertia_id``, ``/**/inertia_id``), later ones
    winning; nested mappings flattened with dots, as rclpy reads them. Raises
    :class:`~inertia_id_ros.errors.ConfigError` naming the file (unreadable, not a parameter
    file, no entry for the node)."""
    try:
        document = yaml.safe_load(Path(path).read_text())
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the parameter file: {error.strerror or error}") \
            from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not YAML: {error}".replace("\n", " ")) from None
    if not isinstance(document, dict):
        raise ConfigError(f"{path}: not a ROS 2 parameter file (a mapping of node names to "
                          "'ros__parameters')")
    entries = [(key, entry) for key, entry in document.items()
               if isinstance(key, str) and isinstance(entry, dict)]
    wildcard = [entry for key, entry in entries if key.strip("/") == "**"]
    named = [entry for key, entry in entries if key.strip("/") != "**"
             and key.rsplit("/", 1)[-1] == node_name]
    values: dict[str, Any] = {}
    for entry in wildcard + named:
        parameters = entry.get("ros__parameters")
        if not isinstance(parameters, dict):
            raise ConfigError(f"{path}: an entry for the node has no 'ros__parameters' mapping")
        values.update(_flatten(parameters))
    if not wildcard and not named:
        raise ConfigError(f"{path}: no parameters for the node {node_name!r} (entries: "
                          f"{[key for key, _ in entries]})")
    return values


def _flatten(parameters: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in parameters.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _check_payload_prior(settings: NodeSettings) -> None:
    """What can be checked of ``payload_prior`` without the URDF (the rest: build_session)."""
    prior = settings.payload_prior
    try:
        check_prior_available(settings.method, prior != NO_PRIOR)
    except ValueError as error:
        raise StartupError(f"parameter 'method': {error} (payload_prior is {NO_PRIOR!r})") \
            from error
    if prior.endswith(".json") and not Path(prior).is_file():
        raise StartupError(f"parameter 'payload_prior': no file {prior!r}")


def _check_whole_body(settings: NodeSettings) -> None:
    """The whole-body parameters that need no URDF; raises StartupError naming the item."""
    if settings.base not in BASE_KINDS:
        raise StartupError(f"parameter 'base': {settings.base!r} is not one of {BASE_KINDS}")
    if not settings.imu_topic and settings.base == "floating":
        raise StartupError("parameter 'imu_topic' is required with base 'floating' (empty: no "
                           "IMU, for base 'fixed' or 'suspended' only)")
    if settings.imu_topic and not settings.imu_frame:
        raise StartupError(f"parameter 'imu_frame' is required with an imu_topic "
                           f"({settings.imu_topic!r}; empty imu_topic: no IMU)")
    if not settings.ft_frames and not (settings.base == "fixed" and settings.use_efforts):
        raise StartupError("parameter 'ft_frames' is required in whole_body mode (but on a "
                           "fixed base with use_efforts)")
    for name in ("ft_topics", "ft_types"):
        if len(getattr(settings, name)) != len(settings.ft_frames):
            raise StartupError(f"parameter '{name}' has {len(getattr(settings, name))} entries "
                               f"for the {len(settings.ft_frames)} sensors of 'ft_frames' "
                               f"{list(settings.ft_frames)}")
    for frame, topic, kind in zip(settings.ft_frames, settings.ft_topics, settings.ft_types):
        if kind not in SENSOR_KINDS:
            raise StartupError(f"parameter 'ft_types': sensor {frame!r} has type {kind!r}, "
                               "neither 'contact' nor 'internal'")
        if not topic:
            raise StartupError(f"parameter 'ft_topics': sensor {frame!r} has no topic")
    duplicates = sorted({f for f in settings.ft_frames if settings.ft_frames.count(f) > 1})
    if duplicates:
        raise StartupError(f"parameter 'ft_frames': {duplicates} listed twice")
    unknown = [f for f in settings.ft_flip_wrench_sign if f not in settings.ft_frames]
    if unknown:
        raise StartupError(f"parameter 'ft_flip_wrench_sign': {unknown[0]!r} is not one of "
                           f"'ft_frames' {list(settings.ft_frames)}")
    if (settings.base == "fixed" and not settings.use_efforts
            and "internal" not in settings.ft_types):
        raise StartupError("parameter 'ft_types': a fixed base has rows only from internal F/T "
                           "sensors and joint efforts; no sensor is internal "
                           f"({list(settings.ft_types)}) and use_efforts is false")
    try:
        check_mode_method(settings.mode, settings.method)
    except ValueError as error:
        raise StartupError(f"parameter 'method': {error}") from error
    for name in ("sensor_timeout_sec", "sample_rate_hz"):
        if not _positive(getattr(settings, name)):
            raise StartupError(f"parameter '{name}' must be > 0, got "
                               f"{getattr(settings, name)!r}")


PAYLOAD_WINDOW_SHAPE = (6, 16)
"""(rows per sample, parameters) of the payload window at its largest (with the offset)."""


def _check_startup_window(settings: NodeSettings, shape: tuple[int, int]) -> None:
    try:
        check_window_memory(settings.window_sec, settings.max_input_rate_hz, shape)
    except ValueError as error:
        raise StartupError(f"parameter 'window_sec': {error}") from error


def build_session(settings: NodeSettings) -> Session:
    """The session of ``settings.mode``: the robot model, the estimator and (payload) the
    change detector. Raises :class:`~inertia_id_ros.errors.StartupError` naming the parameter
    at fault (an unreadable URDF, a sensor frame or joint not in it, a bad chain config)."""
    if settings.mode == "payload":
        try:
            kinematics = SensorKinematics(_load_robot(settings), settings.sensor_frame)
        except FrameNotFound as error:
            raise StartupError(f"parameter 'sensor_frame': {error}") from error
        try:
            prior = resolve_payload_prior(settings.payload_prior, kinematics)
        except ConfigError as error:
            raise StartupError(f"parameter 'payload_prior': {error}") from error
        try:
            check_prior_available(settings.method, prior is not None)
        except ValueError as error:
            raise StartupError(f"parameter 'method': {error} (the URDF has no links with mass "
                               f"beyond {settings.sensor_frame!r})") from error
        return payload_session(
            kinematics, window_sec=settings.window_sec, method=settings.method,
            solver_options=settings.solver_options, estimate_offset=settings.estimate_offset,
            flip_wrench_sign=settings.flip_wrench_sign, wrench_limits=settings.wrench_limits,
            max_input_rate_hz=settings.max_input_rate_hz,
            detect_payload_change=settings.detect_payload_change,
            payload_change_threshold=settings.payload_change_threshold, prior=prior,
            weighting=settings.weighting)
    if settings.mode == "whole_body":
        return _whole_body_session(settings)
    model, actuators = _link_model(settings)
    _check_startup_window(settings, (model.n_joints, model.n_parameters))
    return link_session(model, actuators, window_sec=settings.window_sec,
                        method=settings.method, solver_options=settings.solver_options,
                        prior_weight=settings.prior_weight,
                        max_input_rate_hz=settings.max_input_rate_hz,
                        weighting=settings.weighting)


def validate_change(settings: NodeSettings, new: Mapping[str, Any],
                    window_shape: tuple[int, int], prior_available: bool = True) -> NodeSettings:
    """The settings after the run-time change ``new`` (name -> value, one set-parameters call:
    all apply or none) to a node whose window holds samples of ``window_shape`` (rows per
    sample, parameters) and whose session has a prior or not (``prior_available``), or
    ValueError with the reason: a read-only parameter, a value that is not
    finite and > 0, a rate above :data:`MAX_UPDATE_RATE_HZ`, an unknown method or one that does
    not solve the mode's problem (:func:`check_mode_method`), a method that
    needs a prior the session does not have, options the
    method does not take (they belong to the method: a new method keeps the old options only if
    it takes them), a window needing more than :data:`MAX_WINDOW_MEMORY_BYTES`."""
    read_only = sorted(set(new) - set(RUNTIME_PARAMETERS))
    if read_only:
        raise ValueError(f"parameter {read_only[0]!r} is read-only (run-time parameters: "
                         f"{', '.join(RUNTIME_PARAMETERS)})")
    method = new.get("method", settings.method)
    check_mode_method(settings.mode, method)
    check_prior_available(method, prior_available)
    options = solver_options(method, new.get("solver_options", settings.solver_options))
    for name in ("window_sec", "update_rate_hz"):
        if name in new and not _positive(new[name]):
            raise ValueError(f"{name} must be a finite number > 0, got {new[name]!r}")
    rate = float(new.get("update_rate_hz", settings.update_rate_hz))
    if rate > MAX_UPDATE_RATE_HZ:
        raise ValueError(f"update_rate_hz must be <= {MAX_UPDATE_RATE_HZ:g} Hz, got {rate!r}")
    window_sec = float(new.get("window_sec", settings.window_sec))
    if settings.mode != "whole_body":  # whole_body keeps normal equations, not rows
        check_window_memory(window_sec, settings.max_input_rate_hz, window_shape)
    return dataclasses.replace(settings, method=method, solver_options=options,
                               update_rate_hz=rate, window_sec=window_sec)


def check_mode_method(mode: str, method: str) -> None:
    """Raise ValueError if ``method`` is unknown or does not solve ``mode``'s problem (whole-body:
    :data:`~inertia_id_ros.chain.whole_body_fit.WHOLE_BODY_METHODS`)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {sorted(METHODS)}")
    if mode == "whole_body" and method not in WHOLE_BODY_METHODS:
        raise ValueError(f"{method!r} does not solve whole-body problems; choose one of "
                         f"{list(WHOLE_BODY_METHODS)}")


def check_window_memory(window_sec: float, max_input_rate_hz: float,
                        window_shape: tuple[int, int]) -> None:
    """Raise ValueError if a window of ``window_sec`` (s) at ``max_input_rate_hz`` (Hz) of
    samples of ``window_shape`` (rows per sample, parameters) would take more than
    :data:`MAX_WINDOW_MEMORY_BYTES`."""
    rows, n_params = window_shape
    capacity = window_capacities(window_sec, max_input_rate_hz)["window_capacity"]
    size = 2 * capacity * 8 * (rows * (n_params + 1) + 1)
    if size > MAX_WINDOW_MEMORY_BYTES:
        raise ValueError(f"a {window_sec:g} s window at max_input_rate_hz "
                         f"{max_input_rate_hz:g} Hz needs {size / 1024**3:.1f} GiB, "
                         f"more than {MAX_WINDOW_MEMORY_BYTES / 1024**3:g} GiB: shorten "
                         "window_sec or lower max_input_rate_hz")


def solver_options(method: str, text: str | Mapping[str, Any]) -> dict[str, Any]:
    """The ``solver_options`` parameter (YAML/JSON mapping text; "" = none) checked against
    ``method``'s solver; raises ValueError naming what is wrong."""
    if isinstance(text, Mapping):
        options = dict(text)
    else:
        try:
            options = yaml.safe_load(text) if text.strip() else {}
        except yaml.YAMLError as error:
            raise ValueError(f"not a YAML/JSON mapping: {error}") from error
    if not isinstance(options, dict) or not all(isinstance(k, str) for k in options):
        raise ValueError(f"must be a mapping of option names to values, got {text!r}")
    options = {k: _number(v) for k, v in options.items()}
    try:
        check_options(method, options)
    except ProblemError as error:
        raise ValueError(f"{error} (solver_options {options} do not apply to method "
                         f"{method!r}; set solver_options with it, '' for the defaults)") from error
    return options


def _number(value: Any) -> Any:
    """``value``, or the number a string spells (YAML 1.1 reads ``1e-8``, without a dot, as a
    string)."""
    if isinstance(value, str):
        for kind in (int, float):
            try:
                return kind(value)
            except ValueError:
                pass
    return value


def _positive(value: Any) -> bool:
    try:
        return math.isfinite(float(value)) and float(value) > 0.0
    except (TypeError, ValueError):
        return False


def _load_robot(settings: NodeSettings, default_urdf: str | None = None):
    """The robot's pinocchio model from ``urdf_path`` or ``robot_description``, else from
    ``default_urdf`` (a path); raises StartupError naming the parameter."""
    urdf_path, urdf_xml = settings.urdf_path, settings.robot_description
    name = "urdf_path" if urdf_path else "robot_description" if urdf_xml else "chain_config"
    if not urdf_path and not urdf_xml:
        if default_urdf is None:
            raise StartupError("parameter 'urdf_path' (or 'robot_description') is required")
        urdf_path = default_urdf
    try:
        return load_model(urdf_path=urdf_path or None, urdf_xml=None if urdf_path else urdf_xml)
    except Exception as error:  # pinocchio raises ValueError/RuntimeError on bad URDFs
        raise StartupError(f"parameter '{name}': cannot load the URDF: {error}") from error


def _link_model(settings: NodeSettings) -> tuple[LinkModel, dict[str, ActuatorConfig] | None]:
    """The chain of links mode from ``joints``, ``chain_config``, the URDF and
    ``coulomb_velocity``, and the chain config's actuators of its joints (``None`` without a
    chain config): the estimator fixes the armatures the data cannot identify by their motor
    type's rotor inertia."""
    chain = None
    if settings.chain_config:
        try:
            chain = ChainConfig.load(settings.chain_config)
        except ConfigError as error:
            raise StartupError(f"parameter 'chain_config': {error}") from error
    joints = list(settings.joints) or list(chain.joints)
    unconfigured = ActuatorConfig(coulomb_velocity=settings.coulomb_velocity)
    estimate = chain.estimate if chain else DRIVE_TERMS
    drives = {j: (chain.actuators.get(j, unconfigured) if chain else unconfigured).drive(estimate)
              for j in joints}
    robot = _load_robot(settings, default_urdf=str(chain.urdf_path()) if chain else None)
    try:
        model = LinkModel.from_model(robot, joints, chain.locked_positions if chain else None,
                                     drives)
    except (JointNotFound, ValueError) as error:  # unknown, or not a 1-DoF joint
        raise StartupError(f"parameter 'joints': {error}") from error
    return model, ({j: chain.actuators[j] for j in joints if j in chain.actuators}
                   if chain else None)


def _whole_body_session(settings: NodeSettings) -> Session:
    """The whole-body session: the URDF with a free-flyer root (a fixed one for base ``fixed``),
    the sensors, the IMU frame (none without an imu_topic); raises StartupError naming the
    parameter at fault."""
    _load_robot(settings)  # an unreadable URDF names its parameter
    sensors = [FTSensor(frame, kind, flip_wrench_sign=frame in settings.ft_flip_wrench_sign)
               for frame, kind in zip(settings.ft_frames, settings.ft_types)]
    urdf = settings.urdf_path
    if not urdf:  # robot_description: the model needs a file (read once, then removed)
        with tempfile.NamedTemporaryFile("w", suffix=".urdf", delete=False) as handle:
            handle.write(settings.robot_description)
        urdf = handle.name
    try:
        model = WholeBodyModel.from_urdf(urdf, settings.base, sensors,
                                         settings.imu_frame if settings.imu_topic else None)
    except FrameNotFound as error:
        name = "imu_frame" if error.name == settings.imu_frame else "ft_frames"
        raise StartupError(f"parameter '{name}': {error}") from error
    except (ConfigError, ValueError) as error:
        raise StartupError(f"parameter 'urdf_path': {error}") from error
    finally:
        if not settings.urdf_path:
            os.unlink(urdf)
    return whole_body_session(model, window_sec=settings.window_sec, method=settings.method,
                              solver_options=settings.solver_options,
                              with_efforts=settings.use_efforts,
                              max_input_rate_hz=settings.max_input_rate_hz,
                              sensor_timeout_sec=settings.sensor_timeout_sec,
                              sample_rate_hz=settings.sample_rate_hz,
                              weighting=settings.weighting)
