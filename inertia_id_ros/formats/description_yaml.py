"""Reading an input description's YAML (:class:`~inertia_id_ros.formats.description.
InputDescription`): every key checked, every error naming the description and the key
(:class:`_Reader`); the keys are described in ``docs/how-to/real-logs.md``."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from inertia_id_ros.core.regressors import WRENCH_CHANNEL_NAMES
from inertia_id_ros.core.whole_body_model import SENSOR_KINDS
from inertia_id_ros.errors import DataError
from inertia_id_ros.formats.description import (
    BAG_SUFFIXES,
    EFFORT_SCALE,
    IMU_KEYS,
    IMU_WIDTHS,
    POSITION_SCALE,
    FTSpec,
    ImuSpec,
    InputDescription,
    JointGroup,
    SignalSpec,
    StampWindow,
    StreamSpec,
    Window,
)
from inertia_id_ros.formats.runs import RunSpec
from inertia_id_ros.formats.transmission import TransmissionSpec
from inertia_id_ros.options import (
    ANGLE_UNITS,
    JOINT_SIGNALS,
    TARGET_SIGNALS,
    TIME_UNITS,
    WRENCH_SIGNS,
)


def read_description(data: object, base: Path, source: str) -> InputDescription:
    """The description in the parsed YAML ``data`` (``source`` names it in errors); relative
    files under ``base``. Raises :class:`DataError` naming the key."""
    reader = _Reader(source)
    top = reader.mapping(data, "the description")
    if "runs" in top:
        return _read_runs(reader, top, base)
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
        reader.ft_sensor(k, item, streams, base)
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
    return InputDescription(
        streams=streams,
        joints=tuple(groups),
        held=held,
        ft_sensors=ft,
        imu=imu,
        window=None if top.get("window") is None else reader.window(top["window"], "window"),
        intervals=intervals,
        train=None if top.get("train") is None else str(top["train"]),
        held_out=None if top.get("held_out") is None else str(top["held_out"]),
        held_out_from=None
        if top.get("held_out_from") is None
        else reader.number(top["held_out_from"], "held_out_from"),
        source=source,
    )


LAYOUT_KEYS = ("streams", "joints", "ft_sensors", "imu")
"""The keys of a description that say where a log's signals are (shared by its runs)."""
RUN_KEYS = ("name", "file", "files", "description", "window", "time_unit", "angle_unit")
"""The keys of one run of ``runs``."""


def _read_runs(reader: _Reader, top: dict, base: Path) -> InputDescription:
    """A description of several runs (``runs``): each a description, or files in the layout
    of the top-level ``streams`` (``file``: every stream's, ``files``: per stream), or a file or
    bag of this package's layout; each with its ``name`` and ``window``."""
    reader.known(
        top, "the description", (*LAYOUT_KEYS, "window", "held_out_from", "runs", "held_out_runs")
    )
    layout = None
    if any(key in top for key in LAYOUT_KEYS):
        layout = read_description({k: top[k] for k in LAYOUT_KEYS if k in top}, base, reader.source)
    runs = [
        _run(reader, k, item, base, layout)
        for k, item in enumerate(reader.sequence(top["runs"], "runs"))
    ]
    names = [run.name for run in runs]
    if not runs:
        raise reader.fail("runs lists no run")
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise reader.fail(f"runs: several runs are named {twice}: give each a distinct 'name'")
    held_out = tuple(str(n) for n in reader.sequence(top.get("held_out_runs", []), "held_out_runs"))
    unknown = [name for name in held_out if name not in names]
    if unknown:
        raise reader.fail(f"held_out_runs: no run(s) {unknown} (runs: {', '.join(names)})")
    held_out_from = top.get("held_out_from")
    return InputDescription(
        streams={} if layout is None else layout.streams,
        joints=() if layout is None else layout.joints,
        ft_sensors=() if layout is None else layout.ft_sensors,
        window=None if top.get("window") is None else reader.window(top["window"], "window"),
        held_out_from=None
        if held_out_from is None
        else reader.number(held_out_from, "held_out_from"),
        source=reader.source,
        runs=tuple(runs),
        held_out_runs=held_out,
    )


