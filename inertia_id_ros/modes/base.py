"""What a mode of the node is, and the registry of modes (no rclpy, no numpy at import).

A mode is what the node identifies (``payload``, ``links``, ``whole_body``, ...): one module
holding a :class:`Mode` and one :func:`register` line in :mod:`inertia_id_ros.modes`. The
node's parameter layer (:mod:`inertia_id_ros.modes.parameters`), the node, ``inertia-id replay``
and the command line ask the registry (:func:`get`, :func:`modes`) for the mode's parts; none of
them switches on a mode's name. A mode outside the package is named ``package.module:Attr``
(the node's ``mode`` parameter; ``Attr`` a :class:`Mode` subclass or instance), imported and
registered on first use.
"""

from __future__ import annotations

import abc
import importlib
import math
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from inertia_id_ros.errors import ConfigError, DataError, InputError, StartupError
from inertia_id_ros.options import DEFAULT_PAYLOAD_RADIUS, METHOD_NAMES

if TYPE_CHECKING:
    from pathlib import Path

    from inertia_id_ros.chain.ft_calibration import SensorCalibration
    from inertia_id_ros.chain.motors import MotorCoupling
    from inertia_id_ros.motion.run import RunConfig
    from inertia_id_ros.offline.replay import ReplayLog, ReplayReport, ReplayUpdates
    from inertia_id_ros.offline.validation import DataSource, Prediction
    from inertia_id_ros.offline.volumes import Volume
    from inertia_id_ros.online.session import Session

SessionT = TypeVar("SessionT", bound="Session[Any, Any]")
"""The session type of a mode (:meth:`Mode.build_session`)."""
ReplayT = TypeVar("ReplayT", bound="ReplayUpdates[Any]")
"""The replay type of a mode (:meth:`Mode.replay`)."""

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


@dataclass(frozen=True)
class NodeSettings:
    """The node's validated parameters (SI units; see the parameter table,
    :data:`inertia_id_ros.modes.parameters.PARAMETERS`): the ones every mode has, and in
    ``mode_settings`` the mode's own (its :meth:`Mode.read_settings`)."""

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
    trajectory_topic: str
    excitation: RunConfig
    """The ``excite_*`` parameters but ``excite_max_acceleration``."""
    excite_max_acceleration: float
    mode_settings: Any
    """The mode's own parameters (a frozen dataclass of the mode)."""
    allow_motion: bool = False
    srdf: str = ""
    workspace_file: str = ""
    environment_file: str = ""
    design_time_limit_sec: float = 0.0
    bounding_ellipsoid: bool = False
    """Constrain each identified body to an ellipsoid around it (the mode's volumes)."""
    diagnostics_period_sec: float = 1.0
    """``/diagnostics`` is published at every update and, between slower updates, at least this
    often (s): the counters of what the node has taken stay current whatever ``update_rate_hz``."""
    input_path: str = "raw"
    """How the inputs are taken (:data:`~inertia_id_ros.options.INPUT_PATHS`): serialized and
    decoded in batches straight into arrays (:mod:`inertia_id_ros.formats.cdr`), or ``typed``:
    as rclpy's message objects."""


@dataclass(frozen=True)
class ExcitationTarget:
    """What ``~/excite`` designs a motion for: ``target`` (a
    :data:`~inertia_id_ros.options.TARGETS` objective of
    :func:`~inertia_id_ros.motion.design.design_excitation`) over ``joint_names`` of the pinocchio
    ``model``, beyond ``sensor_frame`` (payload targets; ``None`` otherwise), with the coupled
    motors of ``coupling`` (the links target of a chain with a coupled transmission)."""

    model: Any
    joint_names: tuple[str, ...]
    target: str
    sensor_frame: str | None = None
    coupling: MotorCoupling | None = None


@dataclass(frozen=True)
class ExampleLog:
    """A short simulated log of a mode's example (:meth:`Mode.example_log`): ``replay`` what
    ``inertia-id replay`` reads (a bag), ``data`` the same recording as ``inertia-id validate``
    reads held-out data (a bag, or an NPZ/CSV file of the package's layout)."""

    replay: str
    data: str


