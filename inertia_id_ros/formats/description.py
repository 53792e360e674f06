"""Real logs in without code: an input description (YAML, or the equivalent command-line flags)
says where each signal of a log is and in which units and clocks; :func:`load_recording` turns it
into the arrays the fits take (:class:`~inertia_id_ros.formats.data.JointStates`,
:class:`~inertia_id_ros.formats.data.PayloadRecording`,
:class:`~inertia_id_ros.formats.whole_body_log.WholeBodyRecording`). Every key is described in
``docs/how-to/real-logs.md``; in short::

    streams:                    # one per file (CSV with a header row, NPZ) or bag topic
      arm: {file: arm.csv, time: stamp, time_unit: ms, offset: 0.0}
      ft: {file: run.mcap, topic: /wrist/ft}              # bags: header stamps (s)
    joints:                     # a joint group, or a list of groups (one per file or topic)
      stream: arm
      names: {j1: lwr_0_joint, j2: lwr_1_joint}  # log name -> URDF joint (a list: the same)
      position: {columns: "pos_{joint}", unit: deg}     # or {key: positions} (an (N, n) array)
      effort: {columns: "cur_{joint}", unit: A, torque_constant: {j1: 0.12}, gear_ratio: 100}
      held: {gripper_joint: 0.0}          # URDF joints not in the log, held at a value (rad, m)
    ft_sensors:
      - {frame: tool_ft, stream: ft, sign: urdf}           # sign: urdf, keep or flip
    window: [2.0, 30.0]           # s after the first joint sample
    held_out_from: 25.0           # train before, held out from (s after the first joint sample)

Clocks: each stream has its own stamps (a time column with its unit, or a known ``rate``) plus a
constant ``offset`` (s). Joint signals from other streams are interpolated (linearly) onto the
first joint group's position stamps; F/T sensors and the IMU keep their own stamps and are
paired by stamp where the fits pair them. Every problem raises
:class:`~inertia_id_ros.errors.DataError` naming the description, the stream and the key.
"""  # noqa: D400

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from inertia_id_ros.core.regressors import WRENCH_CHANNEL_NAMES
from inertia_id_ros.core.whole_body_model import SENSOR_KINDS, WholeBodyModel, WholeBodySamples
from inertia_id_ros.errors import DataError
from inertia_id_ros.formats.data import (
    IMU_TYPE,
    JOINT_STATE_TYPE,
    WRENCH_TYPE,
    JointStates,
    PayloadRecording,
    Wrenches,
    _read_table,
    header_seconds,
    iter_bag_messages,
    wrench_values,
)
from inertia_id_ros.formats.ft_conventions import read_ft_conventions
from inertia_id_ros.formats.units import check_time_units
from inertia_id_ros.formats.whole_body_log import (
    ImuSeries,
    SensorSeries,
    WholeBodyRecording,
    synchronise,
)
from inertia_id_ros.options import (
    ANGLE_UNITS,
    JOINT_SIGNALS,
    TARGET_SIGNALS,
    TIME_UNITS,
    WRENCH_SIGNS,
)

if TYPE_CHECKING:
    import pinocchio as pin

TIME_SCALE = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
"""Seconds per unit of :data:`~inertia_id_ros.options.TIME_UNITS`."""
POSITION_SCALE = {"rad": 1.0, "deg": math.pi / 180.0, "m": 1.0, "mm": 1e-3}
"""SI units (rad or m) per unit of a joint signal (its time derivatives per s, per s²)."""
EFFORT_SCALE = {"N·m": 1.0, "Nm": 1.0, "N m": 1.0, "N": 1.0, "A": 1.0}
"""Effort units; ``A``: a motor current, times ``torque_constant`` (N·m/A) × ``gear_ratio``."""
BAG_SUFFIXES = (".mcap", ".db3")
WRENCH_KEY, IMU_KEYS = "wrench", ("orientation", "angular_velocity", "linear_acceleration")
_DEFAULT_KEYS = {"position": "q", "velocity": "dq", "acceleration": "ddq", "effort": "effort"}
"""Keys of the joint signals in canonical files and JointState topics."""
IMU_WIDTHS = {"orientation": 4, "angular_velocity": 3, "linear_acceleration": 3}


# ---- the description ----------------------------------------------------------------------


@dataclass(frozen=True)
class StreamSpec:
    """One file or bag topic with its clock: stamps from column ``time`` in ``time_unit`` (bags:
    the header stamps, s) or at ``rate`` Hz from 0 s; ``offset`` (s) added to them; text
    tables: ``delimiter`` and, for files without a header row, ``header``."""

    name: str
    file: Path
    topic: str | None = None
    time: str | None = None
    time_unit: str | None = None
    rate: float | None = None
    offset: float = 0.0
    delimiter: str = ","
    header: tuple[str, ...] | None = None
    """Names of a text table's columns when the file has no header row."""

    @property
    def is_bag(self) -> bool:
        """Whether the file is a ROS 2 bag (a directory, ``.mcap`` or ``.db3``)."""
        return self.topic is not None


@dataclass(frozen=True)
class SignalSpec:
    """A per-joint signal: ``key`` (an (N, n) array, columns in the log joints' order) or
    ``columns`` (one per log joint; ``"{joint}"`` in a pattern is the log name), in ``unit``,
    from ``stream``. Efforts in ``A``: × ``torque_constant`` × ``gear_ratio`` per log joint.
    ``sign`` per log joint (default +1)."""

    stream: str
    key: str | None = None
    columns: str | tuple[str, ...] | None = None
    unit: str | None = None
    torque_constant: Mapping[str, float] | float = field(default_factory=dict)
    gear_ratio: Mapping[str, float] | float = field(default_factory=dict)
    sign: Mapping[str, float] | float = field(default_factory=dict)


