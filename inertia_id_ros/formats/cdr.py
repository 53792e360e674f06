"""Serialized ROS 2 messages (CDR, as a raw subscription or a bag holds them) of the node's inputs,
decoded in batches straight into arrays: ``sensor_msgs/JointState``,
``geometry_msgs/WrenchStamped`` and ``sensor_msgs/Imu``, with no Python object per message.

A serialized message is a 4-byte encapsulation header (``00 01``: little-endian CDR, ``00 00``:
big-endian) and the fields in order, each aligned to its size (8 for ``float64``) from the end of
that header (an empty sequence's absent elements are not aligned); a string is its length (with the
NUL), its bytes and a NUL; a sequence its count and its elements. Padding bytes are arbitrary.
Messages of a topic usually share one layout (the same frame and joint names, the same array
lengths): a batch is cut into runs of consecutive messages whose layout bytes (lengths, counts,
names) equal the first's, and each run is read as one ``(K, L)`` byte array. A message that does
not parse (truncated, a count beyond its length, a string without its NUL) is refused with the
reason, never raised.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

ENCAPSULATION = {b"\x00\x01": "<", b"\x00\x00": ">"}
"""The encapsulation header's representation id -> the byte order of the fields (CDR, XCDR1)."""
HEADER_SIZE = 4
"""Bytes of the encapsulation header; fields are aligned from its end."""
IMU_COVARIANCE = 9
"""Entries of each of an Imu's covariance arrays (3 x 3, row-major)."""


class CdrError(ValueError):
    """A serialized message that cannot be read: truncated, or its lengths do not fit."""


@dataclass
class Layout:
    """Where a message's fields are (byte offsets in the whole buffer, header included):
    ``stamp`` (sec, nanosec), ``frame_id``, ``names`` (JointState), ``arrays`` (name ->
    (offset, count) of float64 values), and ``fixed``: the mask of layout bytes (representation,
    lengths, counts, strings) that every message of a run shares."""

    order: str
    size: int
    stamp: int
    frame_id: str
    names: tuple[str, ...] = ()
    arrays: dict[str, tuple[int, int]] = field(default_factory=dict)
    fixed: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))


class _Reader:
    """Reads one serialized message's fields in order, checking every length."""

    def __init__(self, buffer: bytes) -> None:
        if len(buffer) < HEADER_SIZE + 12:
            raise CdrError(f"{len(buffer)} bytes: shorter than a header")
        order = ENCAPSULATION.get(bytes(buffer[:2]))
        if order is None:
            raise CdrError(f"unknown encapsulation {bytes(buffer[:2]).hex()} (not CDR)")
        self.buffer, self.order, self.offset = buffer, order, HEADER_SIZE
        self.fixed = np.zeros(len(buffer), dtype=bool)
        self.fixed[:2] = True

    def _align(self, size: int) -> None:
        self.offset += -(self.offset - HEADER_SIZE) % size

    def _take(self, size: int) -> int:
        start = self.offset
        if start + size > len(self.buffer):
            raise CdrError(f"truncated: needs {start + size} bytes, has {len(self.buffer)}")
        self.offset += size
        return start

    def count(self) -> int:
        """A uint32 length or count (a layout byte)."""
        self._align(4)
        start = self._take(4)
        self.fixed[start : start + 4] = True
        (value,) = struct.unpack_from(self.order + "I", self.buffer, start)
        if value > len(self.buffer):
            raise CdrError(f"a length of {value} in a {len(self.buffer)}-byte message")
        return int(value)

    def stamp(self) -> int:
        """The offset of a ``builtin_interfaces/Time`` (int32 sec, uint32 nanosec)."""
        self._align(4)
        return self._take(8)

    def string(self) -> str:
        """A string (a layout field: its bytes must match across a run)."""
        size = self.count()
        start = self._take(size)
        self.fixed[start : start + size] = True
        raw = bytes(self.buffer[start : start + size])
        if size == 0 or raw[-1] != 0:
            raise CdrError("a string without its terminating NUL")
        return raw[:-1].decode("utf-8", errors="replace")

    def doubles(self, count: int | None = None) -> tuple[int, int]:
        """``(offset, count)`` of float64 values: a sequence (``count`` None: its count first) or
        a fixed array of ``count``."""
        n = self.count() if count is None else count
        if n:  # an empty sequence's (absent) elements are not aligned
            self._align(8)
        return self._take(8 * n), n


def _joint_state(reader: _Reader) -> Layout:
    stamp, frame_id = reader.stamp(), reader.string()
    names = tuple(reader.string() for _ in range(reader.count()))
    arrays = {key: reader.doubles() for key in ("position", "velocity", "effort")}
    return Layout(reader.order, reader.offset, stamp, frame_id, names, arrays, reader.fixed)