class Mode(abc.ABC, Generic[SessionT, ReplayT]):
    """One mode of the node: its parameters, settings, session, ROS wiring, command line,
    replay and its report, results and their evaluation, excitation target and example; generic
    in the type of its session (``SessionT``) and of its replay (``ReplayT``).

    Class attributes:

    - ``name``: the value of the node's ``mode`` parameter; ``title``: its heading in the
      parameter reference (its parameters' descriptions start with ``title + ": "``);
      ``summary``: what it identifies from what (the ``mode`` parameter's description);
    - ``parameters``: its own node parameters (names shared with another mode must have the same
      spec); ``default_weighting``: the ``weighting`` when the parameter is empty (the
      estimator's default); ``methods``: the methods that solve its problem;
    - ``wiring``: ``"package.module:Class"`` of its ROS wiring under ``inertia_id_ros.ros`` (or
      beside the mode, for a mode outside the package), imported by the node only: the class
      takes ``(node, session, settings, sensor_qos)`` (see
      :class:`inertia_id_ros.ros.wiring.base.ModeWiring`);
    - ``commands``: its ``inertia-id`` subcommand modules (``add_parser``, ``run``);
      ``replay_options``: the options of ``inertia-id replay`` that apply to its replays;
    - ``example``: its example parameter file, relative to the repository (``config/...``),
      which :meth:`example_log`'s simulated logs replay;
    - ``fixed_mmap_threshold``: whether the node fixes glibc's mmap threshold for it
      (:func:`inertia_id_ros.ros.memory.fix_mmap_threshold`: flat memory at the price of a page
      fault per page of every multi-megabyte temporary); ``False`` for a mode whose updates
      make many such arrays (a whole body's took twice the CPU; the payload from joint
      torques' memory grew faster with it than without).

    Its results (result JSON files) say whose they are: ``"mode"``, its name (a mode from
    outside the package: its ``package.module:Attr``, so that ``inertia-id validate`` finds it in
    a process that has not imported it); :meth:`recognises` tells its older files, without
    ``"mode"``; :meth:`evaluate` predicts held-out data with one.

    Its session takes bounding ellipsoids of its bodies when the node's ``bounding_ellipsoid``
    is set (Wensing et al. 2017); a mode that cannot refuses it in :meth:`check_settings`.
    """

    name: str
    title: str
    summary: str
    parameters: tuple[ParameterSpec, ...] = ()
    default_weighting: str
    methods: tuple[str, ...] = METHOD_NAMES
    wiring: str
    commands: tuple[str, ...] = ()
    replay_options: tuple[str, ...] = ()
    example: str = ""
    fixed_mmap_threshold: bool = True

    @abc.abstractmethod
    def read_settings(self, values: Mapping[str, Any]) -> Any:
        """The mode's settings from the values of its parameters (name -> value, every one
        present; an array not set is ``None``), or :class:`StartupError` naming a value that
        is invalid whatever the mode (the node checks every mode's values, selected or not)."""

    def check_settings(self, settings: NodeSettings) -> None:
        """Raise :class:`StartupError` naming the parameter if ``settings`` (this mode selected)
        cannot run: a required parameter missing, or what needs the common ones; without the
        URDF (that is :meth:`build_session`'s)."""

    @abc.abstractmethod
    def build_session(self, settings: NodeSettings) -> SessionT:
        """The mode's online session for ``settings``; :class:`StartupError` naming the
        parameter at fault (an unreadable URDF, a frame or joint not in it, ...)."""

    def check_method(self, method: str) -> None:
        """Raise ValueError if ``method`` is unknown or does not solve this mode's problem."""
        if method not in METHOD_NAMES:
            raise ValueError(f"unknown method {method!r}; choose one of {sorted(METHOD_NAMES)}")
        if method not in self.methods:
            problems = self.title.removesuffix(" mode").lower()
            raise ValueError(
                f"{method!r} does not solve {problems} problems; choose one of {list(self.methods)}"
            )

    def check_window(
        self, window_sec: float, max_input_rate_hz: float, window_shape: tuple[int, int]
    ) -> None:
        """Raise ValueError if a window of ``window_sec`` (s) at ``max_input_rate_hz`` (Hz) of
        samples of ``window_shape`` (rows per sample, parameters) takes too much memory
        (:func:`check_window_memory`; a mode whose window keeps no rows overrides this)."""
        check_window_memory(window_sec, max_input_rate_hz, window_shape)

    def check_session_method(self, session: SessionT, method: str) -> None:
        """Raise ValueError, saying what to give, if ``session`` (the mode's, running) lacks what
        ``method`` (a method the mode solves with, :meth:`check_method`) needs: the node's
        run-time ``method`` changes and ``~/identify`` calls ask it (e.g. ``cad_prior`` without
        the payload's CAD values). Nothing by default."""

    def check_startup_window(self, settings: NodeSettings, window_shape: tuple[int, int]) -> None:
        """:meth:`check_window` at start-up: StartupError naming ``window_sec``."""
        try:
            self.check_window(settings.window_sec, settings.max_input_rate_hz, window_shape)
        except ValueError as error:
            raise StartupError(f"parameter 'window_sec': {error}") from error

    def excitation(self, session: SessionT, settings: NodeSettings) -> ExcitationTarget | None:
        """What ``~/excite`` moves and designs for in this mode; ``None``: no wizard."""
        return None

    # ---- replay (inertia-id replay, jobs.replay) ----------------------------------------

    def replay(self, log: ReplayLog, session: SessionT, settings: NodeSettings) -> ReplayT:
        """``log`` (a bag's path, or a log loaded through an input description) through
        ``session`` as the node would run it (``inertia-id replay --params-file``): the inputs
        fed as the mode's wiring feeds them
        (:func:`~inertia_id_ros.offline.replay.replay_log` with the mode's
        :class:`~inertia_id_ros.offline.replay.ReplayInputs`), the ``session`` and the mode's
        plausibility ``findings`` of the final estimate in the
        :class:`~inertia_id_ros.offline.replay.ReplayUpdates`; raises :class:`ConfigError` for a
        mode that has no replay."""
        raise ConfigError(f"replay does not run the {self.name} mode")

    @property
    def has_replay(self) -> bool:
        """Whether :meth:`replay` is the mode's own."""
        return type(self).replay is not Mode.replay

    def replay_flags(self, log: ReplayLog, values: Mapping[str, Any]) -> ReplayT:
        """``inertia-id replay`` without a parameter file, which runs the default mode
        (:func:`default`): ``log`` through the mode's session for ``values`` (node parameters
        the command line set: ``urdf_path``, topics, ``window_sec``, ...; the others at their
        defaults, what the log gives completing the rest); raises :class:`ConfigError` when the
        mode needs a parameter file."""
        raise ConfigError(f"the {self.name} mode replays with a parameter file (--params-file)")

    def replay_report(
        self, replay: ReplayT, checked: Mapping[str, Any], elapsed: float, truth: Any
    ) -> ReplayReport:
        """The report of a replay that gave an estimate: its result JSON (``"mode"`` first,
        ``checked`` the findings' part, ``{"findings": [...], "refused": bool}``), the summary
        lines and the order of the files written; ``elapsed`` the replay's wall time (s),
        ``truth`` the true payload when the command line gives one (an
        :class:`~inertia_id_ros.formats.export.IdentifiedBody`; ``"truth"`` in
        :attr:`replay_options`)."""
        raise ConfigError(f"replay does not report the {self.name} mode")

    def write_replay_csv(self, replay: ReplayT, path: str | Path) -> None:
        """One row per update of ``replay`` (with an estimate or not) into the CSV ``path``."""
        raise ConfigError(f"replay writes no CSV of the {self.name} mode")

    def plot_replay(self, replay: ReplayT, path: str | Path, truth: Any) -> None:
        """The PNG report of ``replay`` into ``path`` (``"png"`` in :attr:`replay_options`)."""
        raise ConfigError(f"replay draws no report of the {self.name} mode")

    # ---- results (inertia-id validate, jobs.validate) -----------------------------------

    def recognises(self, result: Mapping[str, Any]) -> bool:
        """Whether ``result`` (a result JSON's content without ``"mode"``: an older file) is
        this mode's, by the mode's own rule (its keys); none by default."""
        return False

    def evaluate(
        self,
        result: Mapping[str, Any],
        held_out: DataSource,
        urdf: str | None,
        train: DataSource | None,
    ) -> dict[str, Prediction]:
        """The channels of ``held_out`` that the mode's ``result`` predicts, measured and
        predicted by each model (:data:`~inertia_id_ros.offline.validation.MODELS`: ``"fit"``
        the result, ``"urdf"`` the URDF's inertials, ``"urdf_offsets"`` with the offsets fitted,
        ``"ols"`` least squares refitted on ``train`` when given); ``urdf`` the robot's URDF
        file. Raises :class:`~inertia_id_ros.errors.CallerError` for inputs it cannot use."""
        raise InputError(f"results of the {self.name} mode cannot be validated")

    # ---- example ------------------------------------------------------------------------

    def example_log(self, directory: Path, seed: int = 0) -> ExampleLog:
        """A few seconds of the simulated robot of :attr:`example`, written into ``directory``
        (noise and motion from ``seed``), for trying the mode without a robot (and its contract
        tests: node, replay and validation)."""
        raise ConfigError(f"the {self.name} mode has no simulated example")


