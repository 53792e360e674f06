"""The node's parameters: the table, their validation, and the session they build (no rclpy:
the node declares them, ``inertia-id replay`` and the jobs build its sessions with them).

- :data:`COMMON_PARAMETERS` and :data:`EXCITE_TABLE`: the parameters of every mode and of the
  excitation wizard; each mode adds its own (:attr:`~inertia_id_ros.modes.Mode.parameters`,
  asked of the registry :mod:`inertia_id_ros.modes`). :data:`PARAMETERS`: the table the node
  declares with the package's modes (:func:`node_parameters`: with every registered mode, one
  from outside too): every parameter with its default (or type, when it has none), its
  description, and whether it may change at run time.
- :func:`settings_from_parameters`: the values read at start-up -> validated
  :class:`~inertia_id_ros.modes.NodeSettings`, or :class:`~inertia_id_ros.errors.StartupError`
  naming the parameter.
- :func:`build_session`: settings -> the mode's :class:`~inertia_id_ros.online.session.Session`.
- :func:`validate_change`: a run-time change (all of one set-parameters call) -> the settings it
  would give, or ValueError with the reason (the node's on-set callback: validation only).
- :func:`parameters_from_file`: the node's values in a ROS 2 parameter file (``--params-file``),
  for running the node's session without the node (``inertia-id replay --params-file``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from inertia_id_ros import modes as registry
from inertia_id_ros.errors import ConfigError, ProblemError, StartupError
from inertia_id_ros.modes import Mode, NodeSettings, ParameterSpec
from inertia_id_ros.modes.base import positive
from inertia_id_ros.motion.run import RunConfig
from inertia_id_ros.online.session import Session
from inertia_id_ros.options import (
    DEFAULT_MAX_ACCELERATION,
    DESIGN_TIME_LIMITS,
    INPUT_PATHS,
    LINK_VOLUME_MARGIN,
    NO_ELLIPSOID_METHODS,
    WEIGHTINGS,
)
from inertia_id_ros.solvers import METHODS, check_options

MAX_UPDATE_RATE_HZ = 100.0
"""Highest ``update_rate_hz``: a faster periodic solve would starve the input callbacks."""


def _listed(items: list[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return " or ".join(filter(None, (", ".join(items[:-1]), items[-1])))


MODE_PARAMETER = ParameterSpec(
    "mode",
    registry.default().name,
    "What to identify: " + _listed([f"'{m.name}' ({m.summary})" for m in registry.modes()]) + ".",
)
"""The node's mode: a registered mode's name (or ``package.module:Attr``, :func:`mode_of`); by
default the registry's first (:func:`~inertia_id_ros.modes.base.default`)."""

