"""The calibrate-drives job: each joint's current-to-torque gain, from unloaded and loaded runs
of an arm that logs motor currents, with a weighed payload
(:func:`~inertia_id_ros.chain.drive_gains.fit_drive_gains`).

A run is an input description (``.yaml``/``.yml``: its ``effort`` signal must be a current,
``unit: A``; any ``torque_constant`` and ``gear_ratio`` in it are ignored, the raw currents are
read), a file of the package's own (``.npz``, ``.csv``: efforts taken as currents in A) or a bag
(anything else). The gains (N·m/A at the joint, ``gear_ratio: 1``) come out as an input
description's ``effort`` entry, as ``fit-payload-torques --torque-constants`` and as the node's
``torques_torque_constants`` parameter (payload_torques mode; ``torques_gear_ratios`` unset).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from inertia_id_ros.errors import DataError, EstimateUnavailable, InputError, SolverError
from inertia_id_ros.findings import NOTE, WARN, Finding
from inertia_id_ros.formats.source import LogSource
from inertia_id_ros.jobs.base import JobResult, findings_document, load_urdf

if TYPE_CHECKING:
    import numpy as np
    import pinocchio as pin

    from inertia_id_ros.chain.drive_gains import DriveGainFit, RunPair
    from inertia_id_ros.formats.data import JointStates

DESCRIPTION_SUFFIXES = (".yaml", ".yml")
FILE_SUFFIXES = (".npz", ".csv")


@dataclass(frozen=True)
class CalibrateDrivesOptions:
    """How to calibrate (the defaults of ``inertia-id calibrate-drives``): ``method`` (a solver
    name), ``joints`` of the chain (``None``: all recorded; the others locked at their mean
    position), the derivative filter's ``filter_half_width`` (s; ``None``: the payload's default
    for the sample rate), ``check``: compare with the controller's own gains at standstill (the
    ratio of the runs' ``effort_target`` to ``current_target`` signals, input descriptions
    only)."""

    method: str = "lmi"
    joints: Sequence[str] | None = None
    filter_half_width: float | None = None
    check: bool = False

    def __post_init__(self) -> None:
        if self.filter_half_width is not None and not self.filter_half_width > 0:
            raise InputError(f"--filter-half-width must be > 0 s, got {self.filter_half_width}")


@dataclass(frozen=True)
class DrivesCalibration(JobResult["DriveGainFit"]):
    """Gains per joint: ``estimate`` the fit (gains, standard errors, which are determined),
    ``yaml`` the snippet to paste into an input description (and the command line's list)."""

    yaml: str = ""


def run_source(path: str) -> LogSource:
    """The :class:`LogSource` of a run's ``path`` (module docstring: description, file or bag)."""
    lower = path.lower()
    if lower.endswith(DESCRIPTION_SUFFIXES):
        return LogSource(input=path)
    if lower.endswith(FILE_SUFFIXES):
        return LogSource(data=path)
    return LogSource(bag=path)


def calibrate_drives(
    urdf: str,
    pairs: Sequence[tuple[LogSource, LogSource]],
    frame: str,
    mass: float | Sequence[float],
    options: CalibrateDrivesOptions = CalibrateDrivesOptions(),
) -> DrivesCalibration:
    """The gains of the robot of the URDF file ``urdf`` from ``pairs`` of (unloaded, loaded)
    runs, the loaded ones carrying a payload of weighed ``mass`` (kg; one for every pair, or one
    per pair) at URDF frame ``frame``."""
    from inertia_id_ros.chain.drive_gains import fit_drive_gains
    from inertia_id_ros.core.robots import frame_id

    masses = [float(mass)] * len(pairs) if isinstance(mass, (int, float)) else list(mass)
    for value in masses:
        if not value > 0:
            raise InputError(f"--mass must be > 0 kg (the payload's weighed mass), got {value}")
    if not pairs:
        raise InputError("give at least one pair of runs: --unloaded RUN --loaded RUN")
    if len(masses) != len(pairs):
        raise InputError(f"give one --mass, or one per pair: {len(masses)} for {len(pairs)} pairs")
    model = load_urdf(urdf)
    frame_id(model, frame)
    notes: list[Finding] = []
    runs, joints, links = _read_pairs(model, urdf, pairs, masses, options, notes)
    try:
        fit = fit_drive_gains(links, frame, runs, options.method)
    except (SolverError, ValueError) as e:
        raise EstimateUnavailable("solver", str(e)) from None
    findings = [Finding("gain", joint, WARN, reason) for joint, reason in _reasons(fit)]
    snippet = gains_yaml(fit)
    document = _document(fit, masses, snippet)
    document.update(findings_document(findings))
    summary = _summary(fit, masses, snippet)
    if options.check:
        controller = _controller_gains(model, urdf, pairs, fit.joint_names)
        document["controller_gains"] = dict(zip(fit.joint_names, controller.tolist()))
        summary += _check_lines(fit, controller)
    return DrivesCalibration(fit, (*notes, *findings), document, tuple(summary), snippet)


def _reasons(fit: DriveGainFit) -> list[tuple[str, str]]:
    """(joint, sentence) for each gain the data do not determine."""
    return [
        (reason.split(":", 1)[0], reason.split(": ", 1)[1]) for reason in fit.undetermined_reasons()
    ]


def _read_pairs(
    model: pin.Model,
    urdf: str,
    pairs: Sequence[tuple[LogSource, LogSource]],
    masses: Sequence[float],
    options: CalibrateDrivesOptions,
    notes: list[Finding],
) -> tuple[list[RunPair], list[str], Any]:
    """The run pairs as torque data (raw currents as efforts), the chain's joints and its link
    model (the URDF's links, every drive term, the others locked at the first run's mean
    positions)."""
    from inertia_id_ros.chain.differentiation import payload_half_width, sample_period
    from inertia_id_ros.chain.drive_gains import RunPair
    from inertia_id_ros.chain.friction import JointDrive
    from inertia_id_ros.chain.links import LinkModel
    from inertia_id_ros.formats.data import check_joints
    from inertia_id_ros.jobs.fit_payload_torques import torque_data

    out = []
    joints: list[str] = []
    positions: dict[str, float] = {}
    for (unloaded_source, loaded_source), mass in zip(pairs, masses):
        data = []
        for source in (unloaded_source, loaded_source):
            states, held = _read_currents(source, model, urdf, notes)
            if not joints:
                joints = list(options.joints or states.joint_names)
                positions = {**states.mean_positions(), **held}
            check_joints(states, list(model.names)[1:], joints, source.path)
            half_width = options.filter_half_width or payload_half_width(sample_period(states.t))
            data.append(torque_data(states, joints, {"half_width": half_width})[1])
        out.append(RunPair(data[0], data[1], mass))
    try:
        links = LinkModel.from_model(model, joints, positions, JointDrive(coulomb_velocity=0.02))
    except ValueError as e:
        raise InputError(str(e)) from None
    return out, joints, links


def _read_currents(
    source: LogSource, model: pin.Model, urdf: str, notes: list[Finding]
) -> tuple[JointStates, dict[str, float]]:
    """``(states, held)`` of a run with raw motor currents (A) as efforts; refuses a description
    whose efforts are torques."""
    from inertia_id_ros.formats.recording import load_recording

    if not source.uses_description():
        states, name = source.read_joint_states()
        if states.effort is None:
            raise DataError(f"{name}: no efforts (motor currents) recorded")
        notes.append(Finding("log", name, NOTE, "efforts taken as motor currents (A)"))
        return states, {}
    description = source.description()
    groups = []
    for group in description.joints:
        effort = group.signals.get("effort")
        if effort is None or effort.unit != "A":
            unit = "none" if effort is None else effort.unit or "N·m"
            raise InputError(
                f"{description.source}: calibrate-drives needs motor currents, but the "
                f"efforts' unit is {unit}: give the effort signal as `effort: {{columns: ..., "
                "unit: A}` (torques already in N·m have no gain to calibrate)"
            )
        raw = replace(effort, torque_constant=1.0, gear_ratio=1.0)
        groups.append(replace(group, signals={**group.signals, "effort": raw}))
    recording = load_recording(
        replace(description, joints=tuple(groups)), list(model.names)[1:], urdf
    )
    notes += [Finding("log", description.source, NOTE, note) for note in recording.notes]
    if recording.joint_states.effort is None:
        raise DataError(f"{description.source}: no efforts (motor currents) recorded")
    return recording.joint_states, dict(recording.held)


def _controller_gains(
    model: pin.Model,
    urdf: str,
    pairs: Sequence[tuple[LogSource, LogSource]],
    joints: Sequence[str],
) -> np.ndarray:
    """(n,) each joint's ratio target torque / target current at standstill over every run
    (:func:`~inertia_id_ros.chain.drive_gains.standstill_ratios`, the runs' median)."""
    import numpy as np

    from inertia_id_ros.chain.drive_gains import standstill_ratios
    from inertia_id_ros.formats.recording import load_recording

    ratios = []
    for source in (s for pair in pairs for s in pair):
        if not source.uses_description():
            raise InputError(
                f"--check needs input descriptions with effort_target and current_target "
                f"signals; {source.path} is not one"
            )
        description = source.description()
        signals = []
        for kind in ("effort_target", "current_target"):
            groups = []
            for group in description.joints:
                if kind not in group.signals:
                    raise InputError(f"--check: {description.source} has no {kind} signal")
                spec = group.signals[kind]
                if kind == "current_target":
                    spec = replace(spec, torque_constant=1.0, gear_ratio=1.0)
                groups.append(replace(group, signals={**group.signals, "effort": spec}))
            states = load_recording(
                replace(description, joints=tuple(groups)), list(model.names)[1:], urdf
            ).joint_states
            columns = [states.joint_names.index(j) for j in joints]
            assert states.effort is not None
            signals.append(states.effort[:, columns])
        ratios.append(standstill_ratios(states.t, states.q[:, columns], *signals))
    return np.nanmedian(np.array(ratios), axis=0) if ratios else np.array([])


def _check_lines(fit: DriveGainFit, controller: np.ndarray) -> list[str]:
    """The calibrated gains beside the controller's own at standstill."""
    lines = ["check: calibrated gain | the controller's target torque / target current, at rest"]
    for joint, gain, ok, own in zip(fit.joint_names, fit.gains, fit.determined, controller):
        ours = f"{gain:.5g}" if ok else "not determined"
        theirs = "no standstill" if own != own else f"{own:.5g}"
        lines.append(f"  {joint}: {ours} | {theirs}")
    return lines


def gains_yaml(fit: DriveGainFit) -> str:
    """The determined gains as an input description's ``effort`` entry (N·m/A at the joint,
    ``gear_ratio: 1``), the undetermined ones named in a comment."""
    constants = ", ".join(
        f"{joint}: {gain:.5g}"
        for joint, gain, ok in zip(fit.joint_names, fit.gains, fit.determined)
        if ok
    )
    lines = [f"effort: {{unit: A, torque_constant: {{{constants}}}, gear_ratio: 1}}"]
    missing = [j for j, ok in zip(fit.joint_names, fit.determined) if not ok]
    if missing:
        lines.append(f"# not determined (keep your datasheet's): {', '.join(missing)}")
    return "\n".join(lines) + "\n"


def _document(fit: DriveGainFit, masses: Sequence[float], snippet: str) -> dict[str, Any]:
    """The result JSON: gains per joint (undetermined ones without a number), the payload."""
    gains: dict[str, Any] = {}
    for joint, gain, std, ok, rms in zip(
        fit.joint_names, fit.gains, fit.gain_std, fit.determined, fit.payload_torque_rms
    ):
        entry: dict[str, Any] = {"determined": bool(ok), "payload_torque_rms": float(rms)}
        if ok:
            entry |= {"gain": float(gain), "std": float(std)}
        gains[joint] = entry
    return {
        "frame": fit.frame,
        "masses": list(masses),
        "gain_unit": "N·m/A at the joint (gear_ratio 1)",
        "gains": gains,
        "payload_thetas": fit.payload_thetas.tolist(),
        "residual_rms": fit.residual_rms,
        "effort_yaml": snippet,
        "torque_constants": _torque_constants(fit),
        "node_parameters": None
        if _torque_constants(fit) is None
        else {"torques_torque_constants": fit.gains.tolist(), "torques_gear_ratios": None},
    }


def _torque_constants(fit: DriveGainFit) -> str | None:
    """``K1,K2,...`` for ``--torque-constants`` (``None`` unless every gain is determined)."""
    if not all(fit.determined):
        return None
    return ",".join(f"{g:.5g}" for g in fit.gains)


def _summary(fit: DriveGainFit, masses: Sequence[float], snippet: str) -> list[str]:
    """What the command prints: the gains with their standard errors, the snippets."""
    lines = [
        f"drive gains from {len(masses)} run pair(s), payload "
        f"{', '.join(f'{m:g}' for m in masses)} kg at {fit.frame} "
        f"(N·m/A at the joint; residual {fit.residual_rms:.3g} N·m RMS):"
    ]
    for joint, gain, std, ok, rms in zip(
        fit.joint_names, fit.gains, fit.gain_std, fit.determined, fit.payload_torque_rms
    ):
        if ok:
            lines.append(f"  {joint}: {gain:.5g} ± {std:.2g}  (payload torque {rms:.3g} N·m RMS)")
        else:
            lines.append(f"  {joint}: not determined (payload torque {rms:.3g} N·m RMS)")
    lines += ["input description (paste into the joints' signals):", snippet.rstrip()]
    constants = _torque_constants(fit)
    if constants is not None:
        lines.append(f"fit-payload-torques: --torque-constants {constants}")
        lines.append(f"node (payload_torques mode): torques_torque_constants: [{constants}]")
    return lines
