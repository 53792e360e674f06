"""Recorded data: joint states with F/T wrenches (payloads) or joint efforts (links).

Three sources; every problem with a file raises :class:`DataError`, a one-line message naming the
file.

**NPZ** (``numpy.savez``), keys:

- ``t`` (N,): sample stamps (s), finite and strictly increasing;
- ``joint_names`` (n,): joint names (strings, as in the URDF);
- ``q`` (N, n): joint positions (rad or m), columns in ``joint_names`` order;
- ``dq``, ``ddq`` (N, n), optional: joint velocities (rad/s, m/s) and accelerations (rad/s², m/s²);
- payloads: ``wrench`` (N, 6): ``[fx, fy, fz, tx, ty, tz]`` (N, N·m) measured at ``t``, in the
  sensor frame; optional ``wrench_frame`` (a string): the frame it is expressed in, checked against
  the sensor frame;
- links: ``effort`` (N, n): measured joint efforts (N·m or N).

**CSV**: comma-separated, one header row of column names, then one row per sample (same units).
Lines starting with ``#`` are comments; ``# wrench_frame: <frame>`` names the wrenches' frame.
Columns: ``t``; ``q:<joint>`` for every joint (their order is the joint order); the optional
``dq:<joint>``, ``ddq:<joint>``, ``effort:<joint>`` for every joint; ``wrench:fx``, ``wrench:fy``,
``wrench:fz``, ``wrench:tx``, ``wrench:ty``, ``wrench:tz``. Example::

    # wrench_frame: panda_link8
    t,q:panda_joint1,...,q:panda_joint7,dq:panda_joint1,...,wrench:fx,...,wrench:tz
    0.000,0.0012,...

**ROS 2 bags** (a rosbag2 directory, or one ``.mcap`` / ``.db3`` file; read with ``rosbags``):
``sensor_msgs/msg/JointState`` on the joint-states topic (``position``; ``velocity`` and ``effort``
when every message has them) and ``geometry_msgs/msg/WrenchStamped`` on the wrench topic. Stamps
come from ``header.stamp``; the wrenches' frame from ``header.frame_id``. Every joint-state message
must name the same joints (in any order but the same in each message).

Size: 626 lines: the three layouts share one set of private joint-state checks (names, stamps,
arrays), which a split would have to export.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from inertia_id_ros.core.filtering import (
    RECORDED_GAP_STEPS,
    derivatives_at_samples,
    inside_segments,
)
from inertia_id_ros.core.regressors import WRENCH_CHANNEL_NAMES
from inertia_id_ros.errors import DataError
from inertia_id_ros.options import DEFAULT_JOINT_STATES_TOPIC, DEFAULT_WRENCH_TOPIC

JOINT_COLUMN_KINDS = ("q", "dq", "ddq", "effort")
"""Per-joint CSV column prefixes (``<kind>:<joint>``)."""
JOINT_STATE_TYPE = "sensor_msgs/msg/JointState"
WRENCH_TYPE = "geometry_msgs/msg/WrenchStamped"
IMU_TYPE = "sensor_msgs/msg/Imu"
STRING_TYPE = "std_msgs/msg/String"
"""The bag message types: the inputs (joint states, an F/T sensor's wrenches, IMU readings) and
the URDF's."""
ROBOT_DESCRIPTION_TOPIC = "/robot_description"
"""The topic of the URDF (``std_msgs/String``, latched) in bags that carry it."""
_DIFFERENTIATION_CHUNK = 5000
"""Samples differentiated at once by :func:`with_derivatives` (bounds its memory)."""


@dataclass(frozen=True)
class JointStates:
    """Joint samples: stamps ``t`` (N,) (s, strictly increasing), ``joint_names`` (n,), positions
    ``q`` (N, n) (rad, m) and optional velocities ``dq``, accelerations ``ddq`` and efforts
    ``effort`` (N, n) (rad/s, rad/s², N·m; m/s, m/s², N for prismatic joints), columns in
    ``joint_names`` order."""

    t: np.ndarray
    joint_names: tuple[str, ...]
    q: np.ndarray
    dq: np.ndarray | None = None
    ddq: np.ndarray | None = None
    effort: np.ndarray | None = None

    @property
    def n_samples(self) -> int:
        """Number of samples N."""
        return self.t.shape[0]

    def mean_positions(self) -> dict[str, float]:
        """Mean position of every joint (rad, m), e.g. to lock the joints not identified."""
        return dict(zip(self.joint_names, self.q.mean(axis=0).tolist()))


@dataclass(frozen=True)
class Wrenches:
    """F/T samples: stamps ``t`` (M,) (s, strictly increasing) and wrenches ``wrench`` (M, 6)
    ``[fx, fy, fz, tx, ty, tz]`` (N, N·m); ``frame``: the frame they are expressed in ("" if the
    recording does not say)."""

    t: np.ndarray
    wrench: np.ndarray
    frame: str = ""


@dataclass(frozen=True)
class PayloadRecording:
    """What payload identification needs: joint states and the F/T sensor's wrenches, each with
    its own stamps; ``source`` names the file."""

    joint_states: JointStates
    wrenches: Wrenches
    source: str


# ---- validation ----------------------------------------------------------------------------


def _array(source: str, name: str, value: object, shape: tuple[int | None, ...]) -> np.ndarray:
    """``value`` as a finite float array of ``shape`` (``None``: any length), else DataError."""
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise DataError(f"{source}: {name!r} is not numeric") from None
    if array.ndim != len(shape) or any(
        s is not None and s != a for s, a in zip(shape, array.shape)
    ):
        expected = "(" + ", ".join("N" if s is None else str(s) for s in shape) + ")"
        raise DataError(f"{source}: {name!r} has shape {array.shape}, expected {expected}")
    bad = ~np.isfinite(array)
    if bad.any():
        row = int(np.argwhere(bad)[0][0])
        raise DataError(f"{source}: {name!r} has NaN or infinite values (first at sample {row})")
    return array


def _stamps(source: str, name: str, value: object) -> np.ndarray:
    t = _array(source, name, value, (None,))
    if t.size == 0:
        raise DataError(f"{source}: {name!r} has no samples")
    steps = np.diff(t)
    if np.any(steps <= 0):
        k = int(np.argmax(steps <= 0))
        raise DataError(
            f"{source}: {name!r} must be strictly increasing; sample {k + 1} "
            f"({t[k + 1]:.9f} s) does not come after sample {k} ({t[k]:.9f} s)"
        )
    return t


def _joint_names(source: str, names: Sequence[object]) -> tuple[str, ...]:
    out = tuple(str(name) for name in names)
    if not out:
        raise DataError(f"{source}: no joint names")
    if any(not name for name in out):
        raise DataError(f"{source}: a joint name is empty")
    duplicates = sorted({name for name in out if out.count(name) > 1})
    if duplicates:
        raise DataError(f"{source}: joint name(s) {duplicates} appear more than once")
    return out


def _joint_states(
    source: str,
    t: object,
    joint_names: Sequence[object],
    q: object,
    dq: object = None,
    ddq: object = None,
    effort: object = None,
) -> JointStates:
    t = _stamps(source, "t", t)
    names = _joint_names(source, joint_names)
    shape = (t.size, len(names))
    optional = {
        key: None if value is None else _array(source, key, value, shape)
        for key, value in (("dq", dq), ("ddq", ddq), ("effort", effort))
    }
    return JointStates(t, names, _array(source, "q", q, shape), **optional)


def check_joints(
    states: JointStates,
    model_joint_names: Sequence[str],
    required: Sequence[str] = (),
    source: str = "recording",
) -> None:
    """Raise :class:`DataError` if ``states`` names joints absent from the model
    (``model_joint_names``) or lacks any of ``required``."""
    known = set(model_joint_names)
    unknown = [name for name in states.joint_names if name not in known]
    if unknown:
        raise DataError(
            f"{source}: joint(s) {unknown} are not in the robot model (its joints: "
            f"{', '.join(model_joint_names)})"
        )
    missing = [name for name in required if name not in states.joint_names]
    if missing:
        raise DataError(f"{source}: lacks joint(s) {missing}; it has {list(states.joint_names)}")


def check_wrench_frame(recording: PayloadRecording, sensor_frame: str) -> None:
    """Raise :class:`DataError` if the recording's wrenches are in a frame other than
    ``sensor_frame`` (a recording that does not name the frame passes)."""
    frame = recording.wrenches.frame
    if frame and frame != sensor_frame:
        raise DataError(
            f"{recording.source}: the wrenches are expressed in frame {frame!r}, not "
            f"in the sensor frame {sensor_frame!r}"
        )


def with_derivatives(
    states: JointStates,
    half_width: float,
    order: int = 2,
    trim: float | None = None,
    delay: float = 0.0,
) -> JointStates:
    """``states`` with velocities and accelerations: the recorded ones when both are present,
    else from a local polynomial fit of degree ``order`` over ``half_width`` s on each side of
    every sample (:func:`inertia_id_ros.core.filtering.derivatives_at_samples`, zero-phase: a
    recorded ``dq`` is fitted and differentiated once, else ``q`` twice). The velocities are the
    fit's (a recorded ``dq`` smoothed by the same filter, so velocities and accelerations carry
    the same filtering and less noise enters the regressor); positions stay as measured. The
    samples within ``trim`` s (default ``half_width``) of either end are dropped (their fits would
    be one-sided). With ``delay`` (s, the efforts lagging the motion, as a fit-links result's
    ``"torque_delay"``), each sample's effort is paired with the motion at ``t - delay`` (fitted
    positions; recorded signals linearly interpolated) and the stamps stay the efforts'."""
    t = states.t
    if states.dq is not None and states.ddq is not None:
        if delay == 0.0:
            return states
        gap = RECORDED_GAP_STEPS * float(np.median(np.diff(t)))
        keep = np.flatnonzero(inside_segments(t, t - delay, 0.0, gap))
        q, dq, ddq = (
            np.column_stack([np.interp(t[keep] - delay, t, c) for c in a.T])
            for a in (states.q, states.dq, states.ddq)
        )
        effort = None if states.effort is None else states.effort[keep]
        return JointStates(t[keep], states.joint_names, q, dq, ddq, effort)
    trim = half_width if trim is None else trim
    if not np.any((t >= t[0] + trim) & (t <= t[-1] - trim)):
        raise DataError(
            f"the recording ({t[-1] - t[0]:.3f} s) is too short to differentiate the "
            f"joint states over +-{trim} s"
        )
    try:
        keep, q, dq, ddq = derivatives_at_samples(
            t, states.q, states.dq, half_width, order, trim, _DIFFERENTIATION_CHUNK, delay
        )
    except ValueError as e:
        raise DataError(f"cannot differentiate the joint states: {e}") from None
    effort = None if states.effort is None else states.effort[keep]
    return JointStates(
        t[keep], states.joint_names, states.q[keep] if delay == 0.0 else q, dq, ddq, effort
    )


# ---- NPZ and CSV ---------------------------------------------------------------------------


def _read_npz(path: Path) -> dict[str, object]:
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {key: archive[key] for key in archive.files}
    except (OSError, ValueError, EOFError) as e:
        raise DataError(f"{path}: cannot read as NPZ: {e}") from None


def _read_csv(path: Path) -> dict[str, object]:
    """Columns of a CSV file (see the module docstring) as NPZ-like keys."""
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"{path}: cannot read: {e}") from None
    out: dict[str, object] = {}
    rows: list[tuple[int, list[str]]] = []
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if text.startswith("#"):
            key, _, value = text[1:].partition(":")
            if key.strip() == "wrench_frame":
                out["wrench_frame"] = value.strip()
        elif text:
            rows.append((number, next(csv.reader([text]))))
    if not rows:
        raise DataError(f"{path}: no header row")
    (_, header), body = rows[0], rows[1:]
    header = [name.strip() for name in header]
    duplicates = sorted({name for name in header if header.count(name) > 1})
    if duplicates:
        raise DataError(f"{path}: column(s) {duplicates} appear more than once")
    values = np.empty((len(body), len(header)))
    for k, (number, row) in enumerate(body):
        if len(row) != len(header):
            raise DataError(
                f"{path}: line {number} has {len(row)} values, the header {len(header)}"
            )
        try:
            values[k] = [float(x) for x in row]
        except ValueError:
            raise DataError(f"{path}: line {number} has a value that is not a number") from None
    column = {name: values[:, i] for i, name in enumerate(header)}
    if "t" not in column:
        raise DataError(f"{path}: no column 't'")
    out["t"] = column.pop("t")
    joints = [name.split(":", 1)[1] for name in column if name.startswith("q:")]
    if not joints:
        raise DataError(f"{path}: no joint position columns 'q:<joint>'")
    out["joint_names"] = joints
    for kind in JOINT_COLUMN_KINDS:
        present = [j for j in joints if f"{kind}:{j}" in column]
        if present and len(present) != len(joints):
            missing = [f"{kind}:{j}" for j in joints if j not in present]
            raise DataError(f"{path}: missing column(s) {missing}")
        if present:
            out[kind] = np.column_stack([column.pop(f"{kind}:{j}") for j in joints])
    wrench = [f"wrench:{c}" for c in WRENCH_CHANNEL_NAMES]
    present = [name for name in wrench if name in column]
    if present and len(present) != len(wrench):
        raise DataError(f"{path}: missing column(s) {[n for n in wrench if n not in present]}")
    if present:
        out["wrench"] = np.column_stack([column.pop(name) for name in wrench])
    if column:
        raise DataError(
            f"{path}: unknown column(s) {sorted(column)} (known: t, "
            "q:/dq:/ddq:/effort:<joint>, wrench:fx..tz)"
        )
    return out