@dataclass(frozen=True)
class FTSpec:
    """An F/T sensor at URDF ``frame`` of ``kind`` (``internal`` or ``contact``): its six
    ``columns`` ``[fx, fy, fz, tx, ty, tz]`` (N, N·m) or ``key`` (an (N, 6) array) of ``stream``
    (a WrenchStamped topic: none needed); ``sign`` of :data:`~inertia_id_ros.options.WRENCH_SIGNS`
    (``urdf``: from the URDF's measure_direction when declared, else kept)."""

    frame: str
    stream: str
    kind: str = "internal"
    columns: tuple[str, ...] | None = None
    key: str | None = None
    sign: str = "urdf"
    frame_id: str | None = None
    """The frame name the log's headers give it (WrenchStamped; default ``frame``)."""


@dataclass(frozen=True)
class ImuSpec:
    """The IMU at URDF ``frame``: per signal of ``orientation`` (x, y, z, w; world ← IMU),
    ``angular_velocity`` (rad/s, or deg/s with ``angular_velocity_unit: deg``) and
    ``linear_acceleration`` (m/s², specific force) a key or columns of ``stream`` (an Imu topic:
    none needed)."""

    frame: str
    stream: str
    signals: Mapping[str, str | tuple[str, ...]] = field(default_factory=dict)
    angle_unit: str = "rad"


@dataclass(frozen=True)
class JointGroup:
    """Joints logged together (one file or JointState topic, e.g. one part of a humanoid):
    ``signals`` per :data:`~inertia_id_ros.options.JOINT_SIGNALS` (``position`` required);
    ``joint_names``: log name -> URDF joint (``None``: the position stream's own names, bags and
    canonical files); ``optional``: signals read only when the stream has them."""

    signals: Mapping[str, SignalSpec]
    joint_names: tuple[tuple[str, str], ...] | None = None
    optional: frozenset[str] = frozenset()


@dataclass(frozen=True)
class InputDescription:
    """Where a log's signals are (see the module docstring). ``joints``: the joint groups (the
    first one's position stream is the joint states' clock); ``held``: URDF joints not in the
    log and their value; ``window``, ``intervals``, ``train``, ``held_out``, ``held_out_from``:
    s after the first joint sample; ``source``: names the description in messages."""

    streams: Mapping[str, StreamSpec]
    joints: tuple[JointGroup, ...]
    held: Mapping[str, float] = field(default_factory=dict)
    ft_sensors: tuple[FTSpec, ...] = ()
    imu: ImuSpec | None = None
    window: tuple[float, float] | None = None
    intervals: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    train: str | None = None
    held_out: str | None = None
    held_out_from: float | None = None
    source: str = "input description"

    @classmethod
    def from_yaml(cls, path: str | Path) -> InputDescription:
        """The description in the YAML file ``path``; files are relative to its directory."""
        import yaml

        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text())
        except (OSError, UnicodeDecodeError) as e:
            raise DataError(f"{path}: cannot read: {e}") from None
        except yaml.YAMLError as e:
            raise DataError(f"{path}: not YAML: {e}".replace("\n", " ")) from None
        return cls.from_mapping(data, path.parent, str(path))

    @classmethod
    def from_mapping(cls, data: object, base: Path, source: str) -> InputDescription:
        """The description in the parsed YAML ``data``; relative files under ``base``."""
        reader = _Reader(source)
        top = reader.mapping(data, "the description")
        reader.known(
            top,
            "the description",
            (
                "streams",
                "joints",
                "ft_sensors",
                "imu",
                "window",
                "intervals",
                "train",
                "held_out",
                "held_out_from",
            ),
        )
        streams_data = reader.mapping(top.get("streams"), "streams")
        if not streams_data:
            raise DataError(f"{source}: 'streams' lists no stream")
        streams = {
            str(name): reader.stream(str(name), spec, base) for name, spec in streams_data.items()
        }
        first = next(iter(streams))
        groups_data = top.get("joints")
        if groups_data is None:
            raise DataError(f"{source}: 'joints' is missing (where the joint signals are)")
        groups, held = [], {}
        listed = groups_data if isinstance(groups_data, list) else [groups_data]
        for k, group in enumerate(listed):
            key = f"joints[{k}]" if isinstance(groups_data, list) else "joints"
            group, group_held = reader.joint_group(group, key, first, streams)
            groups.append(group)
            held.update(group_held)
        ft = tuple(
            reader.ft_sensor(k, item, streams)
            for k, item in enumerate(reader.sequence(top.get("ft_sensors", []), "ft_sensors"))
        )
        imu = None if top.get("imu") is None else reader.imu(top["imu"], streams)
        intervals = {
            str(k): reader.interval(v, f"intervals.{k}")
            for k, v in reader.mapping(top.get("intervals", {}), "intervals").items()
        }
        for key in ("train", "held_out"):
            if top.get(key) is not None and str(top[key]) not in intervals:
                raise DataError(
                    f"{source}: {key}: {top[key]!r} is not one of the intervals {sorted(intervals)}"
                )
        return cls(
            streams=streams,
            joints=tuple(groups),
            held=held,
            ft_sensors=ft,
            imu=imu,
            window=None if top.get("window") is None else reader.interval(top["window"], "window"),
            intervals=intervals,
            train=None if top.get("train") is None else str(top["train"]),
            held_out=None if top.get("held_out") is None else str(top["held_out"]),
            held_out_from=None
            if top.get("held_out_from") is None
            else reader.number(top["held_out_from"], "held_out_from"),
            source=source,
        )

    @classmethod
    def from_canonical(
        cls,
        path: str | Path,
        time_unit: str | None = None,
        angle_unit: str | None = None,
        sensor_frame: str | None = None,
    ) -> InputDescription:
        """A canonical NPZ/CSV file (:mod:`inertia_id_ros.formats.data`) with the command-line
        flags' units: ``t`` in ``time_unit`` (default s), joint signals in ``angle_unit``
        (default rad); its ``wrench`` are the F/T sensor ``sensor_frame``'s (taken as
        recorded)."""
        stream = StreamSpec("data", Path(path), time="t", time_unit=time_unit or "s")
        ft = (
            ()
            if sensor_frame is None
            else (FTSpec(sensor_frame, "data", key=WRENCH_KEY, sign="keep"),)
        )
        return cls(
            {"data": stream},
            (_canonical_group("data", angle_unit),),
            ft_sensors=ft,
            source=str(path),
        )

    @classmethod
    def from_bag(
        cls,
        path: str | Path,
        joint_states_topic: str,
        angle_unit: str | None = None,
        wrench_topic: str | None = None,
        sensor_frame: str | None = None,
    ) -> InputDescription:
        """A bag's JointState topic (and the WrenchStamped topic of the F/T sensor
        ``sensor_frame``, taken as recorded), with the command-line flags' angle unit."""
        streams = {"joint_states": StreamSpec("joint_states", Path(path), joint_states_topic)}
        ft: tuple[FTSpec, ...] = ()
        if wrench_topic is not None and sensor_frame is not None:
            streams["wrench"] = StreamSpec("wrench", Path(path), wrench_topic)
            ft = (FTSpec(sensor_frame, "wrench", sign="keep"),)
        return cls(
            streams,
            (_canonical_group("joint_states", angle_unit),),
            ft_sensors=ft,
            source=str(path),
        )

    def with_flags(
        self,
        t_start: float | None = None,
        t_end: float | None = None,
        held_out_from: float | None = None,
        held: Mapping[str, float] | None = None,
    ) -> InputDescription:
        """This description with the command-line window, split and held joints (given ones
        override the description's)."""
        window = self.window
        if t_start is not None or t_end is not None:
            start, end = window or (0.0, math.inf)
            window = (start if t_start is None else t_start, end if t_end is None else t_end)
            if not window[0] < window[1]:
                raise DataError(
                    f"{self.source}: the window [{window[0]}, {window[1]}] s is "
                    "empty (--t-start must be before --t-end)"
                )
        return replace(
            self,
            window=window,
            held_out_from=self.held_out_from if held_out_from is None else held_out_from,
            held={**self.held, **(held or {})},
        )