_REGISTRY: dict[str, Mode[Any, Any]] = {}
_IMPORTED: dict[str, Mode[Any, Any]] = {}
"""``package.module:Attr`` -> the mode it named (imported once)."""


def register(mode: Mode) -> Mode:
    """Add ``mode`` to the registry under ``mode.name`` (again: the same object only); returns
    it."""
    known = _REGISTRY.get(mode.name)
    if known is not None and known is not mode:
        raise ConfigError(f"mode {mode.name!r} is registered already ({type(known).__name__})")
    _REGISTRY[mode.name] = mode
    return mode


def get(name: str) -> Mode:
    """The mode registered as ``name``, or the one ``name`` = ``package.module:Attr`` names
    (imported and registered); :class:`ConfigError` for an unknown mode."""
    if name in _REGISTRY:
        return _REGISTRY[name]
    if name in _IMPORTED:
        return _IMPORTED[name]
    if ":" not in name:
        raise ConfigError(
            f"unknown mode {name!r}; choose one of {list(_REGISTRY)} or name a "
            "Mode as 'package.module:Attr'"
        )
    found = import_object(name)
    mode = found() if isinstance(found, type) and issubclass(found, Mode) else found
    if not isinstance(mode, Mode):
        raise ConfigError(
            f"{name!r} is not a Mode (a subclass of inertia_id_ros.modes.Mode or "
            "an instance of one)"
        )
    _IMPORTED[name] = register(mode)
    return mode