COMMON_PARAMETERS: tuple[ParameterSpec, ...] = (
    MODE_PARAMETER,
    ParameterSpec(
        "urdf_path",
        "",
        "Path of the robot's URDF (or give robot_description; in "
        "links mode chain_config may give it).",
    ),
    ParameterSpec(
        "robot_description", "", "The robot's URDF as a string (used when urdf_path is empty)."
    ),
    ParameterSpec("joint_states_topic", "/joint_states", "sensor_msgs/JointState input topic."),
    ParameterSpec(
        "window_sec",
        10.0,
        "Length of the sliding window of samples (s), > 0; run-time "
        "changes keep the newest samples that fit.",
        runtime=True,
    ),
    ParameterSpec(
        "update_rate_hz",
        2.0,
        "Rate of the periodic consistent solve and publication (Hz), > 0 and <= 100.",
        runtime=True,
    ),
    ParameterSpec(
        "method",
        "lmi",
        "Identification method: "
        + ", ".join(sorted(METHODS))
        + "".join(
            f" ({m.name}: {', '.join(m.methods)})"
            for m in registry.modes()
            if set(m.methods) != set(METHODS)
        )
        + ".",
        runtime=True,
    ),
    ParameterSpec(
        "solver_options",
        "",
        "Options of the method's solver as a YAML/JSON mapping, e.g. '{tol: 1.0e-8}' or "
        "'{backend: cvxpy, solver: CLARABEL}' for lmi (inertia_id_ros.solvers: the "
        "keyword arguments of solve_<method>); empty = the method's defaults.",
        runtime=True,
    ),
    ParameterSpec(
        "max_input_rate_hz",
        1000.0,
        "Highest expected rate of each input (Hz); sizes the window's buffers "
        "(window_sec x this rate samples).",
    ),
    ParameterSpec(
        "qos_depth",
        2000,
        "Depth of the best-effort (sensor-data) input queues; deep enough to ride out "
        "solves at 1 kHz.",
    ),
    ParameterSpec(
        "input_path",
        NodeSettings.input_path,
        "How the joint states, wrenches and IMU readings are taken: 'raw' (serialized, decoded "
        "in batches straight into arrays) or 'typed' (rclpy's message objects: slower, the "
        "same estimates).",
    ),
    ParameterSpec(
        "warning_period_sec", 5.0, "Minimum time between two warnings of the same kind (s)."
    ),
    ParameterSpec(
        "diagnostics_period_sec",
        NodeSettings.diagnostics_period_sec,
        "/diagnostics is published at every update and, between slower updates, at "
        "least this often (s), > 0: its counters of the messages taken stay current.",
    ),
    ParameterSpec(
        "weighting",
        "",
        "'none': unweighted least squares; 'channel': each wrench component (payload), "
        "joint torque (links, payload_torques), or the base's and each F/T sensor's "
        "force rows and torque rows and each joint torque (whole_body) weighted by its "
        "inverse "
        "residual variance over the window, iterated at every solve (from the previous "
        "solve's weights: one fit once they settle); the covariance "
        "(whole_body: the identifiability) follows the weights. Empty: the mode's "
        "default ("
        + ", ".join(f"{m.name}: {m.default_weighting}" for m in registry.modes())
        + ").",
    ),
    ParameterSpec(
        "bounding_ellipsoid",
        False,
        "Constrain each identified body's mass to an ellipsoid around it (Wensing et "
        "al. 2017): a payload to its mode's bounding sphere or box about its frame "
        "(payload_bounding_sphere, torques_bounding_box, ...); a link to its URDF "
        f"collision geometry grown by {LINK_VOLUME_MARGIN:g} m (a link without any, or "
        "whose URDF inertial it does not hold: unconstrained). Refused with method "
        + _listed(list(NO_ELLIPSOID_METHODS))
        + "; ols solves without it.",
    ),
)
"""The parameters of every mode (but the excitation wizard's, :data:`EXCITE_TABLE`)."""

EXCITE_PREFIX = "excite_"
"""The prefix of the parameters of :class:`~inertia_id_ros.motion.run.RunConfig`'s fields."""


def _run_config_parameter(field: str, description: str) -> ParameterSpec:
    """The ``~/excite`` parameter of the :class:`RunConfig` field ``field`` (its name with
    :data:`EXCITE_PREFIX`, its default), ``description`` after ``"~/excite: "``."""
    return ParameterSpec(
        EXCITE_PREFIX + field, getattr(RunConfig, field), f"~/excite: {description}"
    )