def _wrench(reader: _Reader) -> Layout:
    stamp, frame_id = reader.stamp(), reader.string()
    arrays = {"wrench": reader.doubles(6)}
    return Layout(reader.order, reader.offset, stamp, frame_id, (), arrays, reader.fixed)


def _imu(reader: _Reader) -> Layout:
    stamp, frame_id = reader.stamp(), reader.string()
    arrays = {}
    for key, size in (("orientation", 4), ("angular_velocity", 3), ("linear_acceleration", 3)):
        arrays[key] = reader.doubles(size)
        arrays[f"{key}_covariance"] = reader.doubles(IMU_COVARIANCE)
    return Layout(reader.order, reader.offset, stamp, frame_id, (), arrays, reader.fixed)


LAYOUTS: dict[str, Callable[[_Reader], Layout]] = {
    "sensor_msgs/msg/JointState": _joint_state,
    "geometry_msgs/msg/WrenchStamped": _wrench,
    "sensor_msgs/msg/Imu": _imu,
}
"""The message types decoded here, and how each one's fields are laid out."""


def layout_of(msgtype: str, buffer: bytes) -> Layout:
    """The layout of one serialized message of ``msgtype`` (a key of :data:`LAYOUTS`);
    :class:`CdrError` if it does not parse."""
    return LAYOUTS[msgtype](_Reader(buffer))


@dataclass(frozen=True)
class Run:
    """Consecutive messages of one layout: ``first`` (the index of the first in its batch),
    ``t`` (K,) header stamps (s), ``frame_id``, ``names`` (JointState's joints) and ``arrays``:
    field -> (K, count) float64 (a JointState's empty array: (K, 0))."""

    first: int
    t: np.ndarray
    frame_id: str
    names: tuple[str, ...]
    arrays: dict[str, np.ndarray]

    def __len__(self) -> int:
        return int(self.t.shape[0])


@dataclass(frozen=True)
class Batch:
    """A batch decoded: ``runs`` in arrival order, and ``refused``: (index, reason) of each
    message that could not be read."""

    runs: list[Run]
    refused: list[tuple[int, str]]

    @property
    def decoded(self) -> int:
        """Messages decoded."""
        return sum(len(run) for run in self.runs)


def decode(msgtype: str, buffers: Sequence[bytes]) -> Batch:
    """The serialized messages ``buffers`` of ``msgtype`` (a key of :data:`LAYOUTS`), in
    order: runs of one layout, each read at once, and the messages refused."""
    runs: list[Run] = []
    refused: list[tuple[int, str]] = []
    k = 0
    while k < len(buffers):
        try:
            layout = layout_of(msgtype, buffers[k])
        except CdrError as error:
            refused.append((k, str(error)))
            k += 1
            continue
        stop = _run_end(buffers, k, layout)
        runs.append(_read_run(buffers[k:stop], k, layout))
        k = stop
    return Batch(runs, refused)


def _run_end(buffers: Sequence[bytes], first: int, layout: Layout) -> int:
    """The end (exclusive) of the run from ``first``: the following messages of the same length
    whose layout bytes equal the first's."""
    size = len(buffers[first])
    stop = first + 1
    while stop < len(buffers) and len(buffers[stop]) == size:
        stop += 1
    if stop == first + 1:
        return stop
    block = np.frombuffer(b"".join(buffers[first:stop]), dtype=np.uint8).reshape(stop - first, -1)
    same = (block[:, layout.fixed] == block[0, layout.fixed]).all(axis=1)
    return first + int(np.argmin(same)) if not same.all() else stop


def _read_run(buffers: Sequence[bytes], first: int, layout: Layout) -> Run:
    """The fields of messages that share ``layout``, read from one (K, L) byte array."""
    block = np.frombuffer(b"".join(buffers), dtype=np.uint8).reshape(len(buffers), -1)
    order = layout.order
    sec = _column(block, layout.stamp, 1, order + "i4")[:, 0]
    nanosec = _column(block, layout.stamp + 4, 1, order + "u4")[:, 0]
    arrays = {
        key: _column(block, offset, count, order + "f8")
        for key, (offset, count) in layout.arrays.items()
    }
    t = sec.astype(np.float64) + 1e-9 * nanosec.astype(np.float64)
    return Run(first, t, layout.frame_id, layout.names, arrays)


def _column(block: np.ndarray, offset: int, count: int, dtype: str) -> np.ndarray:
    """(K, count) values of ``dtype`` at byte ``offset`` of each row of ``block``, as float64 or
    native integers."""
    width = np.dtype(dtype).itemsize
    raw = np.ascontiguousarray(block[:, offset : offset + width * count])
    return raw.view(dtype).reshape(block.shape[0], count).astype(np.dtype(dtype).newbyteorder("="))
