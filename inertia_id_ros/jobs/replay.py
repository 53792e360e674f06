"""The replay job: a recording (a ROS 2 bag, or a log an input description reads) through the
online session the node would run, update by update in bag time
(:mod:`inertia_id_ros.offline.replay`), and the replay's report.

The mode is the registry's (:mod:`inertia_id_ros.modes`): the one a parameter file names
(:func:`replay_with_parameters`), the one of settings built elsewhere (:func:`replay`), or,
without a parameter file, the node's default mode with the parameters given
(:meth:`~inertia_id_ros.modes.Mode.replay_flags`). The mode replays
(:meth:`~inertia_id_ros.modes.Mode.replay`), checks its final estimate and writes the report, the
CSV and the PNG (:meth:`~inertia_id_ros.modes.Mode.replay_report`,
:meth:`~inertia_id_ros.modes.Mode.write_replay_csv`,
:meth:`~inertia_id_ros.modes.Mode.plot_replay`): this module names no mode.

The input's units are checked as the joint states pass (degrees? milliseconds?): a refusal gives
a result without an estimate, the findings alone in its document.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inertia_id_ros.errors import CallerError, InputError, StartupError
from inertia_id_ros.findings import Finding, refused
from inertia_id_ros.formats.source import LogSource
from inertia_id_ros.jobs.base import JobResult, findings_document, load_urdf

if TYPE_CHECKING:
    from inertia_id_ros.formats.recording import Recording
    from inertia_id_ros.modes import Mode, NodeSettings
    from inertia_id_ros.offline.replay import ReplayLog, ReplayUpdates


@dataclass(frozen=True)
class ReplayOptions:
    """How to replay, besides the node's parameters: ``truth`` a result JSON of the true payload
    (the report compares the final estimate with it and the PNG draws it), ``given`` the
    command-line options given (their names, as :attr:`~inertia_id_ros.modes.Mode.replay_options`
    lists them; one the mode does not take is refused), ``node_name`` the node whose entries of
    a parameter file to read (``None``: the node's default name)."""

    truth: str | None = None
    given: tuple[str, ...] = ()
    node_name: str | None = None


@dataclass(frozen=True)
class ReplayResult(JobResult[Any]):
    """A replay: ``estimate`` the final estimate (``None``: none, or the input refused),
    ``findings`` (the input description's notes, the input's units, the final estimate's
    plausibility; without an estimate: the notes, and the units when they refuse the input),
    ``document`` the result JSON, ``summary``; ``replay`` every update
    (:class:`~inertia_id_ros.offline.replay.ReplayUpdates`), the ``mode`` replayed, the ``truth``
    compared, ``files`` the order in which the summary lists the files written."""

    replay: ReplayUpdates[Any] | None = None
    mode: Mode | None = None
    truth: Any = None
    files: tuple[str, ...] = ("json", "csv")

    @property
    def last_status(self) -> str:
        """The status of the last update (why there is no estimate, when there is none)."""
        assert self.replay is not None
        return self.replay.updates[-1].status

    @property
    def no_estimate(self) -> str:
        """Why the replay gave no estimate: its source, the last update's message and the
        samples dropped."""
        from inertia_id_ros.offline.summary import dropped_text

        assert self.replay is not None
        dropped = dropped_text(self.replay.dropped)
        return (
            f"{self.replay.source}: no estimate in the replay; last update: "
            f"{self.replay.updates[-1].message}"
            + (f" (samples dropped: {dropped})" if dropped else "")
        )

    def written(self, paths: Mapping[str, str | None]) -> list[str | None]:
        """The files of ``paths`` (kind: ``"csv"``, ``"json"``, ``"png"`` -> path or ``None``)
        in the order the summary lists them."""
        return [paths.get(kind) for kind in self.files]

    def write_csv(self, path: str | Path) -> None:
        """One row per update (with an estimate or not) into the CSV ``path``."""
        assert self.mode is not None and self.replay is not None
        self.mode.write_replay_csv(self.replay, path)

    def write_png(self, path: str | Path) -> None:
        """The mode's PNG report of the replay into ``path``."""
        assert self.mode is not None and self.replay is not None
        self.mode.plot_replay(self.replay, path, self.truth)


def replay(
    log: LogSource, settings: NodeSettings, options: ReplayOptions = ReplayOptions()
) -> ReplayResult:
    """``log`` (``bag`` or ``input``) through the session the node builds from ``settings``
    (:func:`~inertia_id_ros.modes.parameters.settings_from_parameters`), as its mode replays it.
    Raises :class:`~inertia_id_ros.errors.StartupError` as the node would for the session."""
    from inertia_id_ros.modes import get
    from inertia_id_ros.modes.parameters import build_session

    started, truth = time.perf_counter(), _truth(options)
    mode = get(settings.mode)
    _check_mode(mode, options.given)
    session = build_session(settings)
    recorded, notes = _log(log, settings)
    replayed = mode.replay(recorded, session, settings)
    return _result(mode, replayed, notes, time.perf_counter() - started, truth)


def replay_with_parameters(
    log: LogSource,
    params_file: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    options: ReplayOptions = ReplayOptions(),
) -> ReplayResult:
    """``log`` through the session the node builds from its ROS 2 parameter file
    ``params_file`` (:func:`~inertia_id_ros.modes.parameters.parameters_from_file`) with the
    node parameters ``overrides`` (name -> value) set; the URDF: ``urdf_path`` or
    ``robot_description``, else the ``/robot_description`` of the bag replayed (or of the first
    bag the input description reads). Without ``params_file``: the node's default mode
    (:func:`~inertia_id_ros.modes.default`) with ``overrides`` alone
    (:meth:`~inertia_id_ros.modes.Mode.replay_flags`). The parameter file's faults are
    :class:`~inertia_id_ros.errors.InputError` naming it."""
    values = dict(overrides or {})
    if params_file is None:
        _refuse_calibrating_twice(log, values)
        return _replay_flags(log, values, options)
    from inertia_id_ros.modes.parameters import NODE_NAME, parameters_from_file

    started, truth = time.perf_counter(), _truth(options)
    values = {**parameters_from_file(params_file, options.node_name or NODE_NAME), **values}
    _refuse_calibrating_twice(log, values)
    if not values.get("urdf_path") and not values.get("robot_description"):
        values["robot_description"] = _bag_urdf(log, params_file)
    mode, session, settings, recorded, notes = _session(log, params_file, values, options)
    replayed = mode.replay(recorded, session, settings)
    return _result(mode, replayed, notes, time.perf_counter() - started, truth)


def _refuse_calibrating_twice(log: LogSource, values: Mapping[str, Any]) -> None:
    """An :class:`InputError` when the input description of ``log`` calibrates F/T readings as
    it loads and the node parameters ``values`` calibrate them again (a mode's
    ``*_calibration_file``: :func:`~inertia_id_ros.modes.base.ft_calibration_parameter`)."""
    from inertia_id_ros.modes.base import FT_CALIBRATION_SUFFIX

    given = [n for n, v in values.items() if n.endswith(FT_CALIBRATION_SUFFIX) and v]
    if log.input is None or not given:
        return
    frames = log.description().calibrated_frames()
    if frames:
        raise InputError(
            f"{log.input} calibrates {frames} as it loads and {given[0]} "
            f"({values[given[0]]}) would calibrate them again: the calibration would be "
            "applied twice; drop one of them"
        )


def _session(
    log: LogSource, params_file: str, values: Mapping[str, Any], options: ReplayOptions
) -> tuple[Mode, Any, NodeSettings, ReplayLog, list[Finding]]:
    """The mode, session and settings of the parameters ``values``, and the log to replay;
    their faults as :class:`InputError` naming ``params_file``."""
    from inertia_id_ros.modes import get
    from inertia_id_ros.modes.parameters import build_session, settings_from_parameters

    try:
        settings = settings_from_parameters(values)
        mode = get(settings.mode)
        _check_mode(mode, options.given, params_file)
        session = build_session(settings)
        recorded, notes = _log(log, settings)
    except StartupError as e:
        raise InputError(f"{params_file}: {e}") from None
    except (TypeError, ValueError) as e:  # a value of the wrong type (the file or an override)
        raise InputError(f"{params_file}: a parameter has a value of the wrong type: {e}") from None
    return mode, session, settings, recorded, notes


def _replay_flags(
    log: LogSource, values: Mapping[str, Any], options: ReplayOptions
) -> ReplayResult:
    """The default mode's replay of ``log`` with the node parameters ``values`` alone."""
    from inertia_id_ros.modes import default

    started, truth = time.perf_counter(), _truth(options)
    mode = default()
    _check_mode(mode, options.given)
    recorded: ReplayLog
    notes: list[Finding] = []
    if log.input is not None:
        urdf = values.get("urdf_path")
        if not urdf:
            raise InputError("--input needs --urdf (or --params-file with the URDF)")
        recorded, notes = _recording(log, load_urdf(urdf), urdf)
    else:
        recorded = _bag(log)
    try:
        replayed = mode.replay_flags(recorded, values)
    except CallerError:
        raise
    except (OSError, ValueError) as e:  # URDF, settings
        raise InputError(str(e)) from None
    return _result(mode, replayed, notes, time.perf_counter() - started, truth)


def _check_mode(mode: Mode, given: Sequence[str], params_file: str | None = None) -> None:
    """Refuse a mode without a replay, and options ``given`` that only other modes take."""
    from inertia_id_ros.modes import modes

    if not mode.has_replay:
        replayable = [m.name for m in modes() if m.has_replay]
        where = f"{params_file}: " if params_file else ""
        raise InputError(f"{where}replay runs the {', '.join(replayable)} modes, not {mode.name!r}")
    others = {
        option: m.name
        for m in modes()
        for option in m.replay_options
        if option not in mode.replay_options and option in given
    }
    if others:
        raise InputError(
            f"{', '.join('--' + o.replace('_', '-') for o in others)} only apply "
            f"to {' and '.join(sorted(set(others.values())))} replays"
        )


def _truth(options: ReplayOptions) -> Any:
    """The true payload of ``options.truth`` (``None`` without one)."""
    from inertia_id_ros.formats.export import read_body

    return None if options.truth is None else read_body(options.truth)


def _bag(log: LogSource) -> str:
    """The bag of ``log``; :class:`InputError` for a file of the package's layout."""
    if log.bag is None:
        raise InputError("replay reads a bag or an input description, not --data")
    return log.bag


def _log(log: LogSource, settings: NodeSettings) -> tuple[ReplayLog, list[Finding]]:
    """What to replay of ``log`` for ``settings``: its bag, or the recording its input
    description reads for the settings' robot (and the loader's notes)."""
    from inertia_id_ros.modes.base import load_robot, urdf_file

    if log.input is None:
        return _bag(log), []
    with urdf_file(settings) as urdf:
        return _recording(log, load_robot(settings), urdf)


def _recording(log: LogSource, model: Any, urdf: str) -> tuple[Recording, list[Finding]]:
    """The training part of the log ``log``'s input description reads for ``model`` (the URDF
    file ``urdf``; its window applied), and the loader's notes."""
    train, _, notes = log.read_log(model, urdf)
    return train, notes


def _bag_urdf(log: LogSource, params_file: str) -> str:
    """The URDF on ``/robot_description`` of the bag replayed, or of the first bag its input
    description reads; :class:`InputError` without one."""
    from inertia_id_ros.formats.description import InputDescription
    from inertia_id_ros.offline.replay import bag_robot_description

    bag = log.bag
    if log.input is not None:
        streams = InputDescription.from_yaml(log.input).streams.values()
        bag = next((str(stream.file) for stream in streams if stream.is_bag), None)
    description = (bag and bag_robot_description(bag)) or ""
    if not description:
        raise InputError(
            f"{bag or log.input}: no /robot_description in the bag and no urdf_path in "
            f"{params_file}; give --urdf"
        )
    return description


def _result(
    mode: Mode,
    replayed: ReplayUpdates[Any],
    notes: list[Finding],
    elapsed: float,
    truth: Any,
) -> ReplayResult:
    """The result of ``replayed`` (``elapsed``: its wall time, s): the input refused (the
    findings alone), no estimate, or the mode's report."""
    if refused(replayed.input_findings):  # as the fit commands, which refuse before fitting
        document = {"source": replayed.source, **findings_document(replayed.input_findings)}
        findings = tuple(notes + replayed.input_findings)
        return ReplayResult(None, findings, document, (), replayed, mode, truth)
    if replayed.final is None:  # what is said then: the input description's notes
        return ReplayResult(None, tuple(notes), {}, (), replayed, mode, truth)
    checked = replayed.input_findings + replayed.findings
    findings = tuple(notes + checked)
    report = mode.replay_report(replayed, findings_document(checked), elapsed, truth)
    return ReplayResult(
        replayed.final,
        findings,
        report.document,
        report.summary,
        replayed,
        mode,
        truth,
        report.files,
    )