def modes() -> tuple[Mode, ...]:
    """Every registered mode, in registration order (the package's own first)."""
    return tuple(_REGISTRY.values())


def result_mode(result: Mapping[str, Any]) -> Mode:
    """The mode whose result ``result`` (a result JSON's content) is: the one its ``"mode"``
    names (a registered name, or ``package.module:Attr``), else (an older file) the first
    registered mode that :meth:`~Mode.recognises` it; :class:`InputError` if none."""
    named = result.get("mode")
    if named is not None:
        try:
            return get(str(named))
        except ConfigError as error:
            raise InputError(f"the result's mode: {error}") from None
    for mode in modes():
        if mode.recognises(result):
            return mode
    raise InputError(
        "the result JSON names no mode ('mode') and no mode recognises it: not a result of "
        "fit-links, fit-payload, fit-payload-torques, fit-whole-body or replay"
    )


def default() -> Mode:
    """The node's default mode (its ``mode`` parameter's default, and ``inertia-id replay``'s
    without a parameter file): the first registered."""
    return next(iter(_REGISTRY.values()))


def import_object(path: str) -> Any:
    """The object ``package.module:attr`` names; :class:`ConfigError` if it cannot be imported."""
    module_name, _, attr = path.partition(":")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as error:
        raise ConfigError(f"cannot import {path!r}: {error}") from error


# ---- helpers of the modes' checks -------------------------------------------------------------


def positive(value: Any) -> bool:
    """Whether ``value`` is a finite number > 0."""
    try:
        return math.isfinite(float(value)) and float(value) > 0.0
    except (TypeError, ValueError):
        return False


def bounding_volume_parameters(
    prefix: str, title: str, frame: str
) -> tuple[ParameterSpec, ParameterSpec]:
    """The node parameters ``<prefix>_bounding_sphere`` and ``<prefix>_bounding_box`` of a
    payload's volume about ``frame``'s origin (words, e.g. "the sensor frame"), for the
    ``bounding_ellipsoid`` parameter; descriptions start with ``title``."""
    return (
        ParameterSpec(
            f"{prefix}_bounding_sphere",
            DEFAULT_PAYLOAD_RADIUS,
            f"{title}: radius (m, > 0) of a sphere about {frame}'s origin holding the "
            f"payload, for bounding_ellipsoid (unless {prefix}_bounding_box is set).",
        ),
        ParameterSpec(
            f"{prefix}_bounding_box",
            None,
            f"{title}: half-extents [x, y, z] (m, > 0) of a box about {frame}'s origin, "
            "along its axes, holding the payload, for bounding_ellipsoid (the "
            f"ellipsoid through its corners). Unset: {prefix}_bounding_sphere.",
            array_type="double_array",
        ),
    )


FT_CALIBRATION_SUFFIX = "_calibration_file"
"""How the name of a mode's F/T calibration parameter ends (:func:`ft_calibration_parameter`)."""