def _read_table(path: str | Path) -> tuple[str, dict[str, Any]]:
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        return str(path), _read_npz(path)
    if suffix == ".csv":
        return str(path), _read_csv(path)
    raise DataError(
        f"{path}: unknown data format {suffix or '(no extension)'!r}; use .npz or "
        ".csv (ROS 2 bags: --bag)"
    )


def _require(source: str, table: Mapping[str, object], *keys: str) -> None:
    missing = [key for key in keys if key not in table]
    if missing:
        raise DataError(
            f"{source}: missing {', '.join(map(repr, missing))} (has "
            f"{', '.join(map(repr, table)) or 'nothing'})"
        )


def _states_from_table(source: str, table: Mapping[str, object], with_effort: bool) -> JointStates:
    _require(source, table, "t", "joint_names", "q", *(("effort",) if with_effort else ()))
    names = np.atleast_1d(np.asarray(table["joint_names"]))
    if names.ndim != 1 or names.dtype.kind not in "US":
        raise DataError(
            f"{source}: 'joint_names' must be a 1-D array of strings, got "
            f"{names.dtype} {names.shape}"
        )
    return _joint_states(
        source,
        table["t"],
        names.tolist(),
        table["q"],
        table.get("dq"),
        table.get("ddq"),
        table.get("effort") if with_effort else None,
    )


