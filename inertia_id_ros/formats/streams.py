"""The streams of an input description read into stamped columns: a CSV or NPZ file's columns or a
bag topic's messages (:func:`read_stream`), each with its own clock in seconds (its time column
in its ``time_unit``, or its ``rate``, plus its ``offset``); :func:`stream_columns` picks one
signal's columns per joint. Every problem raises :class:`~inertia_id_ros.errors.DataError`
naming the description, the stream and the key."""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from inertia_id_ros.errors import DataError
from inertia_id_ros.formats.data import (
    IMU_TYPE,
    JOINT_STATE_TYPE,
    WRENCH_TYPE,
    _read_table,
    header_seconds,
    iter_bag_messages,
    wrench_values,
)
from inertia_id_ros.formats.units import check_time_units
from inertia_id_ros.options import (
    TIME_UNITS,
)

if TYPE_CHECKING:
    pass
from inertia_id_ros.formats.description import TIME_SCALE, WRENCH_KEY, StreamSpec

MAX_REPEATED_STAMPS = 0.5
"""Share of a stream's samples that may repeat the previous stamp (dropped, noted); more is
refused (not the stamps' column, or a log that is mostly duplicates)."""


@dataclass(frozen=True)
class Stream:
    """A read stream: stamps ``t`` (N,) s (offset applied), ``table`` of its columns or keys,
    ``joint_names`` (bags, canonical files), ``frame`` (WrenchStamped, Imu)."""

    spec: StreamSpec
    t: np.ndarray
    table: dict[str, np.ndarray]
    joint_names: tuple[str, ...] | None = None
    frame: str = ""
    notes: tuple[str, ...] = ()
    """What reading it did besides reading (samples with a repeated stamp dropped)."""

    @property
    def label(self) -> str:
        """The stream's name, file and topic, for messages."""
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
    if delimiter.isspace():
        lines = [_ungrouped(line) for line in lines]
        delimiter = " "
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


_STATUS = re.compile(r"\[[^\]]*\]")
"""A status word in brackets (``[ok]``), as data dumpers write after each group of values."""


def _ungrouped(line: str) -> str:
    """A whitespace-delimited line with its groups opened: status words in brackets
    (``[ok]``) removed, parentheses around groups of values (``(0.1 0.2 0.3)``) dropped,
    runs of spaces made one: ``0 1.5 (1 2) [ok] (3 4) [ok]`` -> ``0 1.5 1 2 3 4``."""
    return " ".join(_STATUS.sub(" ", line).replace("(", " ").replace(")", " ").split())


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


def _stamps(
    spec: StreamSpec, raw: np.ndarray | None, n: int, label: str
) -> tuple[np.ndarray, np.ndarray, str]:
    """``(t, keep, note)``: the stamps in s (with the stream's offset) from a time column in
    its unit, or the rate; the samples kept (a sample whose stamp repeats the previous one's is
    dropped, and said in ``note``; a stream mostly of repeats is refused)."""
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
        if findings:  # the unit the raw stamps' steps fit, as the fix
            raw_findings = check_time_units(raw, "")
            fix = raw_findings[0].in_terms("description").fix if raw_findings else ""
            raise DataError(
                f"{label}: time {spec.time!r} in {spec.time_unit}: {findings[0].message}"
                + (f" {fix}" if fix else "")
            )
    keep, note = np.ones(t.size, dtype=bool), ""
    repeated = np.diff(t) == 0
    if repeated.any():
        if repeated.sum() > MAX_REPEATED_STAMPS * t.size:
            raise DataError(
                f"{label}: {int(repeated.sum())} of {t.size} samples repeat the previous "
                f"sample's stamp: check time {spec.time!r} (is it the stamps' column?)"
            )
        keep[1:] = ~repeated
        note = (
            f"{label}: {int(repeated.sum())} of {t.size} samples repeat the previous sample's "
            "stamp: dropped"
        )
    kept = np.flatnonzero(keep)
    steps = np.diff(t[kept])
    if np.any(steps <= 0):
        k = int(np.argmax(steps <= 0))
        raise DataError(
            f"{label}: stamps must be strictly increasing; sample {kept[k + 1]} "
            f"({t[kept[k + 1]]:.9f} s) does not come after sample {kept[k]} ({t[kept[k]]:.9f} s)"
        )
    return t[kept] + spec.offset, keep, note


def _read_bag_stream(spec: StreamSpec) -> Stream:
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
    stamps = replace(spec, time="header.stamp", time_unit="s")
    t, keep, note = _stamps(stamps, t[order], len(msgs), label)
    msgs = [m for m, kept in zip(msgs, keep) if kept]
    notes = (note,) if note else ()
    frames = sorted({m.header.frame_id for m in msgs})
    if msgtype == WRENCH_TYPE:
        return Stream(
            spec,
            t,
            {WRENCH_KEY: np.array([wrench_values(m) for m in msgs])},
            frame=frames[0] if len(frames) == 1 else "",
            notes=notes,
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
        return Stream(spec, t, imu_table, frame=frames[0] if len(frames) == 1 else "", notes=notes)
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
    return Stream(spec, t, table, joint_names=names, notes=notes)


def read_stream(spec: StreamSpec) -> Stream:
    """The stream ``spec`` names, read: a bag topic's messages or a CSV/NPZ file's columns, on its
    own clock in seconds."""
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
    t, keep, note = _stamps(spec, raw_t, n, label)
    if not keep.all():
        table = {k: v[keep] if v.shape[:1] == (n,) else v for k, v in table.items()}
    return Stream(
        spec,
        t,
        table,
        joint_names=names,
        frame=str(np.asarray(raw.get("wrench_frame", ""))),
        notes=(note,) if note else (),
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


def stream_columns(
    stream: Stream,
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