def _canonical_group(stream: str, angle_unit: str | None) -> JointGroup:
    """The joints of a canonical file or JointState topic (keys ``q``, ``dq``, ``ddq``,
    ``effort``; all but ``q`` optional), angles in ``angle_unit`` (default rad), efforts in
    N·m."""
    return JointGroup(
        {
            kind: SignalSpec(
                stream,
                key=_DEFAULT_KEYS[kind],
                unit="N·m" if kind == "effort" else angle_unit or "rad",
            )
            for kind in JOINT_SIGNALS
        },
        optional=frozenset(JOINT_SIGNALS[1:]),
    )


class _Reader:
    """Checks the parsed YAML, naming the description and the key in every error."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, message: str) -> DataError:
        return DataError(f"{self.source}: {message}")

    def mapping(self, value: object, key: str) -> dict:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(f"{key} must be a mapping (key: value), got {type(value).__name__}")
        return value

    def sequence(self, value: object, key: str) -> list:
        if not isinstance(value, list):
            raise self.fail(f"{key} must be a list, got {type(value).__name__}")
        return value

    def known(self, data: dict, key: str, keys: Sequence[str]) -> None:
        unknown = sorted(str(k) for k in data if k not in keys)
        if unknown:
            raise self.fail(f"{key}: unknown key(s) {unknown}; known: {', '.join(keys)}")

    def number(self, value: object, key: str) -> float:
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
        ):
            raise self.fail(f"{key} must be a finite number, got {value!r}")
        return float(value)

    def choice(self, value: object, key: str, choices: Sequence[str]) -> str:
        if str(value) not in choices:
            raise self.fail(f"{key}: {value!r} is not one of {', '.join(choices)}")
        return str(value)

    def interval(self, value: object, key: str) -> tuple[float, float]:
        if not isinstance(value, list) or len(value) != 2:
            raise self.fail(
                f"{key} must be [start, end] (s after the first joint sample), got {value!r}"
            )
        start, end = (self.number(v, key) for v in value)
        if not start < end:
            raise self.fail(f"{key} [{start}, {end}] is empty (start must be before end)")
        return start, end

    def stream_name(self, value: object, streams: Mapping[str, StreamSpec], key: str) -> str:
        if str(value) not in streams:
            raise self.fail(f"{key}: no stream {value!r} (streams: {', '.join(streams)})")
        return str(value)

    def stream(self, name: str, value: object, base: Path) -> StreamSpec:
        key = f"streams.{name}"
        spec = self.mapping(value, key)
        self.known(
            spec,
            key,
            ("file", "topic", "time", "time_unit", "rate", "offset", "delimiter", "header"),
        )
        if "file" not in spec:
            raise self.fail(f"{key}: no 'file'")
        path = Path(str(spec["file"]))
        path = path if path.is_absolute() else base / path
        topic = None if spec.get("topic") is None else str(spec["topic"])
        bag = topic is not None
        if not bag and (path.is_dir() or path.suffix in BAG_SUFFIXES):
            raise self.fail(f"{key}: {path} is a ROS 2 bag: give its 'topic'")
        if bag and any(spec.get(k) is not None for k in ("time", "time_unit", "rate")):
            raise self.fail(
                f"{key}: a bag topic's stamps are its header stamps (s); 'time', "
                "'time_unit' and 'rate' apply to CSV and NPZ files"
            )
        time = None if spec.get("time") is None else str(spec["time"])
        rate = None if spec.get("rate") is None else self.number(spec["rate"], f"{key}.rate")
        if not bag and (time is None) == (rate is None):
            raise self.fail(
                f"{key}: give either 'time' (the stamps' column or key, with "
                "'time_unit') or 'rate' (Hz, samples evenly spaced)"
            )
        if rate is not None and not rate > 0:
            raise self.fail(f"{key}.rate must be > 0 Hz, got {rate}")
        unit = (
            None
            if spec.get("time_unit") is None
            else self.choice(spec["time_unit"], f"{key}.time_unit", TIME_UNITS)
        )
        header = spec.get("header")
        if header is not None:
            header = tuple(str(c) for c in self.sequence(header, f"{key}.header"))
        return StreamSpec(
            name,
            path,
            topic,
            time,
            unit,
            rate,
            self.number(spec.get("offset", 0.0), f"{key}.offset"),
            str(spec.get("delimiter", ",")),
            header,
        )

    def joint_group(
        self, value: object, key: str, first: str, streams: Mapping[str, StreamSpec]
    ) -> tuple[JointGroup, dict[str, float]]:
        joints = self.mapping(value, key)
        self.known(joints, key, ("stream", "names", "held", *JOINT_SIGNALS, *TARGET_SIGNALS))
        stream = self.stream_name(joints.get("stream", first), streams, f"{key}.stream")
        names = joints.get("names")
        signals = {
            kind: self.signal(kind, joints[kind], stream, streams, f"{key}.{kind}")
            for kind in (*JOINT_SIGNALS, *TARGET_SIGNALS)
            if joints.get(kind) is not None
        }
        if "position" not in signals:
            raise self.fail(
                f"{key}.position is missing (where the joint positions are: key or "
                "columns, and unit)"
            )
        signals.update(
            {
                kind: replace(signals[kind], unit=signals["position"].unit)
                for kind in ("velocity", "acceleration")
                if kind in signals and signals[kind].unit is None
            }
        )
        held = {
            str(k): self.number(v, f"{key}.held.{k}")
            for k, v in self.mapping(joints.get("held", {}), f"{key}.held").items()
        }
        return JointGroup(signals, None if names is None else self.joint_names(names, key)), held

    def joint_names(self, value: object, key: str) -> tuple[tuple[str, str], ...]:
        if isinstance(value, list):
            pairs = [(str(v), str(v)) for v in value]
        elif isinstance(value, dict):
            pairs = [(str(k), str(v)) for k, v in value.items()]
        else:
            raise self.fail(
                f"{key}.names must be a list of joint names or a mapping log name "
                f"-> URDF joint, got {type(value).__name__}"
            )
        urdf = [u for _, u in pairs]
        twice = sorted({u for u in urdf if urdf.count(u) > 1})
        if twice:
            raise self.fail(f"{key}.names maps several log joints to {twice}")
        return tuple(pairs)

    def per_joint(self, value: object, key: str) -> dict[str, float] | float:
        if isinstance(value, dict):
            return {str(k): self.number(v, f"{key}.{k}") for k, v in value.items()}
        return self.number(value, key)

    def signal(
        self, kind: str, value: object, stream: str, streams: Mapping[str, StreamSpec], key: str
    ) -> SignalSpec:
        spec = self.mapping(value, key)
        self.known(
            spec, key, ("stream", "key", "columns", "unit", "torque_constant", "gear_ratio", "sign")
        )
        stream = self.stream_name(spec.get("stream", stream), streams, f"{key}.stream")
        columns = spec.get("columns")
        if isinstance(columns, list):
            columns = tuple(str(c) for c in columns)
        elif columns is not None:
            columns = str(columns)
        if not streams[stream].is_bag and (columns is None) == (spec.get("key") is None):
            raise self.fail(
                f"{key}: give either 'key' (an (N, n) array) or 'columns' (one per "
                "joint, or a pattern with {joint})"
            )
        units = EFFORT_SCALE if kind in ("effort", *TARGET_SIGNALS) else POSITION_SCALE
        if "unit" not in spec and kind in ("position", "effort", *TARGET_SIGNALS):
            raise self.fail(f"{key}: no 'unit' ({', '.join(units)}); units are never guessed")
        unit = (
            None
            if spec.get("unit") is None
            else self.choice(spec["unit"], f"{key}.unit", tuple(units))
        )
        electrical = {name: spec.get(name) for name in ("torque_constant", "gear_ratio")}
        if unit == "A" and kind == "effort" and electrical["torque_constant"] is None:
            raise self.fail(
                f"{key}: unit A (motor currents) needs torque_constant (N·m/A, per "
                "joint or one for all) and optionally gear_ratio"
            )
        if unit != "A" and any(v is not None for v in electrical.values()):
            raise self.fail(f"{key}: torque_constant and gear_ratio apply to unit A")
        torque_constant, gear_ratio, sign = (
            {} if v is None else self.per_joint(v, f"{key}.{name}")
            for name, v in (*electrical.items(), ("sign", spec.get("sign")))
        )
        return SignalSpec(
            stream,
            None if spec.get("key") is None else str(spec["key"]),
            columns,
            unit,
            torque_constant,
            gear_ratio,
            sign,
        )

    def ft_sensor(self, index: int, value: object, streams: Mapping[str, StreamSpec]) -> FTSpec:
        key = f"ft_sensors[{index}]"
        spec = self.mapping(value, key)
        self.known(spec, key, ("frame", "kind", "stream", "columns", "key", "sign", "frame_id"))
        if "frame" not in spec or "stream" not in spec:
            raise self.fail(f"{key}: needs 'frame' (the URDF frame) and 'stream'")
        stream = self.stream_name(spec["stream"], streams, f"{key}.stream")
        columns = spec.get("columns")
        if columns is not None:
            columns = tuple(str(c) for c in self.sequence(columns, f"{key}.columns"))
            if len(columns) != len(WRENCH_CHANNEL_NAMES):
                raise self.fail(
                    f"{key}.columns must name 6 columns [fx, fy, fz, tx, ty, tz], "
                    f"got {len(columns)}"
                )
        if not streams[stream].is_bag and (columns is None) == (spec.get("key") is None):
            raise self.fail(f"{key}: give either 'columns' (6) or 'key' (an (N, 6) array)")
        return FTSpec(
            str(spec["frame"]),
            stream,
            self.choice(spec.get("kind", "internal"), f"{key}.kind", SENSOR_KINDS),
            columns,
            None if spec.get("key") is None else str(spec["key"]),
            self.choice(spec.get("sign", "urdf"), f"{key}.sign", WRENCH_SIGNS),
            None if spec.get("frame_id") is None else str(spec["frame_id"]),
        )

    def imu(self, value: object, streams: Mapping[str, StreamSpec]) -> ImuSpec:
        spec = self.mapping(value, "imu")
        self.known(spec, "imu", ("frame", "stream", "angular_velocity_unit", *IMU_KEYS))
        if "frame" not in spec or "stream" not in spec:
            raise self.fail("imu: needs 'frame' (the URDF frame) and 'stream'")
        stream = self.stream_name(spec["stream"], streams, "imu.stream")
        signals: dict[str, str | tuple[str, ...]] = {}
        for name in IMU_KEYS:
            if spec.get(name) is None:
                if not streams[stream].is_bag:
                    raise self.fail(f"imu.{name}: missing (a key, or {IMU_WIDTHS[name]} columns)")
                continue
            item = spec[name]
            signals[name] = tuple(str(c) for c in item) if isinstance(item, list) else str(item)
        unit = self.choice(
            spec.get("angular_velocity_unit", "rad"), "imu.angular_velocity_unit", ANGLE_UNITS
        )
        return ImuSpec(str(spec["frame"]), stream, signals, unit)


# ---- reading the streams ------------------------------------------------------------------


@dataclass(frozen=True)
class _Stream:
    """A read stream: stamps ``t`` (N,) s (offset applied), ``table`` of its columns or keys,
    ``joint_names`` (bags, canonical files), ``frame`` (WrenchStamped, Imu)."""

    spec: StreamSpec
    t: np.ndarray
    table: dict[str, np.ndarray]
    joint_names: tuple[str, ...] | None = None
    frame: str = ""

    @property
    def label(self) -> str:
        where = f"{self.spec.file}" + (f" topic {self.spec.topic}" if self.spec.topic else "")
        return f"stream {self.spec.name!r} ({where})"


def _read_columns(
    path: Path, delimiter: str, header: Sequence[str] | None = None
) -> dict[str, np.ndarray]:
    """A delimited text table as {column: values}: the names from its first row, or ``header``
    for a file without one; lines starting with ``#`` are comments; a value that is not a number
    is NaN (refused only in a column that is used)."""
    try:
        lines = [
            line
            for line in path.read_text().splitlines()
            if line.strip() and not line.lstrip().startswith("#")
        ]
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"{path}: cannot read: {e}") from None
    if header is not None:
        lines = ["", *lines]  # the names are given: every line is data
        header = list(header)
    elif not lines:
        raise DataError(f"{path}: no header row")
    else:
        header = [name.strip() for name in next(csv.reader(lines[:1], delimiter=delimiter))]
    twice = sorted({name for name in header if header.count(name) > 1})
    if twice:
        raise DataError(f"{path}: column(s) {twice} appear more than once")
    if len(lines) == 1:
        raise DataError(f"{path}: no data rows")
    try:  # all numbers: numpy's parser (several times faster than csv + float)
        values = np.loadtxt(lines[1:], delimiter=delimiter, quotechar='"', ndmin=2)
        if values.shape[1] == len(header):
            return {name: values[:, i] for i, name in enumerate(header)}
    except ValueError:
        pass  # text columns or rows of other lengths: the csv module's reading names them
    rows = list(csv.reader(lines[1:], delimiter=delimiter))
    for k, row in enumerate(rows):
        if len(row) != len(header):
            raise DataError(
                f"{path}: data row {k + 1} has {len(row)} values, the header "
                f"{len(header)} (delimiter {delimiter!r})"
            )
    columns = list(zip(*rows)) or [()] * len(header)
    return {name: _numbers(column) for name, column in zip(header, columns)}


def _numbers(texts: Sequence[str]) -> np.ndarray:
    """``texts`` as floats (one conversion in C), a text that is not a number as NaN."""
    try:
        return np.array(texts, dtype=float)
    except ValueError:
        out = np.full(len(texts), np.nan)
        for i, text in enumerate(texts):
            try:
                out[i] = float(text)
            except ValueError:
                pass
        return out


def _stamps(spec: StreamSpec, raw: np.ndarray | None, n: int, label: str) -> np.ndarray:
    """Stamps in s (with the stream's offset) from a time column in its unit, or the rate."""
    if raw is None:
        assert spec.rate is not None  # a stream without a time column has a rate
        t = np.arange(n) / spec.rate
    else:
        raw = np.asarray(raw, dtype=float)
        if raw.ndim != 1 or raw.size != n:
            raise DataError(f"{label}: time {spec.time!r} has shape {raw.shape}, expected ({n},)")
        if not np.all(np.isfinite(raw)):
            raise DataError(
                f"{label}: time {spec.time!r} has values that are not numbers "
                f"(first at sample {int(np.argmax(~np.isfinite(raw)))})"
            )
        if spec.time_unit is None:
            findings = check_time_units(raw, "")
            guess = (findings[0].message if findings else "seconds?") if n > 1 else ""
            raise DataError(
                f"{label}: time {spec.time!r} has no unit ({guess}); give time_unit "
                f"({', '.join(TIME_UNITS)})"
            )
        t = raw * TIME_SCALE[spec.time_unit]
        findings = check_time_units(t, "")
        if findings:
            raise DataError(
                f"{label}: time {spec.time!r} in {spec.time_unit}: {findings[0].message}"
            )
    steps = np.diff(t)
    if np.any(steps <= 0):
        k = int(np.argmax(steps <= 0))
        raise DataError(
            f"{label}: stamps must be strictly increasing; sample {k + 1} "
            f"({t[k + 1]:.9f} s) does not come after sample {k} ({t[k]:.9f} s)"
        )
    return t + spec.offset


def _read_bag_stream(spec: StreamSpec) -> _Stream:
    """A JointState (keys q, dq, effort), WrenchStamped (wrench) or Imu (IMU_KEYS) topic."""
    from rosbags.highlevel import AnyReader, AnyReaderError
    from rosbags.typesys import Stores, get_typestore

    try:
        with AnyReader([spec.file], default_typestore=get_typestore(Stores.ROS2_KILTED)) as reader:
            types = {c.topic: c.msgtype for c in reader.connections}
    except (AnyReaderError, OSError, KeyError, ValueError, AssertionError) as e:
        raise DataError(
            f"{spec.file}: cannot read as a ROS 2 bag: {e}".replace("\n", " ")
        ) from None
    msgtype = types.get(spec.topic or "")
    if msgtype is None or msgtype not in (JOINT_STATE_TYPE, WRENCH_TYPE, IMU_TYPE):
        listing = ", ".join(f"{t} ({m})" for t, m in sorted(types.items()))
        raise DataError(
            f"stream {spec.name!r}: topic {spec.topic!r} of {spec.file} "
            + ("is not in the bag" if msgtype is None else f"carries {msgtype}")
            + f"; JointState, WrenchStamped or Imu topics are read (the bag has: "
            f"{listing})"
        )
    msgs = [m for _, _, m in iter_bag_messages(spec.file, [(spec.topic or "", msgtype)])]
    t = np.array([header_seconds(m.header) for m in msgs])
    order = np.argsort(t, kind="stable")
    msgs = [msgs[k] for k in order]
    label = f"stream {spec.name!r} ({spec.file} topic {spec.topic})"
    t = _stamps(replace(spec, time="header.stamp", time_unit="s"), t[order], len(msgs), label)
    frames = sorted({m.header.frame_id for m in msgs})
    if msgtype == WRENCH_TYPE:
        return _Stream(
            spec,
            t,
            {WRENCH_KEY: np.array([wrench_values(m) for m in msgs])},
            frame=frames[0] if len(frames) == 1 else "",
        )
    if msgtype == IMU_TYPE:
        imu_table = {
            "orientation": np.array(
                [[m.orientation.x, m.orientation.y, m.orientation.z, m.orientation.w] for m in msgs]
            ),
            "angular_velocity": np.array(
                [[m.angular_velocity.x, m.angular_velocity.y, m.angular_velocity.z] for m in msgs]
            ),
            "linear_acceleration": np.array(
                [
                    [m.linear_acceleration.x, m.linear_acceleration.y, m.linear_acceleration.z]
                    for m in msgs
                ]
            ),
        }
        return _Stream(spec, t, imu_table, frame=frames[0] if len(frames) == 1 else "")
    names = tuple(msgs[0].name)
    table: dict[str, np.ndarray] = {}
    for key, attribute in (("q", "position"), ("dq", "velocity"), ("effort", "effort")):
        rows = []
        for k, msg in enumerate(msgs):
            if sorted(msg.name) != sorted(names):
                raise DataError(
                    f"{label}: message {k} names joints {list(msg.name)}, the first "
                    f"{list(names)}; every message must name the same joints"
                )
            values = np.asarray(getattr(msg, attribute), dtype=float)
            if values.size != len(names):
                break
            row = np.empty(len(names))
            row[[names.index(n) for n in msg.name]] = values
            rows.append(row)
        if len(rows) == len(msgs):
            table[key] = np.array(rows)
        elif key == "q":
            raise DataError(
                f"{label}: message {len(rows)} has {len(names)} names and not as many positions"
            )
    return _Stream(spec, t, table, joint_names=names)


def _read_stream(spec: StreamSpec) -> _Stream:
    if spec.is_bag:
        if not spec.file.exists():
            raise DataError(f"stream {spec.name!r}: {spec.file}: no such bag")
        return _read_bag_stream(spec)
    label = f"stream {spec.name!r} ({spec.file})"
    if not spec.file.is_file():
        raise DataError(f"{label}: no such file")
    suffix = spec.file.suffix.lower()
    names = None
    if suffix == ".csv" and spec.time == "t" and _is_canonical_csv(spec.file):
        _, raw = _read_table(spec.file)
        names = tuple(str(n) for n in np.atleast_1d(np.asarray(raw.pop("joint_names"))))
    elif suffix == ".npz":
        _, raw = _read_table(spec.file)
        if "joint_names" in raw:
            names = tuple(str(n) for n in np.atleast_1d(np.asarray(raw.pop("joint_names"))))
    else:  # .csv, .txt, .log, ...: a delimited text table with a header row
        raw = _read_columns(spec.file, spec.delimiter, spec.header)
    table = {
        k: np.asarray(v)
        for k, v in raw.items()
        if np.asarray(v).dtype.kind in "fiub" and np.asarray(v).ndim > 0
    }
    if not table:
        raise DataError(f"{label}: no numeric columns")
    n = next(iter(table.values())).shape[0]
    if spec.time is not None and spec.time not in table:
        raise DataError(
            f"{label}: no time column or key {spec.time!r} (has {', '.join(sorted(table))})"
        )
    raw_t = None if spec.time is None else table.pop(spec.time)
    n = n if raw_t is None else raw_t.shape[0]
    return _Stream(
        spec,
        _stamps(spec, raw_t, n, label),
        table,
        joint_names=names,
        frame=str(np.asarray(raw.get("wrench_frame", ""))),
    )


def _is_canonical_csv(path: Path) -> bool:
    """Whether the CSV has the canonical ``q:<joint>`` columns (read by io.data)."""
    try:
        with path.open() as f:
            for line in f:
                if line.strip() and not line.lstrip().startswith("#"):
                    return any(c.strip().startswith("q:") for c in line.split(","))
    except (OSError, UnicodeDecodeError):
        return False
    return False


def _columns(
    stream: _Stream,
    key: str | None,
    columns: str | tuple[str, ...] | None,
    log_names: Sequence[str],
    width: int | None,
    what: str,
) -> np.ndarray:
    """(N, k) values of ``key`` or ``columns`` (a pattern with ``{joint}`` over ``log_names``);
    refuses a missing column, a wrong shape or a value that is not a finite number."""
    n = stream.t.size
    if isinstance(columns, str):
        columns = (
            tuple(columns.format(joint=name) for name in log_names)
            if "{joint}" in columns
            else (columns,)
        )
    if columns is not None:
        missing = [c for c in columns if c not in stream.table]
        if missing:
            raise DataError(
                f"{stream.label}: {what}: no column(s) {missing} (has "
                f"{', '.join(sorted(stream.table))})"
            )
        values = np.column_stack([stream.table[c] for c in columns]).astype(float)
    else:
        if key not in stream.table:
            raise DataError(
                f"{stream.label}: {what}: no key {key!r} (has {', '.join(sorted(stream.table))})"
            )
        values = np.asarray(stream.table[key], dtype=float)
        values = values[:, None] if values.ndim == 1 else values
    expected = width if width is not None else len(log_names)
    if values.shape != (n, expected):
        raise DataError(
            f"{stream.label}: {what} has shape {values.shape}, expected ({n}, {expected})"
        )
    bad = ~np.isfinite(values)
    if bad.any():
        row, col = (int(i) for i in np.argwhere(bad)[0])
        raise DataError(
            f"{stream.label}: {what} has a value that is not a finite number "
            f"(sample {row}, column {col})"
        )
    return values


# ---- the loaded recording -----------------------------------------------------------------


@dataclass(frozen=True)
class ImuSamples:
    """IMU samples at their own stamps ``t`` (M,) s: ``frame`` and
    :data:`~inertia_id_ros.formats.whole_body_log.IMU_KEYS`-keyed arrays (M, 4 / 3 / 3)."""

    t: np.ndarray
    frame: str
    values: dict[str, np.ndarray]


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
    stream: _Stream,
    signal: SignalSpec,
    kind: str,
    all_log_names: Sequence[str],
    log_names: Sequence[str],
) -> np.ndarray:
    """(N, n) SI values of ``kind`` for the log joints ``log_names`` (the mapped ones of
    ``all_log_names``, the columns of an (N, n) key without the stream's own names)."""
    if signal.columns is not None:
        values = _columns(stream, None, signal.columns, log_names, None, f"joint {kind}s")
    else:
        available = stream.joint_names or tuple(all_log_names)
        values = _columns(
            stream, signal.key or _DEFAULT_KEYS[kind], None, available, None, f"joint {kind}s"
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
                _per_joint(signal.torque_constant, name, None, "torque_constant", stream.label)
                * _per_joint(signal.gear_ratio, name, 1.0, "gear_ratio", stream.label)
                for name in log_names
            ]
            values = values * np.array(constants)
    else:
        values = values * POSITION_SCALE[signal.unit or "rad"]
    signs = np.array(
        [_per_joint(signal.sign, name, 1.0, "sign", stream.label) for name in log_names]
    )
    return values * signs


def _per_joint(
    value: Mapping[str, float] | float, name: str, default: float | None, key: str, label: str
) -> float:
    if not isinstance(value, Mapping):
        return float(value)
    if name in value:
        return float(value[name])
    if default is None:
        raise DataError(f"{label}: {key} gives no value for joint {name!r}")
    return default


def load_recording(
    description: InputDescription, model_joint_names: Sequence[str], urdf: str | Path | None = None
) -> Recording:
    """The log of ``description`` for a robot with joints ``model_joint_names`` (URDF
    ``urdf`` for the F/T signs): joint signals in SI on the position stream's stamps (other
    streams' joint signals interpolated, the span cropped to where all overlap), joints not in
    the URDF ignored (noted), F/T sensors and IMU on their own stamps, then the window.
    Raises :class:`DataError` naming the stream and key."""
    source, notes = description.source, []
    read: dict[str, _Stream] = {}

    def stream(name: str) -> _Stream:
        if name not in read:
            read[name] = _read_stream(description.streams[name])
        return read[name]

    reference = stream(description.joints[0].signals["position"].stream)
    known = set(model_joint_names)
    groups = []  # (group, all log names, kept log names, URDF names)
    for group in description.joints:
        position_stream = stream(group.signals["position"].stream)
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
        groups.append(
            (group, [log for log, _ in pairs], [p[0] for p in kept], [p[1] for p in kept])
        )
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
        raise DataError(f"{source}: held joints {unknown_held} are not in the URDF")
    t = reference.t
    lo, hi = t[0], t[-1]
    for group in description.joints:
        for signal in group.signals.values():
            lo, hi = max(lo, stream(signal.stream).t[0]), min(hi, stream(signal.stream).t[-1])
    if not lo < hi:
        spans = ", ".join(f"{s.spec.name!r} [{s.t[0]:.3f}, {s.t[-1]:.3f}] s" for s in read.values())
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
    for group, all_log_names, log_names, _ in groups:
        for kind, signal in group.signals.items():
            if kind not in JOINT_SIGNALS:  # TARGET_SIGNALS: read as the effort by their user
                continue
            other = stream(signal.stream)
            if kind in group.optional and (signal.key or _DEFAULT_KEYS[kind]) not in other.table:
                continue
            values = _joint_signal(other, signal, kind, all_log_names, log_names)
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
    states = JointStates(
        t[keep],
        tuple(urdf_names),
        arrays["position"],
        arrays.get("velocity"),
        arrays.get("acceleration"),
        arrays.get("effort"),
    )
    conventions = {} if urdf is None or not description.ft_sensors else read_ft_conventions(urdf)
    wrenches, kinds = {}, {}
    for spec in description.ft_sensors:
        ft_stream = stream(spec.stream)
        values = _columns(
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
        wrenches[spec.frame] = Wrenches(ft_stream.t, sign * values, spec.frame)
        kinds[spec.frame] = spec.kind
    imu = None
    if description.imu is not None:
        imu_spec = description.imu
        imu_stream = stream(imu_spec.stream)
        imu_values = {}
        for name in IMU_KEYS:
            item = imu_spec.signals.get(name, name)
            imu_values[name] = _columns(
                imu_stream,
                item if isinstance(item, str) else None,
                item if isinstance(item, tuple) else None,
                (),
                IMU_WIDTHS[name],
                f"IMU {name}",
            )
        imu_values["angular_velocity"] *= POSITION_SCALE[imu_spec.angle_unit]
        imu = ImuSamples(imu_stream.t, imu_spec.frame, imu_values)
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
        source,
        dict(description.held),
        tuple(notes),
        float(states.t[0]),
    )
    if description.window is not None:
        recording = recording.window(*description.window)
    return recording


def split_recording(
    recording: Recording, description: InputDescription
) -> tuple[Recording, Recording | None]:
    """``(train, held_out)``: the description's ``train`` interval (default: the recording) and
    its ``held_out`` interval, or the parts before and from ``held_out_from`` (``None``
    without a split)."""
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


def rows_moved_by(
    model: WholeBodyModel,
    samples: WholeBodySamples,
    joints: Sequence[str],
    with_efforts: bool = False,
) -> list[str]:
    """The channels (:meth:`~inertia_id_ros.core.whole_body_model.WholeBodyModel.channels`) whose
    rows change when ``joints`` move: their velocities and accelerations set to 1 on a few samples
    instead of 0. A held joint (not logged) must move none of the rows a fit uses."""
    index = [model.joint_names.index(j) for j in joints]
    if not index:
        return []
    probe = samples.subset(slice(0, min(3, len(samples))))
    moved = WholeBodySamples(
        probe.q, probe.dq.copy(), probe.ddq.copy(), probe.base, probe.wrenches, probe.efforts
    )
    moved.dq[:, index] += 1.0
    moved.ddq[:, index] += 1.0
    (Y0, b0, channels), (Y1, b1, _) = (model.rows(s, with_efforts) for s in (probe, moved))
    n, c = len(probe), len(channels)
    changed = (
        np.abs(Y1 - Y0).reshape(n, c, -1).max(axis=(0, 2))
        + np.abs(b1 - b0).reshape(n, c).max(axis=0)
    ) > 1e-9
    return [channel for channel, hit in zip(channels, changed) if hit]


def joints_coupled(
    model: pin.Model, positions: Mapping[str, float], fitted: Sequence[str], held: Sequence[str]
) -> list[str]:
    """The ``held`` joints whose motion enters the torques of the ``fitted`` joints: a nonzero
    block ``M[fitted, held]`` of the joint-space inertia matrix (``pin.crba``) at ``positions``
    (name -> rad or m; the others neutral). Joints on other branches (another arm) are not
    coupled."""
    import pinocchio as pin

    from inertia_id_ros.core.robots import configuration, joint_id

    data = model.createData()
    inertia = pin.crba(model, data, configuration(model, positions))
    rows = [model.joints[joint_id(model, j)].idx_v for j in fitted]
    scale = max(float(np.abs(np.diag(inertia)).max()), 1e-12)
    return [
        j
        for j in held
        if np.abs(inertia[rows, model.joints[joint_id(model, j)].idx_v]).max() > 1e-9 * scale
    ]