def read_payload_file(path: str | Path) -> PayloadRecording:
    """Payload data from an NPZ or CSV file (joint states and wrenches share the stamps ``t``)."""
    source, table = _read_table(path)
    _require(source, table, "wrench")
    states = _states_from_table(source, table, with_effort=False)
    wrench = _array(source, "wrench", table["wrench"], (states.n_samples, 6))
    frame = str(np.asarray(table.get("wrench_frame", "")))
    return PayloadRecording(states, Wrenches(states.t, wrench, frame), source)


def read_joint_file(path: str | Path) -> JointStates:
    """Link data from an NPZ or CSV file: joint states with ``effort``."""
    source, table = _read_table(path)
    return _states_from_table(source, table, with_effort=True)


def write_joint_file(
    path: str | Path,
    states: JointStates,
    wrench: np.ndarray | None = None,
    wrench_frame: str = "",
) -> None:
    """``states`` (its optional arrays where given) and the ``wrench`` (N, 6) at its stamps, in
    ``wrench_frame``, as an NPZ or a CSV file (by ``path``'s suffix) of the module docstring's
    layout: what :func:`read_joint_file` and :func:`read_payload_file` read."""
    path = Path(path)
    arrays = {kind: getattr(states, kind) for kind in JOINT_COLUMN_KINDS}
    arrays = {kind: np.asarray(a, dtype=float) for kind, a in arrays.items() if a is not None}
    if path.suffix.lower() == ".npz":
        content: dict[str, np.ndarray] = {
            "t": states.t,
            "joint_names": np.array(states.joint_names),
        }
        content |= arrays
        if wrench is not None:
            content |= {"wrench": np.asarray(wrench), "wrench_frame": np.array(wrench_frame)}
        np.savez(path, **content)  # type: ignore[arg-type]  # a key could be allow_pickle
        return
    if path.suffix.lower() != ".csv":
        raise DataError(f"{path}: write .npz or .csv")
    columns, names = [states.t], ["t"]
    for kind, values in arrays.items():
        columns += list(values.T)
        names += [f"{kind}:{joint}" for joint in states.joint_names]
    if wrench is not None:
        columns += list(np.asarray(wrench, dtype=float).T)
        names += [f"wrench:{channel}" for channel in WRENCH_CHANNEL_NAMES]
    lines = [f"# wrench_frame: {wrench_frame}"] if wrench is not None and wrench_frame else []
    lines.append(",".join(names))
    lines += [",".join(repr(float(v)) for v in row) for row in np.column_stack(columns)]
    path.write_text("\n".join(lines) + "\n")