def _run(
    reader: _Reader, index: int, value: object, base: Path, layout: InputDescription | None
) -> RunSpec:
    """The run ``runs[index]`` (see :func:`_read_runs`)."""
    key = f"runs[{index}]"
    spec = reader.mapping(value, key)
    reader.known(spec, key, RUN_KEYS)
    given = [k for k in ("file", "files", "description") if k in spec]
    if len(given) != 1:
        raise reader.fail(
            f"{key}: give one of 'file', 'files' (stream: file) and 'description', got {given}"
        )
    units = (spec.get("time_unit"), spec.get("angle_unit"))
    if any(units) and "file" not in spec or any(units) and layout is not None:
        raise reader.fail(
            f"{key}: time_unit and angle_unit apply to a file of this package's layout "
            "(a description or the streams give their own units)"
        )

    def path(item: object) -> Path:
        p = Path(str(item))
        return p if p.is_absolute() else base / p

    window = None if spec.get("window") is None else reader.window(spec["window"], f"{key}.window")
    if "description" in spec:
        file = path(spec["description"])
        description = InputDescription.from_yaml(file)
        if description.runs:
            raise reader.fail(f"{key}: {file} lists runs itself (runs do not nest)")
        return RunSpec(_run_name(spec, file, base), description, window)
    if layout is not None:
        streams = layout.streams
        files = (
            {name: spec["file"] for name in streams}
            if "file" in spec
            else reader.mapping(spec["files"], f"{key}.files")
        )
        unknown = sorted(str(name) for name in files if name not in streams)
        if unknown:
            raise reader.fail(
                f"{key}.files: no stream(s) {unknown} (streams: {', '.join(streams)})"
            )
        first = path(next(iter(files.values())))
        name = _run_name(spec, first, base)
        replaced = {
            s: replace(stream, file=path(files[s])) if s in files else stream
            for s, stream in streams.items()
        }
        return RunSpec(
            name, replace(layout, streams=replaced, source=f"{reader.source} run {name}"), window
        )
    if "files" in spec:
        raise reader.fail(
            f"{key}.files: replaces the files of the top-level streams; there are none"
        )
    file = path(spec["file"])
    time_unit = (
        None if units[0] is None else reader.choice(units[0], f"{key}.time_unit", TIME_UNITS)
    )
    angle_unit = (
        None if units[1] is None else reader.choice(units[1], f"{key}.angle_unit", ANGLE_UNITS)
    )
    return RunSpec(_run_name(spec, file, base), None, window, (str(file), time_unit, angle_unit))


def _run_name(spec: dict, file: Path, base: Path) -> str:
    """A run's ``name``, else its file relative to the description, without the suffix."""
    if spec.get("name") is not None:
        return str(spec["name"])
    try:
        file = file.relative_to(base)
    except ValueError:
        pass
    return str(file.with_suffix(""))


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

    def interval(
        self, value: object, key: str, unit: str = "s after the first joint sample"
    ) -> tuple[float, float]:
        if not isinstance(value, list) or len(value) != 2:
            raise self.fail(f"{key} must be [start, end] ({unit}), got {value!r}")
        start, end = (self.number(v, key) for v in value)
        if not start < end:
            raise self.fail(f"{key} [{start}, {end}] is empty (start must be before end)")
        return start, end

    def window(self, value: object, key: str) -> Window:
        if isinstance(value, dict):
            self.known(value, key, ("stamps",))
            if "stamps" not in value:
                raise self.fail(f"{key} must be [start, end] or {{stamps: [start, end]}}")
            return StampWindow(
                *self.interval(value["stamps"], f"{key}.stamps", "in the log's stamps")
            )
        return self.interval(value, key)

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
        self.known(
            joints,
            key,
            ("stream", "names", "held", "transmission", *JOINT_SIGNALS, *TARGET_SIGNALS),
        )
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
        transmission = None
        if joints.get("transmission") is not None:
            transmission = self.transmission(joints["transmission"], f"{key}.transmission")
            if transmission.coupling is not None and names is None:
                raise self.fail(f"{key}: a coupling needs 'names' (the order of its rows)")
            effort = signals.get("effort")
            if effort is not None and effort.gear_ratio != {}:
                raise self.fail(
                    f"{key}.effort.gear_ratio: with a transmission, its gear_ratio applies "
                    "(give the gear ratios there)"
                )
        pairs = None if names is None else self.joint_names(names, key)
        return JointGroup(signals, pairs, transmission=transmission), held

    def transmission(self, value: object, key: str) -> TransmissionSpec:
        spec = self.mapping(value, key)
        self.known(spec, key, ("gear_ratio", "coupling", "zero_offset"))
        coupling = spec.get("coupling")
        if coupling is not None:
            rows = self.sequence(coupling, f"{key}.coupling")
            coupling = tuple(
                tuple(
                    self.number(v, f"{key}.coupling") for v in self.sequence(row, f"{key}.coupling")
                )
                for row in rows
            )
        return TransmissionSpec(
            self.per_joint(spec.get("gear_ratio", 1.0), f"{key}.gear_ratio"),
            coupling,
            self.per_joint(spec.get("zero_offset", 0.0), f"{key}.zero_offset"),
        )

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

    def ft_sensor(
        self, index: int, value: object, streams: Mapping[str, StreamSpec], base: Path
    ) -> FTSpec:
        key = f"ft_sensors[{index}]"
        spec = self.mapping(value, key)
        self.known(
            spec,
            key,
            ("frame", "kind", "stream", "columns", "key", "sign", "frame_id", "calibration"),
        )
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
            None if spec.get("calibration") is None else base / str(spec["calibration"]),
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