EXCITE_TABLE: tuple[ParameterSpec, ...] = (
    ParameterSpec(
        "trajectory_topic",
        "/joint_trajectory_controller/joint_trajectory",
        "~/excite: trajectory_msgs/JointTrajectory output topic (the trajectory "
        "controller's command topic).",
    ),
    _run_config_parameter(
        "max_start_distance",
        "largest distance of any joint from the motion's start pose (rad, m), "
        "> 0; further away, the excitation is refused (move the robot there "
        "first).",
    ),
    _run_config_parameter(
        "ramp_velocity", "peak joint speed of the ramps in and out (rad/s, m/s), > 0."
    ),
    _run_config_parameter(
        "joint_state_timeout",
        "joint states older than this are stale (s), > 0: an excitation is "
        "refused, or stopped (holding the last measured pose).",
    ),
    _run_config_parameter(
        "max_tracking_error",
        "largest distance of a measured joint from the command (rad, m), > 0; "
        "beyond, the excitation stops and holds.",
    ),
    ParameterSpec(
        "excite_max_acceleration",
        DEFAULT_MAX_ACCELERATION,
        "~/excite: joint acceleration limit of motions designed on the spot (rad/s^2, m/s^2), > 0.",
    ),
    ParameterSpec(
        "allow_motion",
        False,
        "~/excite: moves the robot only when this is true (set it at launch); false: "
        "every call is refused (motion_not_allowed).",
    ),
    _run_config_parameter(
        "dry_run_speed_scale",
        "largest speed scale, in (0, 1], of a motion's first run (a dry run: the "
        "same path, slower) unless the call sets skip_dry_run; 1: no dry run.",
    ),
    _run_config_parameter(
        "collision_margin",
        "smallest distance (m), > 0, of the links from each other (with srdf) "
        "and from the obstacles (with environment_file) over every command.",
    ),
    ParameterSpec(
        "srdf",
        "",
        "~/excite: the robot's SRDF: self-collision (the URDF's collision geometry, "
        "the pairs the SRDF leaves; needs urdf_path) is avoided by motions designed on "
        "the spot and checked on every command.",
    ),
    ParameterSpec(
        "workspace_file",
        "",
        "~/excite: YAML of Cartesian limits of frames (boxes, half-spaces, spheres): "
        "every command is checked before it moves, every measured joint state while "
        "it moves (beyond a limit: stop and hold).",
    ),
    ParameterSpec(
        "environment_file",
        "",
        "~/excite: YAML of obstacles (boxes, half-spaces, spheres; needs urdf_path): "
        "motions designed on the spot avoid them, every command keeps "
        "excite_collision_margin from them.",
    ),
    ParameterSpec(
        "design_time_limit_sec",
        0.0,
        "~/excite: optimisation time of a motion designed on the spot (s), >= 0; 0: "
        "the design's default ("
        + ", ".join(f"{seconds:g} s {target}" for target, seconds in DESIGN_TIME_LIMITS.items())
        + ").",
    ),
)
"""The excitation wizard's parameters (``~/excite``: the modes with an excitation target)."""

EXCITE_PARAMETERS = {
    EXCITE_PREFIX + field: field
    for field in (f.name for f in dataclasses.fields(RunConfig))
    if EXCITE_PREFIX + field in {spec.name for spec in EXCITE_TABLE}
}
"""The parameters of :class:`~inertia_id_ros.motion.run.RunConfig` -> its fields (those of the
table, :func:`_run_config_parameter`)."""


def node_parameters() -> tuple[ParameterSpec, ...]:
    """The parameters the node declares: the common ones, every registered mode's (a mode from
    outside the package is registered once named, :func:`mode_of`), then the excitation
    wizard's; a name two modes share appears once (with one spec, else
    :class:`~inertia_id_ros.errors.ConfigError`)."""
    table: dict[str, ParameterSpec] = {}
    for spec in (
        *COMMON_PARAMETERS,
        *(p for m in registry.modes() for p in m.parameters),
        *EXCITE_TABLE,
    ):
        if table.setdefault(spec.name, spec) != spec:
            raise ConfigError(
                f"parameter {spec.name!r} is declared twice, differently: "
                f"{table[spec.name]} and {spec}"
            )
    return tuple(table.values())


PARAMETERS = node_parameters()
"""The node's parameter table with the package's modes (the generated reference's)."""

RUNTIME_PARAMETERS = tuple(p.name for p in PARAMETERS if p.runtime)
"""Parameters that may change while the node runs (the others are read-only)."""


def mode_of(name: str) -> Mode:
    """The registry's mode ``name`` (or ``package.module:Attr``); StartupError naming
    ``mode``."""
    try:
        return registry.get(name)
    except ConfigError as error:
        raise StartupError(f"parameter 'mode': {error}") from error


def _run_config(values: Mapping[str, Any]) -> RunConfig:
    """The ``excite_*`` parameters of ``values`` as a :class:`RunConfig`."""
    try:
        return RunConfig(
            **{field: float(values[name]) for name, field in EXCITE_PARAMETERS.items()}
        )
    except ValueError as error:
        raise StartupError(f"parameter '{EXCITE_PREFIX}{str(error).split()[0]}': {error}") from None