def canonical_description(
    path: str | Path,
    description_dir: str | Path,
    joint_names: Sequence[str],
    kinds: Sequence[str],
    wrench_frame: str = "",
) -> dict[str, Any]:
    """The input description (docs/how-to/real-logs.md; the content of its YAML file in
    ``description_dir``) of the NPZ or CSV file ``path`` of this layout, or of a bag (its
    default topics), with the joint signals ``kinds`` (of :data:`JOINT_COLUMN_KINDS`) of
    ``joint_names`` and, with a ``wrench_frame``, its F/T sensor's wrenches (taken as
    recorded)."""
    path = Path(path)
    file = os.path.relpath(path, description_dir)
    signals = {"q": "position", "dq": "velocity", "ddq": "acceleration", "effort": "effort"}
    is_bag = path.suffix.lower() not in (".npz", ".csv")
    joints: dict[str, Any] = {"stream": "log", "names": list(joint_names)}
    for kind in kinds:  # a file of this layout is read by its keys, a CSV file's too
        where = {} if is_bag else {"key": kind}
        joints[signals[kind]] = {**where, "unit": "N·m" if kind == "effort" else "rad"}
    streams: dict[str, Any] = (
        {"log": {"file": file, "topic": DEFAULT_JOINT_STATES_TOPIC}}
        if is_bag
        else {"log": {"file": file, "time": "t", "time_unit": "s"}}
    )
    description: dict[str, Any] = {"streams": streams, "joints": joints}
    if wrench_frame:
        sensor: dict[str, Any] = {"frame": wrench_frame, "stream": "log", "sign": "keep"}
        if is_bag:
            streams["ft"] = {"file": file, "topic": DEFAULT_WRENCH_TOPIC}
            sensor["stream"] = "ft"
        else:
            sensor["key"] = "wrench"
        description["ft_sensors"] = [sensor]
    return description


