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
                                  # calibration: ft.yaml (inertia-id calibrate-ft's file)
    window: [2.0, 30.0]           # s after the first joint sample, or {stamps: [start, end]}
    held_out_from: 25.0           # train before, held out from (s after the first joint sample)
    runs:                         # several runs (formats.runs): files in this layout, or own
      - {name: a, files: {arm: a/arm.csv, ft: a/run.mcap}}   # descriptions or canonical files
    held_out_runs: [a]

A joint group's ``transmission`` (gear ratios, coupling, zero offsets) takes motor-side signals
to joint side (:mod:`~inertia_id_ros.formats.transmission`).

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

from inertia_id_ros.errors import DataError
from inertia_id_ros.options import (
    JOINT_SIGNALS,
)

if TYPE_CHECKING:
    from inertia_id_ros.formats.runs import RunSpec
    from inertia_id_ros.formats.transmission import TransmissionSpec

TIME_SCALE = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
"""Seconds per unit of :data:`~inertia_id_ros.options.TIME_UNITS`."""
POSITION_SCALE = {"rad": 1.0, "deg": math.pi / 180.0, "m": 1.0, "mm": 1e-3}
"""SI units (rad or m) per unit of a joint signal (its time derivatives per s, per s²)."""
EFFORT_SCALE = {"N·m": 1.0, "Nm": 1.0, "N m": 1.0, "N": 1.0, "A": 1.0}
"""Effort units; ``A``: a motor current, times ``torque_constant`` (N·m/A) × ``gear_ratio``."""
BAG_SUFFIXES = (".mcap", ".db3")
DESCRIPTION_SUFFIXES = (".yaml", ".yml")
"""Suffixes of input description files (where a file or bag is also taken)."""
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
    calibration: Path | None = None
    """A file of :mod:`~inertia_id_ros.formats.ft_calibration` (``inertia-id calibrate-ft``'s)
    whose entry for ``frame`` is applied to the readings after ``sign``."""


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
    transmission: TransmissionSpec | None = None
    """Motor-side signals: the transmission to the joints
    (:mod:`~inertia_id_ros.formats.transmission`)."""


@dataclass(frozen=True)
class StampWindow:
    """A window in the log's own stamps: from ``start`` to ``end`` in the joint states' clock
    stream's time column, in its unit, before its offset (a stream with a ``rate``: s from its
    first sample; a bag: its header stamps, s). YAML: ``window: {stamps: [start, end]}``."""

    start: float
    end: float


Window = tuple[float, float] | StampWindow
"""A window: ``(start, end)`` s after the first joint sample, or in the log's own stamps."""


@dataclass(frozen=True)
class InputDescription:
    """Where a log's signals are (see the module docstring). ``joints``: the joint groups (the
    first one's position stream is the joint states' clock); ``held``: URDF joints not in the
    log and their value; ``window``, ``intervals``, ``train``, ``held_out``, ``held_out_from``:
    s after the first joint sample; ``runs``: several runs fitted together
    (:mod:`~inertia_id_ros.formats.runs`; then ``window`` and ``held_out_from`` apply to each
    run, and ``held_out_runs`` names the runs held out); ``source``: names the description in
    messages."""

    streams: Mapping[str, StreamSpec]
    joints: tuple[JointGroup, ...]
    held: Mapping[str, float] = field(default_factory=dict)
    ft_sensors: tuple[FTSpec, ...] = ()
    imu: ImuSpec | None = None
    window: Window | None = None
    intervals: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    train: str | None = None
    held_out: str | None = None
    held_out_from: float | None = None
    source: str = "input description"
    runs: tuple[RunSpec, ...] = ()
    held_out_runs: tuple[str, ...] = ()

    def calibrated_frames(self) -> list[str]:
        """The F/T frames whose readings go through a ``calibration`` (its runs' included)."""
        specs = [
            *self.ft_sensors,
            *(ft for run in self.runs if run.description for ft in run.description.ft_sensors),
        ]
        return sorted({ft.frame for ft in specs if ft.calibration is not None})

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
        """The description in the parsed YAML ``data``; relative files under ``base``
        (:func:`~inertia_id_ros.formats.description_yaml.read_description`)."""
        from inertia_id_ros.formats.description_yaml import read_description

        return read_description(data, base, source)

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
        held_out_runs: Sequence[str] | None = None,
        no_split: bool = False,
    ) -> InputDescription:
        """This description with the command-line window, split and held joints (given ones
        override the description's; with runs, the window overrides each run's); ``no_split``:
        all of the window fitted, the description's split (``train``, ``held_out``,
        ``held_out_from``, ``held_out_runs``) cancelled."""
        if no_split:
            if held_out_from is not None or held_out_runs is not None:
                raise DataError(
                    "--no-split cancels the split: give it or --held-out-from/--held-out-runs"
                )
            cancelled = replace(
                self, train=None, held_out=None, held_out_from=None, held_out_runs=()
            )
            return cancelled.with_flags(t_start, t_end, None, held)
        window = _window(self.window, t_start, t_end, self.source)
        runs = self.runs
        if t_start is not None or t_end is not None:
            runs = tuple(
                replace(run, window=_window(run.window or self.window, t_start, t_end, self.source))
                for run in runs
            )
        if held_out_runs is not None:
            if not runs:
                raise DataError(f"{self.source}: --held-out-runs: the description lists no runs")
            names = [run.name for run in runs]
            unknown = [name for name in held_out_runs if name not in names]
            if unknown:
                raise DataError(
                    f"{self.source}: --held-out-runs: no run(s) {unknown} "
                    f"(runs: {', '.join(names)})"
                )
        return replace(
            self,
            window=window,
            runs=runs,
            held_out_from=self.held_out_from if held_out_from is None else held_out_from,
            held_out_runs=self.held_out_runs if held_out_runs is None else tuple(held_out_runs),
            held={**self.held, **(held or {})},
        )


def _window(
    window: Window | None, t_start: float | None, t_end: float | None, source: str
) -> Window | None:
    """``window`` with the command line's ``t_start`` and ``t_end`` (s after the first joint
    sample) when given (over a window in the log's stamps: the flags' window alone)."""
    if t_start is None and t_end is None:
        return window
    start, end = (0.0, math.inf) if window is None or isinstance(window, StampWindow) else window
    window = (start if t_start is None else t_start, end if t_end is None else t_end)
    if not window[0] < window[1]:
        raise DataError(
            f"{source}: the window [{window[0]}, {window[1]}] s is "
            "empty (--t-start must be before --t-end)"
        )
    return window


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