def _check_rates(v: Mapping[str, Any]) -> None:
    """StartupError naming the first of the common periods, rates and depths of ``v`` (name ->
    value) that is out of range."""
    for name in (
        "window_sec",
        "update_rate_hz",
        "warning_period_sec",
        "diagnostics_period_sec",
        "max_input_rate_hz",
        *EXCITE_PARAMETERS,
        "excite_max_acceleration",
    ):
        if not positive(v[name]):
            raise StartupError(f"parameter '{name}' must be > 0, got {v[name]!r}")
    if float(v["update_rate_hz"]) > MAX_UPDATE_RATE_HZ:
        raise StartupError(
            f"parameter 'update_rate_hz' must be <= {MAX_UPDATE_RATE_HZ:g} Hz, "
            f"got {v['update_rate_hz']!r}"
        )
    if int(v["qos_depth"]) < 1:
        raise StartupError(f"parameter 'qos_depth' must be >= 1, got {v['qos_depth']!r}")


def settings_from_parameters(values: Mapping[str, Any]) -> NodeSettings:
    """Validated settings from the parameters' values (name -> value; missing names take the
    table's default; an array parameter not set is ``None``). Every mode's values are checked,
    then the mode's requirements (:meth:`~inertia_id_ros.modes.Mode.check_settings`). Raises
    :class:`~inertia_id_ros.errors.StartupError` naming the first invalid parameter."""
    mode = mode_of(values.get(MODE_PARAMETER.name, MODE_PARAMETER.default))
    table = node_parameters()
    unknown = sorted(set(values) - {p.name for p in table})
    if unknown:
        raise StartupError(f"parameter {unknown[0]!r} is not a parameter of the node")
    v = {p.name: values.get(p.name, p.default) for p in table}
    _check_rates(v)
    if v["input_path"] not in INPUT_PATHS:
        raise StartupError(
            f"parameter 'input_path': unknown input path {v['input_path']!r}; choose one of "
            f"{', '.join(INPUT_PATHS)}"
        )
    v["weighting"] = v["weighting"] or mode.default_weighting
    if v["weighting"] not in WEIGHTINGS:
        raise StartupError(
            f"parameter 'weighting': unknown weighting {v['weighting']!r}; choose "
            f"one of {list(WEIGHTINGS)}"
        )
    try:
        mode.check_method(v["method"])
    except ValueError as error:
        raise StartupError(f"parameter 'method': {error}") from error
    try:
        check_ellipsoid_method(v["method"], bool(v["bounding_ellipsoid"]))
    except ValueError as error:
        raise StartupError(f"parameter 'bounding_ellipsoid': {error}") from error
    try:
        options = solver_options(v["method"], v["solver_options"])
    except ValueError as error:
        raise StartupError(f"parameter 'solver_options': {error}") from error
    own = {
        m.name: m.read_settings({p.name: v[p.name] for p in m.parameters}) for m in registry.modes()
    }
    if not float(v["design_time_limit_sec"]) >= 0.0:
        raise StartupError(
            f"parameter 'design_time_limit_sec' must be >= 0, got {v['design_time_limit_sec']!r}"
        )
    settings = NodeSettings(
        mode=mode.name,
        urdf_path=v["urdf_path"],
        robot_description=v["robot_description"],
        joint_states_topic=v["joint_states_topic"],
        window_sec=float(v["window_sec"]),
        update_rate_hz=float(v["update_rate_hz"]),
        method=v["method"],
        solver_options=options,
        max_input_rate_hz=float(v["max_input_rate_hz"]),
        qos_depth=int(v["qos_depth"]),
        input_path=v["input_path"],
        warning_period_sec=float(v["warning_period_sec"]),
        weighting=v["weighting"],
        diagnostics_period_sec=float(v["diagnostics_period_sec"]),
        trajectory_topic=v["trajectory_topic"],
        excitation=_run_config(v),
        excite_max_acceleration=float(v["excite_max_acceleration"]),
        allow_motion=bool(v["allow_motion"]),
        srdf=v["srdf"],
        workspace_file=v["workspace_file"],
        environment_file=v["environment_file"],
        design_time_limit_sec=float(v["design_time_limit_sec"]),
        mode_settings=own[mode.name],
        bounding_ellipsoid=bool(v["bounding_ellipsoid"]),
    )
    mode.check_settings(settings)
    return settings


def build_session(settings: NodeSettings) -> Session:
    """The session of ``settings.mode`` (:meth:`~inertia_id_ros.modes.Mode.build_session`).
    Raises :class:`~inertia_id_ros.errors.StartupError` naming the parameter at fault (an
    unreadable URDF, a sensor frame or joint not in it, a bad chain config)."""
    return mode_of(settings.mode).build_session(settings)