# ---- ROS 2 bags ----------------------------------------------------------------------------


def header_seconds(header) -> float:
    """``std_msgs/Header`` stamp of a deserialised bag message -> seconds."""
    return header.stamp.sec + 1e-9 * header.stamp.nanosec


def wrench_values(msg) -> list[float]:
    """``[fx, fy, fz, tx, ty, tz]`` of a deserialised ``WrenchStamped`` (N, N·m)."""
    force, torque = msg.wrench.force, msg.wrench.torque
    return [force.x, force.y, force.z, torque.x, torque.y, torque.z]


def read_bag_messages(
    path: str | Path, topics: Sequence[tuple[str, str]], optional: Sequence[tuple[str, str]] = ()
) -> list[tuple[str, int, Any]]:
    """Every message of :func:`iter_bag_messages`, in a list (memory grows with the bag)."""
    return list(iter_bag_messages(path, topics, optional))


def iter_bag_messages(
    path: str | Path, topics: Sequence[tuple[str, str]], optional: Sequence[tuple[str, str]] = ()
) -> Generator[tuple[str, int, Any], None, None]:
    """``(topic, log time (ns), deserialised message)`` of every message on ``topics`` ((topic,
    expected message type) pairs, each must be in the bag with messages) and on the ``optional``
    ones present, in bag order: the order of the log (receive) times, as a subscriber got them.
    Read one at a time (bounded memory); the topics are checked before the first is yielded.
    Raises :class:`~inertia_id_ros.errors.DataError` (no bag, a missing or empty topic, another
    message type, an unreadable bag)."""
    from rosbags.highlevel import AnyReader, AnyReaderError
    from rosbags.rosbag2 import ReaderError
    from rosbags.typesys import Stores, get_typestore

    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such bag")
    try:
        with AnyReader([path], default_typestore=get_typestore(Stores.ROS2_KILTED)) as reader:
            available = {c.topic: c.msgtype for c in reader.connections}
            counts: dict[str, int] = {}
            for c in reader.connections:
                counts[c.topic] = counts.get(c.topic, 0) + c.msgcount
            for topic, msgtype in topics:
                if topic not in available:
                    listing = ", ".join(f"{t} ({m})" for t, m in sorted(available.items()))
                    raise DataError(
                        f"{path}: no topic {topic!r} in the bag; it has: {listing or 'no topics'}"
                    )
                if available[topic] != msgtype:
                    raise DataError(
                        f"{path}: topic {topic!r} carries {available[topic]}, expected {msgtype}"
                    )
                if not counts[topic]:
                    raise DataError(f"{path}: no messages on {topic!r}")
            wanted = {topic for topic, _ in topics} | {
                topic for topic, msgtype in optional if available.get(topic) == msgtype
            }
            connections = [c for c in reader.connections if c.topic in wanted]
            for connection, log_time, raw in reader.messages(connections=connections):
                yield (connection.topic, int(log_time), reader.deserialize(raw, connection.msgtype))
    except DataError:
        raise
    except (AnyReaderError, ReaderError, OSError, KeyError, ValueError, AssertionError) as e:
        raise DataError(f"{path}: cannot read as a ROS 2 bag: {e}".replace("\n", " ")) from None


