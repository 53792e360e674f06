"""Several runs of one robot in one input description (``runs:``): each a description, files in
the description's layout, or a file or bag of this package's layout, with its own window. They
are loaded one by one and joined on one clock, each after the previous one's last stamp plus
:data:`RUN_GAP` s, so that no fit, filter or interpolation spans two runs (the differentiation
drops the samples within its half-width of a gap, as of a log's ends:
:func:`~inertia_id_ros.core.filtering.inside_segments`). The split goes by run
(``held_out_runs``) or by time within each run (``held_out_from``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from inertia_id_ros.errors import DataError
from inertia_id_ros.formats.data import JointStates, Wrenches
from inertia_id_ros.formats.description import BAG_SUFFIXES, InputDescription, Window
from inertia_id_ros.formats.recording import ImuSamples, Recording, RunSpan, load_recording
from inertia_id_ros.options import DEFAULT_JOINT_STATES_TOPIC, DEFAULT_WRENCH_TOPIC

RUN_GAP = 10.0
"""s between two runs joined on one clock: longer than any derivative filter's half-width and
torque delay, so that a gap is a gap to every fit (and short enough for stamps to stay exact)."""


@dataclass(frozen=True)
class RunSpec:
    """One run of a description: ``name`` (for ``held_out_runs`` and messages), its
    ``description`` (``None`` for a file of this package's layout: ``file`` = (path, time unit,
    angle unit), read with the command's sensor frame and topics: :meth:`resolved`) and its
    ``window`` (s after its first joint sample; ``None``: the description's)."""

    name: str
    description: InputDescription | None
    window: Window | None = None
    file: tuple[str, str | None, str | None] | None = None

    def resolved(
        self,
        sensor_frame: str | None = None,
        joint_states_topic: str | None = None,
        wrench_topic: str | None = None,
    ) -> InputDescription:
        """The run's description; a file's or bag's with the F/T sensor ``sensor_frame``."""
        if self.description is not None:
            return self.description
        assert self.file is not None  # a run is a description or a file
        path, time_unit, angle_unit = self.file
        if Path(path).is_dir() or Path(path).suffix in BAG_SUFFIXES:
            if time_unit is not None:
                raise DataError(f"run {self.name}: {path} is a bag: its stamps are in s")
            return InputDescription.from_bag(
                path,
                joint_states_topic or DEFAULT_JOINT_STATES_TOPIC,
                angle_unit,
                wrench_topic or DEFAULT_WRENCH_TOPIC,
                sensor_frame,
            )
        return InputDescription.from_canonical(path, time_unit, angle_unit, sensor_frame)


def load_runs(
    description: InputDescription, model_joint_names: Sequence[str], urdf: str | Path | None
) -> Recording:
    """The runs of ``description`` loaded one by one (:func:`load_recording`, each in its
    window, with the description's held joints) and joined (:func:`join`)."""
    parts = []
    for run in description.runs:
        own = run.resolved()
        if own.held_out_from is not None or own.intervals:
            raise DataError(
                f"{description.source}: run {run.name} splits itself (held_out_from or "
                "intervals); with runs, give held_out_from or held_out_runs beside 'runs'"
            )
        own = replace(
            own,
            window=run.window or description.window or own.window,
            held={**own.held, **description.held},
        )
        recording = load_recording(own, model_joint_names, urdf)
        parts.append(replace(recording, runs=(_span(run.name, recording),)))
    joined = join(parts, description.source)
    spans = ", ".join(f"{s.name} ({s.hi - s.lo:.1f} s)" for s in joined.runs)
    note = f"{len(parts)} runs, each differentiated on its own (never across two): {spans}"
    return replace(joined, notes=(*joined.notes, note))


def _span(name: str, recording: Recording) -> RunSpan:
    """The run ``name``'s span: its first joint stamp and the first and last of any stream."""
    stamps = [recording.joint_states.t, *(w.t for w in recording.wrenches.values())]
    if recording.imu is not None:
        stamps.append(recording.imu.t)
    lo = min(float(t[0]) for t in stamps if t.size)
    hi = max(float(t[-1]) for t in stamps if t.size)
    return RunSpan(name, float(recording.joint_states.t[0]), lo, hi)


def join(parts: Sequence[Recording], source: str) -> Recording:
    """The recordings ``parts`` (each of one or more runs) on one clock: each shifted to start
    :data:`RUN_GAP` s after the previous one's last stamp (the first one kept), then merged."""
    shifted: list[Recording] = []
    end = 0.0
    for part in parts:
        lo = min(span.lo for span in part.runs)
        shift = 0.0 if not shifted else end + RUN_GAP - lo
        shifted.append(_shifted(part, shift))
        end = max(span.hi for span in part.runs) + shift
    return _merged(shifted, source)


def _shifted(recording: Recording, shift: float) -> Recording:
    """``recording`` with every stamp ``shift`` s later."""
    if shift == 0.0:
        return recording
    states = recording.joint_states
    imu = recording.imu
    return replace(
        recording,
        joint_states=replace(states, t=states.t + shift),
        wrenches={f: replace(w, t=w.t + shift) for f, w in recording.wrenches.items()},
        imu=None if imu is None else replace(imu, t=imu.t + shift),
        t0=recording.t0 + shift,
        runs=tuple(
            RunSpan(s.name, s.t0 + shift, s.lo + shift, s.hi + shift) for s in recording.runs
        ),
    )


def _merged(parts: Sequence[Recording], source: str) -> Recording:
    """``parts`` (on one clock, in order, not overlapping) as one recording; they must log the
    same joints, F/T sensors and IMU (:class:`DataError` naming the runs)."""
    first = parts[0]
    names = [" + ".join(s.name for s in part.runs) for part in parts]
    for name, part in zip(names[1:], parts[1:]):
        for what, mine, theirs in (
            ("joints", part.joint_states.joint_names, first.joint_states.joint_names),
            ("F/T sensors", tuple(part.wrenches), tuple(first.wrenches)),
            ("IMU", part.imu is None, first.imu is None),
            ("held joints", part.held, first.held),
        ):
            if mine != theirs:
                raise DataError(
                    f"{source}: runs {names[0]} and {name} differ in their {what} "
                    f"({theirs} vs {mine}); runs fitted together log the same signals"
                )
    states = [part.joint_states for part in parts]
    optional = {}
    for kind in ("dq", "ddq", "effort"):
        given = [getattr(s, kind) is not None for s in states]
        if any(given) and not all(given):
            missing = [n for n, g in zip(names, given) if not g]
            raise DataError(f"{source}: runs {missing} lack the joint {kind} the other runs have")
        optional[kind] = np.vstack([getattr(s, kind) for s in states]) if all(given) else None
    joint_states = JointStates(
        np.concatenate([s.t for s in states]),
        first.joint_states.joint_names,
        np.vstack([s.q for s in states]),
        optional["dq"],
        optional["ddq"],
        optional["effort"],
    )
    wrenches = {
        frame: Wrenches(
            np.concatenate([p.wrenches[frame].t for p in parts]),
            np.vstack([p.wrenches[frame].wrench for p in parts]),
            w.frame,
        )
        for frame, w in first.wrenches.items()
    }
    imu = first.imu
    if imu is not None:
        imus = [p.imu for p in parts if p.imu is not None]
        imu = ImuSamples(
            np.concatenate([i.t for i in imus]),
            imu.frame,
            {k: np.concatenate([i.values[k] for i in imus]) for k in imu.values},
        )
    return replace(
        first,
        joint_states=joint_states,
        wrenches=wrenches,
        imu=imu,
        source=source,
        notes=_notes(parts),
        runs=tuple(span for part in parts for span in part.runs),
    )


def _notes(parts: Sequence[Recording]) -> tuple[str, ...]:
    """The parts' notes, each once: prefixed with the runs that noted it unless all did."""
    texts: dict[str, list[str]] = {}
    for part in parts:
        name = " + ".join(s.name for s in part.runs)
        for note in part.notes:
            texts.setdefault(note, []).append(name)
    return tuple(
        note if len(names) == len(parts) else f"{', '.join(names)}: {note}"
        for note, names in texts.items()
    )


def split_runs(
    recording: Recording, description: InputDescription
) -> tuple[Recording, Recording | None]:
    """``(train, held_out)`` of a joined recording: the runs of ``held_out_runs`` held out, and
    of the others the part from ``held_out_from`` (s after each run's first joint sample);
    ``held_out`` ``None`` without a split."""
    train, held_out = [], []
    split = description.held_out_from
    for span in recording.runs:
        part = _part(recording, span, span.lo, span.hi)
        if span.name in description.held_out_runs:
            held_out.append(part)
        elif split is None:
            train.append(part)
        else:
            end = float(part.joint_states.t[-1])
            if not span.t0 < span.t0 + split < end:
                raise DataError(
                    f"{description.source}: held_out_from {split:g} s is outside run "
                    f"{span.name} [0, {end - span.t0:.3f}] s"
                )
            train.append(_part(recording, span, span.lo, span.t0 + split))
            held_out.append(_part(recording, span, span.t0 + split, span.hi))
    if not train:
        raise DataError(f"{description.source}: every run is held out: none is left to fit")
    return (
        replace(_merged(train, description.source), notes=recording.notes),
        _merged(held_out, description.source) if held_out else None,
    )


def _part(recording: Recording, span: RunSpan, lo: float, hi: float) -> Recording:
    """The samples of run ``span`` of ``recording`` from ``lo`` to ``hi`` (absolute stamps)."""
    part = recording.window(lo - recording.t0, hi - recording.t0)
    states = part.joint_states.t
    return replace(
        part, notes=(), runs=(RunSpan(span.name, float(states[0]), lo, hi),), t0=float(states[0])
    )