def validate_change(
    settings: NodeSettings,
    new: Mapping[str, Any],
    window_shape: tuple[int, int],
    session: Session | None = None,
) -> NodeSettings:
    """The settings after the run-time change ``new`` (name -> value, one set-parameters call:
    all apply or none) to a node whose window holds samples of ``window_shape`` (rows per
    sample, parameters) and that runs ``session`` (``None``: not checked), or ValueError with
    the reason: a read-only parameter, a value that is not finite and > 0, a rate above
    :data:`MAX_UPDATE_RATE_HZ`, an unknown method or one that does not solve the mode's problem
    (:meth:`~inertia_id_ros.modes.Mode.check_method`), a method that needs what the session
    lacks (:meth:`~inertia_id_ros.modes.Mode.check_session_method`), one that cannot take the
    bounding ellipsoids of ``bounding_ellipsoid``, options the method does not take (they belong
    to the method: a new method keeps the old options only if it takes them), a window needing
    too much memory (:meth:`~inertia_id_ros.modes.Mode.check_window`)."""
    read_only = sorted(set(new) - set(RUNTIME_PARAMETERS))
    if read_only:
        raise ValueError(
            f"parameter {read_only[0]!r} is read-only (run-time parameters: "
            f"{', '.join(RUNTIME_PARAMETERS)})"
        )
    mode = registry.get(settings.mode)
    method = new.get("method", settings.method)
    mode.check_method(method)
    if session is not None:
        mode.check_session_method(session, method)
    check_ellipsoid_method(method, settings.bounding_ellipsoid)
    options = solver_options(method, new.get("solver_options", settings.solver_options))
    for name in ("window_sec", "update_rate_hz"):
        if name in new and not positive(new[name]):
            raise ValueError(f"{name} must be a finite number > 0, got {new[name]!r}")
    rate = float(new.get("update_rate_hz", settings.update_rate_hz))
    if rate > MAX_UPDATE_RATE_HZ:
        raise ValueError(f"update_rate_hz must be <= {MAX_UPDATE_RATE_HZ:g} Hz, got {rate!r}")
    window_sec = float(new.get("window_sec", settings.window_sec))
    mode.check_window(window_sec, settings.max_input_rate_hz, window_shape)
    return dataclasses.replace(
        settings, method=method, solver_options=options, update_rate_hz=rate, window_sec=window_sec
    )


def check_ellipsoid_method(method: str, bounding_ellipsoid: bool) -> None:
    """Raise ValueError if ``bounding_ellipsoid`` is set and ``method`` cannot take bounding
    ellipsoids (:data:`~inertia_id_ros.options.NO_ELLIPSOID_METHODS`)."""
    if bounding_ellipsoid and method in NO_ELLIPSOID_METHODS:
        raise ValueError(
            f"method {method!r} cannot take bounding ellipsoids; set "
            "bounding_ellipsoid false or choose another method"
        )


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
        raise ValueError(
            f"{error} (solver_options {options} do not apply to method "
            f"{method!r}; set solver_options with it, '' for the defaults)"
        ) from error
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
        raise ConfigError(
            f"{path}: cannot read the parameter file: {error.strerror or error}"
        ) from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not YAML: {error}".replace("\n", " ")) from None
    if not isinstance(document, dict):
        raise ConfigError(
            f"{path}: not a ROS 2 parameter file (a mapping of node names to 'ros__parameters')"
        )
    entries = [
        (key, entry)
        for key, entry in document.items()
        if isinstance(key, str) and isinstance(entry, dict)
    ]
    wildcard = [entry for key, entry in entries if key.strip("/") == "**"]
    named = [
        entry
        for key, entry in entries
        if key.strip("/") != "**" and key.rsplit("/", 1)[-1] == node_name
    ]
    values: dict[str, Any] = {}
    for entry in wildcard + named:
        parameters = entry.get("ros__parameters")
        if not isinstance(parameters, dict):
            raise ConfigError(f"{path}: an entry for the node has no 'ros__parameters' mapping")
        values.update(_flatten(parameters))
    if not wildcard and not named:
        raise ConfigError(
            f"{path}: no parameters for the node {node_name!r} (entries: "
            f"{[key for key, _ in entries]})"
        )
    return values


def _flatten(parameters: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in parameters.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat
