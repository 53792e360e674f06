"""Real logs in without code: an input description (YAML, or the equivalent command-line flags)
says where each signal of a log is and in which units and clocks;
:func:`~inertia_id_ros.formats.recording.load_recording` turns it into the arrays the fits take
(:class:`~inertia_id_ros.formats.data.JointStates`,
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

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from inertia_id_ros.core.regressors import WRENCH_CHANNEL_NAMES
from inertia_id_ros.core.whole_body_model import SENSOR_KINDS
from inertia_id_ros.errors import DataError
from inertia_id_ros.options import (
    ANGLE_UNITS,
    JOINT_SIGNALS,
    TARGET_SIGNALS,
    TIME_UNITS,
    WRENCH_SIGNS,
)

if TYPE_CHECKING:
    pass

TIME_SCALE = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
"""Seconds per unit of :data:`~inertia_id_ros.options.TIME_UNITS`."""
POSITION_SCALE = {"rad": 1.0, "deg": math.pi / 180.0, "m": 1.0, "mm": 1e-3}
"""SI units (rad or m) per unit of a joint signal (its time derivatives per s, per s²)."""
EFFORT_SCALE = {"N·m": 1.0, "Nm": 1.0, "N m": 1.0, "N": 1.0, "A": 1.0}
"""Effort units; ``A``: a motor current, times ``torque_constant`` (N·m/A) × ``gear_ratio``."""
BAG_SUFFIXES = (".mcap", ".db3")
WRENCH_KEY, IMU_KEYS = "wrench", ("orientation", "angular_velocity", "linear_acceleration")
CANONICAL_SIGNAL_KEYS = {
    "position": "q",
    "velocity": "dq",
    "acceleration": "ddq",
    "effort": "effort",
}
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
                key=CANONICAL_SIGNAL_KEYS[kind],
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
