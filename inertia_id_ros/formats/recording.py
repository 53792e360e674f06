"""An input description's log as the arrays the fits take: :func:`load_recording` reads its
streams (:mod:`~inertia_id_ros.formats.streams`), converts units, signs and clocks, and gives a
:class:`Recording` (joint states, F/T sensors, the IMU) that becomes a payload, links or
whole-body recording; :func:`split_recording` splits it into the training and held-out parts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from inertia_id_ros.chain.motors import MotorCoupling
from inertia_id_ros.errors import DataError
from inertia_id_ros.formats.data import JointStates, PayloadRecording, Wrenches
from inertia_id_ros.formats.description import (
    CANONICAL_SIGNAL_KEYS,
    IMU_KEYS,
    IMU_WIDTHS,
    POSITION_SCALE,
    TIME_SCALE,
    WRENCH_KEY,
    FTSpec,
    InputDescription,
    JointGroup,
    SignalSpec,
    StampWindow,
    Window,
)
from inertia_id_ros.formats.ft_conventions import read_ft_conventions
from inertia_id_ros.formats.streams import Stream, read_stream, stream_columns
from inertia_id_ros.formats.transmission import Transmission, TransmissionSpec
from inertia_id_ros.formats.whole_body_log import (
    ImuSeries,
    SensorSeries,
    WholeBodyRecording,
    synchronise,
)
from inertia_id_ros.options import JOINT_SIGNALS


@dataclass(frozen=True)
class ImuSamples:
    """IMU samples at their own stamps ``t`` (M,) s: ``frame`` and
    :data:`~inertia_id_ros.formats.whole_body_log.IMU_KEYS`-keyed arrays (M, 4 / 3 / 3)."""

    t: np.ndarray
    frame: str
    values: dict[str, np.ndarray]


@dataclass(frozen=True)
class RunSpan:
    """One run of a recording joined from several (:mod:`~inertia_id_ros.formats.runs`):
    ``name``, ``t0`` its first joint stamp, ``lo`` and ``hi`` its first and last stamps of
    any stream (s, on the joined clock)."""

    name: str
    t0: float
    lo: float
    hi: float


@dataclass(frozen=True)
class Recording:
    """A log loaded through an :class:`InputDescription`: ``joint_states`` (the logged URDF
    joints, SI, on the position stream's stamps), ``held`` URDF joints (value, rad or m),
    ``wrenches`` per F/T frame (own stamps, in this package's sign convention), ``ft_kinds``,
    ``imu`` (own stamps) or ``None``; ``notes``: what was ignored, held, cropped or flipped."""

    joint_states: JointStates
    wrenches: dict[str, Wrenches]
    ft_kinds: dict[str, str]
    imu: ImuSamples | None
    source: str
    held: dict[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    t0: float = 0.0
    """s: the first joint sample's stamp; windows are relative to it."""
    runs: tuple[RunSpan, ...] = ()
    """The runs joined into it, in order (empty: one log)."""
    coupling: MotorCoupling | None = None
    """The joint groups' transmissions' matrices, URDF joint names (``None``: no transmission)."""

    def window(self, start: float, end: float) -> Recording:
        """The samples within ``[t0 + start, t0 + end]`` s of every stream."""
        lo, hi = self.t0 + start, self.t0 + end
        states = self.joint_states
        keep = (states.t >= lo) & (states.t <= hi)
        if keep.sum() < 2:
            raise DataError(
                f"{self.source}: the window [{start:g}, {end:g}] s holds "
                f"{int(keep.sum())} joint samples (the joint states span "
                f"[0, {states.t[-1] - self.t0:.3f}] s)"
            )
        states = JointStates(
            states.t[keep],
            states.joint_names,
            states.q[keep],
            *(None if a is None else a[keep] for a in (states.dq, states.ddq, states.effort)),
        )
        wrenches = {}
        for frame, w in self.wrenches.items():
            inside = (w.t >= lo) & (w.t <= hi)
            if not inside.any():
                raise DataError(
                    f"{self.source}: F/T sensor {frame!r} has no sample in the "
                    f"window [{start:g}, {end:g}] s"
                )
            wrenches[frame] = Wrenches(w.t[inside], w.wrench[inside], w.frame)
        imu = self.imu
        if imu is not None:
            inside = (imu.t >= lo) & (imu.t <= hi)
            imu = ImuSamples(
                imu.t[inside], imu.frame, {k: v[inside] for k, v in imu.values.items()}
            )
        return replace(self, joint_states=states, wrenches=wrenches, imu=imu)

    def payload(self, sensor_frame: str) -> PayloadRecording:
        """The joint states and the wrenches of the F/T sensor at ``sensor_frame``."""
        if sensor_frame not in self.wrenches:
            raise DataError(
                f"{self.source}: no F/T sensor at {sensor_frame!r} (described: "
                f"{', '.join(self.wrenches) or 'none'})"
            )
        if self.ft_kinds[sensor_frame] != "internal":
            raise DataError(
                f"{self.source}: F/T sensor {sensor_frame!r} is described as "
                f"{self.ft_kinds[sensor_frame]!r}; a payload's sensor is 'internal' "
                "(it measures the payload beyond it)"
            )
        return PayloadRecording(self.joint_states, self.wrenches[sensor_frame], self.source)

    def whole_body(self, half_width: float = 0.05) -> WholeBodyRecording:
        """The F/T sensors, IMU and joint states (with the held joints' constant columns)
        synchronised at the first F/T sensor's stamps
        (:func:`~inertia_id_ros.formats.whole_body_log.synchronise`)."""
        if not self.wrenches:
            raise DataError(f"{self.source}: a whole-body fit needs ft_sensors")
        sensors = [
            SensorSeries(f"F/T {frame}", frame, self.ft_kinds[frame], w.t, w.wrench)
            for frame, w in self.wrenches.items()
        ]
        imu = (
            None
            if self.imu is None
            else ImuSeries(
                "IMU",
                self.imu.frame,
                self.imu.t,
                {f"imu_{key}": value for key, value in self.imu.values.items()},
            )
        )
        return synchronise(
            self.source, "joint states", self.with_held_columns(), sensors, imu, half_width
        )

    def with_held_columns(self) -> JointStates:
        """The joint states with a constant column per held joint (its value; velocity and
        acceleration 0 where recorded ones are given; effort 0)."""
        states = self.joint_states
        if not self.held:
            return states
        n, held = states.n_samples, list(self.held)

        def extend(a: np.ndarray | None, values: list[float]) -> np.ndarray | None:
            return None if a is None else np.hstack([a, np.tile(values, (n, 1))])

        zeros = [0.0] * len(held)
        return JointStates(
            states.t,
            states.joint_names + tuple(held),
            np.hstack([states.q, np.tile([self.held[j] for j in held], (n, 1))]),
            extend(states.dq, zeros),
            extend(states.ddq, zeros),
            extend(states.effort, zeros),
        )


def _signs(spec: FTSpec, kind: str, conventions: Mapping[str, Any]) -> tuple[float, str]:
    """The sign turning ``spec``'s readings into this package's convention, and a note."""
    if spec.sign == "flip":
        return -1.0, f"F/T sensor {spec.frame!r}: readings negated (sign: flip)"
    if spec.sign == "keep":
        return 1.0, ""
    convention = conventions.get(spec.frame)
    if convention is None:
        return 1.0, (
            f"F/T sensor {spec.frame!r}: the URDF declares no measure_direction; "
            "readings taken as they are"
        )
    sign = convention.sign(kind)
    return sign, (
        f"F/T sensor {spec.frame!r} ({kind}): URDF measure_direction "
        f"{convention.measure_direction} -> readings "
        + ("taken as they are" if sign > 0 else "negated")
    )


def _joint_signal(
    stream: Stream,
    signal: SignalSpec,
    kind: str,
    all_log_names: Sequence[str],
    log_names: Sequence[str],
    urdf_names: Sequence[str],
) -> np.ndarray:
    """(N, n) SI values of ``kind`` for the log joints ``log_names`` (the mapped ones of
    ``all_log_names``, the columns of an (N, n) key without the stream's own names; their
    ``urdf_names``: per-joint maps are keyed by either)."""
    if signal.columns is not None:
        values = stream_columns(stream, None, signal.columns, log_names, None, f"joint {kind}s")
    else:
        available = stream.joint_names or tuple(all_log_names)
        values = stream_columns(
            stream,
            signal.key or CANONICAL_SIGNAL_KEYS[kind],
            None,
            available,
            None,
            f"joint {kind}s",
        )
        missing = [name for name in log_names if name not in available]
        if missing:
            raise DataError(
                f"{stream.label}: no joint(s) {missing} (it has {', '.join(available)})"
            )
        values = values[:, [available.index(name) for name in log_names]]
    if kind == "effort":
        if signal.unit == "A":
            constants = [
                _per_joint(signal.torque_constant, names, None, "torque_constant", stream.label)
                * _per_joint(signal.gear_ratio, names, 1.0, "gear_ratio", stream.label)
                for names in zip(log_names, urdf_names)
            ]
            values = values * np.array(constants)
    else:
        values = values * POSITION_SCALE[signal.unit or "rad"]
    signs = np.array(
        [
            _per_joint(signal.sign, names, 1.0, "sign", stream.label)
            for names in zip(log_names, urdf_names)
        ]
    )
    return values * signs


JOINT_MAPS = ("torque_constant", "gear_ratio", "sign")
"""A signal's per-joint maps (log or URDF joint name -> value)."""


def _per_joint(
    value: Mapping[str, float] | float,
    names: tuple[str, str],
    default: float | None,
    key: str,
    label: str,
) -> float:
    """A per-joint value of the joint named ``names`` (log name, URDF name) in the log and the
    URDF: ``value`` itself, or its entry for either name, or ``default``."""
    if not isinstance(value, Mapping):
        return float(value)
    for name in names:
        if name in value:
            return float(value[name])
    if default is None:
        raise DataError(f"{label}: {key} gives no value for joint {names[0]!r}")
    return default


def _through(transmission: Transmission, kind: str, motor: np.ndarray) -> np.ndarray:
    """The joint-side ``kind`` signal (N, n) of its motor-side values."""
    if kind == "position":
        return transmission.positions(motor)
    if kind == "effort":
        return transmission.efforts(motor)
    return transmission.rates(motor)


def _check_joint_maps(
    spec: SignalSpec | TransmissionSpec,
    key: str,
    pairs: Sequence[tuple[str, str]],
    maps: Sequence[str],
) -> None:
    """Refuse a per-joint map (``maps``: the attributes of ``spec`` that may be, ``key`` names
    it) keyed by a name that is no joint of the group (the log or URDF names of ``pairs``),
    naming those."""
    known = list(dict.fromkeys([*(log for log, _ in pairs), *(u for _, u in pairs)]))
    for name in maps:
        value = getattr(spec, name)
        unknown = [j for j in value if j not in known] if isinstance(value, Mapping) else []
        if unknown:
            raise DataError(
                f"{key}.{name}: no joint(s) {unknown} in this joint group; its joints: "
                f"{', '.join(known)} (log names, or the URDF names they map to)"
            )


class _Streams:
    """A description's streams, each read once when first asked for (``[name]``)."""

    def __init__(self, description: InputDescription) -> None:
        self._description = description
        self.read: dict[str, Stream] = {}

    def __getitem__(self, name: str) -> Stream:
        if name not in self.read:
            self.read[name] = read_stream(self._description.streams[name])
        return self.read[name]


_Group = tuple[JointGroup, list[tuple[str, str]], list[str], list[str]]
"""A joint group with all its (log name, URDF name) pairs, the log names kept (in the URDF) and
their URDF names."""


def load_recording(
    description: InputDescription, model_joint_names: Sequence[str], urdf: str | Path | None = None
) -> Recording:
    """The log of ``description`` for a robot with joints ``model_joint_names`` (URDF
    ``urdf`` for the F/T signs): joint signals in SI on the position stream's stamps (other
    streams' joint signals interpolated, the span cropped to where all overlap), joints not in
    the URDF ignored (noted), F/T sensors and IMU on their own stamps, then the window.
    Raises :class:`DataError` naming the stream and key. Several ``runs``: each loaded so
    and joined (:func:`~inertia_id_ros.formats.runs.load_runs`)."""
    if description.runs:
        from inertia_id_ros.formats.runs import load_runs

        return load_runs(description, model_joint_names, urdf)
    notes: list[str] = []
    streams = _Streams(description)
    groups = _joint_groups(description, streams, model_joint_names, notes)
    states = _joint_states(description, streams, groups, notes)
    wrenches, kinds = _ft_sensors(description, streams, urdf, notes)
    imu = _imu(description, streams)
    notes.extend(note for stream in streams.read.values() for note in stream.notes)
    if description.held:
        notes.append(
            "held joints (not in the log): "
            + ", ".join(f"{j} at {v:g}" for j, v in description.held.items())
        )
    recording = Recording(
        states,
        wrenches,
        kinds,
        imu,
        description.source,
        dict(description.held),
        tuple(notes),
        float(states.t[0]),
        coupling=MotorCoupling.combined(  # each already checked by _joint_states
            MotorCoupling(tuple(u for _, u in pairs), group.transmission.of(pairs, "").matrix)
            for group, pairs, *_ in groups
            if group.transmission is not None
        ),
    )
    if description.window is not None:
        recording = recording.window(*_relative(description, description.window, recording.t0))
    return recording


def _relative(description: InputDescription, window: Window, t0: float) -> tuple[float, float]:
    """``window`` in s after the first joint sample (stamp ``t0``, s): a
    :class:`~inertia_id_ros.formats.description.StampWindow` converted from the joint clock
    stream's own stamps."""
    if not isinstance(window, StampWindow):
        return window
    spec = description.streams[description.joints[0].signals["position"].stream]
    scale = TIME_SCALE[spec.time_unit] if spec.time is not None and spec.time_unit else 1.0
    return window.start * scale + spec.offset - t0, window.end * scale + spec.offset - t0


def _joint_groups(
    description: InputDescription,
    streams: _Streams,
    model_joint_names: Sequence[str],
    notes: list[str],
) -> list[_Group]:
    """The description's joint groups with their joints' names in the log and in the URDF
    (joints not in the URDF ignored and noted); a joint logged twice, or both logged and held,
    or held but not in the URDF, is a :class:`DataError`."""
    source, known = description.source, set(model_joint_names)
    groups = []
    for group in description.joints:
        position_stream = streams[group.signals["position"].stream]
        if group.joint_names is not None:
            pairs = list(group.joint_names)
        elif position_stream.joint_names is not None:
            pairs = [(name, name) for name in position_stream.joint_names]
        else:
            raise DataError(
                f"{source}: joints.names is needed: {position_stream.label} does "
                "not name its joints"
            )
        ignored = [log for log, urdf_name in pairs if urdf_name not in known]
        if ignored:
            notes.append(f"joints not in the URDF, ignored: {', '.join(ignored)}")
        kept = [(log, urdf_name) for log, urdf_name in pairs if urdf_name in known]
        groups.append((group, pairs, [p[0] for p in kept], [p[1] for p in kept]))
    urdf_names = [name for *_, names in groups for name in names]
    if not urdf_names:
        raise DataError(
            f"{source}: none of the log's joints is in the URDF (its joints: "
            f"{', '.join(model_joint_names)})"
        )
    twice = sorted({name for name in urdf_names if urdf_names.count(name) > 1})
    if twice:
        raise DataError(f"{source}: joints {twice} are logged in more than one joint group")
    both = sorted(set(description.held) & set(urdf_names))
    if both:
        raise DataError(f"{source}: joints {both} are both logged and held")
    unknown_held = sorted(set(description.held) - known)
    if unknown_held:
        unlogged = [j for j in model_joint_names if j not in urdf_names]
        raise DataError(
            f"{source}: held joints {unknown_held} are not in the URDF (its joints not in "
            f"the log: {', '.join(unlogged) or 'none'})"
        )
    return groups


def _joint_states(
    description: InputDescription, streams: _Streams, groups: list[_Group], notes: list[str]
) -> JointStates:
    """The joint signals of ``groups`` in SI on the first group's position stamps (other
    streams interpolated linearly), cropped to the span every joint stream covers."""
    source = description.source
    reference = streams[description.joints[0].signals["position"].stream]
    t = reference.t
    lo, hi = t[0], t[-1]
    for group in description.joints:
        for signal in group.signals.values():
            lo, hi = max(lo, streams[signal.stream].t[0]), min(hi, streams[signal.stream].t[-1])
    if not lo < hi:
        spans = ", ".join(
            f"{s.spec.name!r} [{s.t[0]:.3f}, {s.t[-1]:.3f}] s" for s in streams.read.values()
        )
        raise DataError(
            f"{source}: the joint streams do not overlap in time ({spans}); check "
            "their time units and offsets"
        )
    keep = (t >= lo) & (t <= hi)
    if not keep.all():
        notes.append(
            f"{int((~keep).sum())} joint samples outside the span every joint stream covers dropped"
        )
    columns: dict[str, list[np.ndarray]] = {kind: [] for kind in JOINT_SIGNALS}
    for k, (group, pairs, log_names, urdf_names) in enumerate(groups):
        key = f"{source}: " + ("joints" if len(groups) == 1 else f"joints[{k}]")
        all_log_names = [log for log, _ in pairs]
        for kind, signal in group.signals.items():
            _check_joint_maps(signal, f"{key}.{kind}", pairs, JOINT_MAPS)
            if kind not in JOINT_SIGNALS:  # TARGET_SIGNALS: read as the effort by their user
                continue
            other = streams[signal.stream]
            if (
                kind in group.optional
                and (signal.key or CANONICAL_SIGNAL_KEYS[kind]) not in other.table
            ):
                continue
            if group.transmission is None:
                values = _joint_signal(other, signal, kind, all_log_names, log_names, urdf_names)
            else:  # every joint's motor signal through it, then the joints kept
                _check_joint_maps(
                    group.transmission, f"{key}.transmission", pairs, ("gear_ratio", "zero_offset")
                )
                values = _joint_signal(
                    other, signal, kind, all_log_names, all_log_names, [u for _, u in pairs]
                )
                values = _through(group.transmission.of(pairs, f"{key}.transmission"), kind, values)
                values = values[:, [all_log_names.index(name) for name in log_names]]
            if other is not reference:
                values = np.column_stack([np.interp(t[keep], other.t, c) for c in values.T])
            else:
                values = values[keep]
            columns[kind].append(values)
    arrays: dict[str, np.ndarray] = {}
    for kind, parts in columns.items():
        if parts and len(parts) != len(groups):
            missing = [k for k, (group, *_) in enumerate(groups) if kind not in group.signals]
            raise DataError(
                f"{source}: joint {kind}s are given for some joint groups but not "
                f"for joints{missing}"
            )
        if parts:
            arrays[kind] = np.hstack(parts)
    return JointStates(
        t[keep],
        tuple(name for *_, names in groups for name in names),
        arrays["position"],
        arrays.get("velocity"),
        arrays.get("acceleration"),
        arrays.get("effort"),
    )


def _ft_sensors(
    description: InputDescription, streams: _Streams, urdf: str | Path | None, notes: list[str]
) -> tuple[dict[str, Wrenches], dict[str, str]]:
    """``(wrenches, kinds)`` per F/T sensor frame: its wrenches on their own stamps with the
    sign the URDF's conventions ask for, then its ``calibration`` when given, and its kind."""
    source = description.source
    conventions = {} if urdf is None or not description.ft_sensors else read_ft_conventions(urdf)
    wrenches, kinds = {}, {}
    for spec in description.ft_sensors:
        ft_stream = streams[spec.stream]
        values = stream_columns(
            ft_stream, spec.key or WRENCH_KEY, spec.columns, (), 6, f"F/T sensor {spec.frame!r}"
        )
        sign, note = _signs(spec, spec.kind, conventions)
        if note:
            notes.append(note)
        if spec.frame in wrenches:
            raise DataError(f"{source}: F/T sensor {spec.frame!r} is described twice")
        frame, expected = ft_stream.frame, spec.frame_id or spec.frame
        if frame and frame != expected:
            raise DataError(
                f"{ft_stream.label}: the wrenches are in frame {frame!r}, not "
                f"{expected!r} (if that is the URDF frame {spec.frame!r} by "
                "another name, give it as the sensor's frame_id)"
            )
        values = sign * values
        if spec.calibration is not None:
            values = _calibrated(spec.frame, spec.calibration, values, notes)
        wrenches[spec.frame] = Wrenches(ft_stream.t, values, spec.frame)
        kinds[spec.frame] = spec.kind
    return wrenches, kinds


def _calibrated(frame: str, path: Path, values: np.ndarray, notes: list[str]) -> np.ndarray:
    """(N, 6) readings ``values`` of the F/T sensor at ``frame`` through its entry in the
    calibration file ``path`` (:class:`DataError` when the file has none for it)."""
    from inertia_id_ros.formats.ft_calibration import read_ft_calibration

    calibrations = read_ft_calibration(path)
    if frame not in calibrations:
        raise DataError(
            f"{path}: no calibration of F/T sensor {frame!r} (it calibrates {sorted(calibrations)})"
        )
    notes.append(f"F/T sensor {frame!r}: calibration of {path} applied")
    return calibrations[frame].apply(values)


def _imu(description: InputDescription, streams: _Streams) -> ImuSamples | None:
    """The description's IMU on its own stamps (angular velocity in rad/s), if it has one."""
    imu_spec = description.imu
    if imu_spec is None:
        return None
    imu_stream = streams[imu_spec.stream]
    imu_values = {}
    for name in IMU_KEYS:
        item = imu_spec.signals.get(name, name)
        imu_values[name] = stream_columns(
            imu_stream,
            item if isinstance(item, str) else None,
            item if isinstance(item, tuple) else None,
            (),
            IMU_WIDTHS[name],
            f"IMU {name}",
        )
    imu_values["angular_velocity"] *= POSITION_SCALE[imu_spec.angle_unit]
    return ImuSamples(imu_stream.t, imu_spec.frame, imu_values)


def split_recording(
    recording: Recording, description: InputDescription
) -> tuple[Recording, Recording | None]:
    """``(train, held_out)``: the description's ``train`` interval (default: the recording) and
    its ``held_out`` interval, or the parts before and from ``held_out_from`` (``None``
    without a split). Several runs: by run and within each run
    (:func:`~inertia_id_ros.formats.runs.split_runs`)."""
    if description.runs:
        from inertia_id_ros.formats.runs import split_runs

        return split_runs(recording, description)
    end = recording.joint_states.t[-1] - recording.t0
    train = (
        recording.window(*description.intervals[description.train])
        if description.train
        else recording
    )
    if description.held_out is not None:
        return train, recording.window(*description.intervals[description.held_out])
    if description.held_out_from is None:
        return train, None
    start = recording.joint_states.t[0] - recording.t0
    split = description.held_out_from
    if not start < split < end:
        raise DataError(
            f"{recording.source}: held_out_from {split:g} s is outside the "
            f"recording [{start:.3f}, {end:.3f}] s"
        )
    return train.window(start, split), recording.window(split, end)