def ft_calibration_parameter(name: str, title: str, flip: str) -> ParameterSpec:
    """The node parameter ``name`` (ending in :data:`FT_CALIBRATION_SUFFIX`) of an F/T
    calibration file, for a mode that reads F/T sensors (its description starts with ``title``;
    ``flip``: the mode's sign parameter)."""
    if not name.endswith(FT_CALIBRATION_SUFFIX):
        raise ConfigError(f"an F/T calibration parameter's name ends in {FT_CALIBRATION_SUFFIX}")
    return ParameterSpec(
        name,
        "",
        f"{title}: a file inertia-id calibrate-ft wrote (YAML); the readings of each F/T "
        f"sensor it names go through its calibration (after {flip}). It may name only the "
        "node's sensors. Empty: the readings as they come.",
    )


def read_ft_calibration_parameter(
    name: str, path: str, frames: Sequence[str]
) -> dict[str, SensorCalibration]:
    """The calibrations by frame of the file ``path`` of the parameter ``name``
    (:func:`ft_calibration_parameter`; none when empty); :class:`StartupError` naming the
    parameter for a file that cannot be read or that names a frame not among the node's F/T
    sensors ``frames``."""
    from inertia_id_ros.formats.ft_calibration import read_ft_calibration

    if not path:
        return {}
    try:
        calibrations = read_ft_calibration(path)
    except DataError as error:
        raise StartupError(f"parameter '{name}': {error}") from error
    unknown = sorted(set(calibrations) - set(frames))
    if unknown:
        raise StartupError(
            f"parameter '{name}': {path} calibrates {unknown}, not the node's F/T sensors "
            f"{list(frames)}"
        )
    return calibrations


def read_bounding_volume(values: Mapping[str, Any], prefix: str) -> Volume:
    """The payload's volume (m) of the parameters of :func:`bounding_volume_parameters`, which
    its findings name; StartupError naming the one that is not > 0."""
    from inertia_id_ros.offline.volumes import payload_volume

    sphere, box = values[f"{prefix}_bounding_sphere"], values[f"{prefix}_bounding_box"]
    if not positive(sphere):
        raise StartupError(f"parameter '{prefix}_bounding_sphere' must be > 0 (m), got {sphere!r}")
    if box is not None:
        if len(box) != 3 or not all(isinstance(x, float) and positive(x) for x in box):
            raise StartupError(
                f"parameter '{prefix}_bounding_box' must be 3 half-extents > 0 "
                f"(m), got {list(box)!r}"
            )
        box = (float(box[0]), float(box[1]), float(box[2]))
    return payload_volume(
        float(sphere),
        box,
        (f"parameter {prefix}_bounding_sphere", f"parameter {prefix}_bounding_box"),
    )


def check_positive(name: str, value: Any) -> None:
    """StartupError naming the parameter ``name`` unless its ``value`` is a finite number > 0."""
    if not positive(value):
        raise StartupError(f"parameter '{name}' must be > 0, got {value!r}")


def check_window_memory(
    window_sec: float, max_input_rate_hz: float, window_shape: tuple[int, int]
) -> None:
    """Raise ValueError if a window of ``window_sec`` (s) at ``max_input_rate_hz`` (Hz) of
    samples of ``window_shape`` (rows per sample, parameters) would take more than
    :data:`MAX_WINDOW_MEMORY_BYTES`."""
    from inertia_id_ros.online.estimator import window_capacities

    rows, n_params = window_shape
    capacity = window_capacities(window_sec, max_input_rate_hz)["window_capacity"]
    size = 2 * capacity * 8 * (rows * (n_params + 1) + 1)
    if size > MAX_WINDOW_MEMORY_BYTES:
        raise ValueError(
            f"a {window_sec:g} s window at max_input_rate_hz "
            f"{max_input_rate_hz:g} Hz needs {size / 1024**3:.1f} GiB, "
            f"more than {MAX_WINDOW_MEMORY_BYTES / 1024**3:g} GiB: shorten "
            "window_sec or lower max_input_rate_hz"
        )


def load_robot(settings: NodeSettings, default_urdf: str | None = None) -> Any:
    """The robot's pinocchio model from ``urdf_path`` or ``robot_description``, else from
    ``default_urdf`` (a path; its parameter named ``chain_config``); raises StartupError naming
    the parameter."""
    from inertia_id_ros.core.robots import load_model

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


@contextmanager
def urdf_file(settings: NodeSettings, default_urdf: str | None = None) -> Iterator[str]:
    """A path of the robot's URDF: ``urdf_path``, else ``robot_description`` written to a
    temporary file (removed on exit), else ``default_urdf``."""
    if settings.urdf_path or not settings.robot_description:
        yield settings.urdf_path or default_urdf or ""
        return
    with tempfile.NamedTemporaryFile("w", suffix=".urdf", delete=False) as handle:
        handle.write(settings.robot_description)
    try:
        yield handle.name
    finally:
        os.unlink(handle.name)