def _read_bag(path: str | Path, topics: Sequence[tuple[str, str]]) -> dict[str, list]:
    """Deserialised messages of every topic of ``topics`` ((topic, expected message type)
    pairs), in bag order."""
    messages: dict[str, list] = {topic: [] for topic, _ in topics}
    for topic, _, msg in read_bag_messages(path, topics):
        messages[topic].append(msg)
    return messages


def _sorted_by_stamp(source: str, topic: str, stamps: list[float]) -> np.ndarray:
    """Indices putting ``stamps`` in increasing order; DataError on zero or repeated stamps."""
    t = np.asarray(stamps)
    if np.all(t == 0.0):
        raise DataError(
            f"{source}: all header stamps on {topic!r} are zero (the publisher does "
            "not stamp its messages)"
        )
    order = np.argsort(t, kind="stable")
    repeated = np.flatnonzero(np.diff(t[order]) == 0)
    if repeated.size:
        raise DataError(
            f"{source}: header stamp {t[order][repeated[0]]:.9f} s repeats on {topic!r}"
        )
    return order


def _states_from_messages(source: str, topic: str, msgs: list) -> JointStates:
    names = _joint_names(source, msgs[0].name)
    for k, msg in enumerate(msgs):
        if sorted(msg.name) != sorted(names):
            raise DataError(
                f"{source}: message {k} on {topic!r} names joints {list(msg.name)}, "
                f"the first one {list(names)}; every message must name the same "
                "joints (record one joint group per topic)"
            )
    order_of = {name: i for i, name in enumerate(names)}
    columns: dict[str, list[np.ndarray]] = {"q": [], "dq": [], "effort": []}
    has = {"dq": True, "effort": True}
    for k, msg in enumerate(msgs):
        index = [order_of[name] for name in msg.name]
        for key, values in (("q", msg.position), ("dq", msg.velocity), ("effort", msg.effort)):
            values = np.asarray(values, dtype=float)
            if key != "q" and values.size == 0:
                has[key] = False
                continue
            if values.size != len(names):
                raise DataError(
                    f"{source}: message {k} on {topic!r} has {len(names)} names and "
                    f"{values.size} {'position' if key == 'q' else key} values"
                )
            row = np.empty(len(names))
            row[index] = values
            columns[key].append(row)
    order = _sorted_by_stamp(source, topic, [header_seconds(msg.header) for msg in msgs])
    t = np.array([header_seconds(msg.header) for msg in msgs])[order]
    arrays = {
        key: np.array(rows)[order] if key == "q" or has[key] else None
        for key, rows in columns.items()
    }
    return _joint_states(source, t, names, arrays["q"], arrays["dq"], None, arrays["effort"])


def read_payload_bag(
    path: str | Path,
    joint_states_topic: str = DEFAULT_JOINT_STATES_TOPIC,
    wrench_topic: str = DEFAULT_WRENCH_TOPIC,
) -> PayloadRecording:
    """Payload data from a ROS 2 bag: ``JointState`` on ``joint_states_topic`` and
    ``WrenchStamped`` on ``wrench_topic`` (stamps and frame from the headers)."""
    source = str(path)
    msgs = _read_bag(path, [(joint_states_topic, JOINT_STATE_TYPE), (wrench_topic, WRENCH_TYPE)])
    states = _states_from_messages(source, joint_states_topic, msgs[joint_states_topic])
    wrench_msgs = msgs[wrench_topic]
    frames = sorted({msg.header.frame_id for msg in wrench_msgs})
    if len(frames) > 1:
        raise DataError(f"{source}: wrenches on {wrench_topic!r} come in several frames {frames}")
    stamps = [header_seconds(msg.header) for msg in wrench_msgs]
    order = _sorted_by_stamp(source, wrench_topic, stamps)
    t = np.array(stamps)[order]
    wrench = np.array([wrench_values(msg) for msg in wrench_msgs])[order]
    wrenches = Wrenches(
        _stamps(source, "wrench stamps", t),
        _array(source, "wrench", wrench, (t.size, 6)),
        frames[0],
    )
    return PayloadRecording(states, wrenches, source)


def read_joint_bag(
    path: str | Path, joint_states_topic: str = DEFAULT_JOINT_STATES_TOPIC
) -> JointStates:
    """Link data from a ROS 2 bag: ``JointState`` messages with ``effort`` on
    ``joint_states_topic``."""
    source = str(path)
    msgs = _read_bag(path, [(joint_states_topic, JOINT_STATE_TYPE)])[joint_states_topic]
    states = _states_from_messages(source, joint_states_topic, msgs)
    if states.effort is None:
        raise DataError(
            f"{source}: the JointState messages on {joint_states_topic!r} carry no "
            "effort (every message needs one per joint)"
        )
    return states
