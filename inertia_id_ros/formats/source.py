"""Where a job's recorded data come from (:class:`LogSource`): a file of the package's layout
(NPZ or CSV), a ROS 2 bag, or an input description of a real log (YAML), with the flags that
adjust how it is read (units, window, split, held joints). The command line's ``--data``,
``--bag``, ``--input`` and log flags make one; a notebook or a fleet makes one directly."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from inertia_id_ros.errors import DataError, InputError
from inertia_id_ros.findings import NOTE, Finding
from inertia_id_ros.options import DEFAULT_JOINT_STATES_TOPIC, DEFAULT_WRENCH_TOPIC

if TYPE_CHECKING:
    import pinocchio as pin

    from inertia_id_ros.formats.data import JointStates
    from inertia_id_ros.formats.description import InputDescription
    from inertia_id_ros.formats.recording import Recording


@dataclass(frozen=True)
class LogSource:
    """Recorded data: exactly one of ``data`` (an NPZ or CSV file of the package's layout,
    :mod:`inertia_id_ros.formats.data`), ``bag`` (a rosbag2 directory or one ``.mcap``/``.db3``
    file, its topics ``joint_states_topic`` and ``wrench_topic``) and ``input`` (an input
    description, YAML: docs/how-to/real-logs.md); and the log flags: ``time_unit`` (of ``data``'s
    stamps), ``angle_unit`` (of ``data``'s or ``bag``'s joints), the window ``t_start`` to
    ``t_end`` and the split ``held_out_from`` (s after the first joint sample), ``held`` joints not
    in the log (name -> position, rad or m), ``ft_calibration`` (a file of
    :mod:`~inertia_id_ros.formats.ft_calibration`, applied to every F/T sensor it names, instead
    of a description's ``calibration``). Any log flag (or ``input``) reads the data through an
    input description (:meth:`uses_description`)."""

    data: str | None = None
    bag: str | None = None
    input: str | None = None
    joint_states_topic: str | None = None
    wrench_topic: str | None = None
    time_unit: str | None = None
    angle_unit: str | None = None
    t_start: float | None = None
    t_end: float | None = None
    held_out_from: float | None = None
    held: Mapping[str, float] = field(default_factory=dict)
    held_out_runs: Sequence[str] | None = None
    """With a description of several runs: the runs held out (overrides its
    ``held_out_runs``)."""
    no_split: bool = False
    """Fit on all of the window: the description's split cancelled."""
    ft_calibration: str | None = None
    """An F/T calibration file (``inertia-id calibrate-ft``'s) applied to every sensor it names,
    over a description's ``calibration``."""

    def __post_init__(self) -> None:
        given = [name for name in ("data", "bag", "input") if getattr(self, name) is not None]
        if len(given) != 1:
            raise InputError(f"give one of data, bag and input (a log source), got {given}")

    @property
    def terms(self) -> str:
        """The terms a fix is given in (:data:`~inertia_id_ros.findings.TERMS`): an input
        description's keys for ``input``, the command line's flags otherwise."""
        return "description" if self.input is not None else "flags"

    @property
    def path(self) -> str:
        """The file, bag or description read."""
        return self.data or self.bag or self.input or ""

    def uses_description(self) -> bool:
        """Whether the data are read through an input description (``input`` or a log flag)."""
        flags = (
            self.time_unit,
            self.angle_unit,
            self.t_start,
            self.t_end,
            self.held_out_from,
            self.held_out_runs,
            self.ft_calibration,
        )
        return self.input is not None or bool(self.held) or any(f is not None for f in flags)

    def check_bag_options(self) -> None:
        """Refuse bag topics without a bag (:class:`InputError` naming them)."""
        if self.bag is None:
            topics = [
                name for name in ("joint_states_topic", "wrench_topic") if getattr(self, name)
            ]
            if topics:
                options = ", ".join("--" + name.replace("_", "-") for name in topics)
                raise InputError(f"{options} only apply to --bag")

    def read_joint_states(self) -> tuple[JointStates, str]:
        """``(joint states, source)`` of ``data`` or of ``bag`` (its ``joint_states_topic``),
        without a description."""
        from inertia_id_ros.formats.data import read_joint_bag, read_joint_file

        if self.data is not None:
            return read_joint_file(self.data), self.data
        if self.bag is None:
            raise InputError("an input description is read with read_log, not read_joint_states")
        topic = self.joint_states_topic or DEFAULT_JOINT_STATES_TOPIC
        return read_joint_bag(self.bag, topic), self.bag

    def description(
        self,
        sensor_frame: str | None = None,
        flip_wrench_sign: bool | None = None,
        flip_frames: Sequence[str] = (),
    ) -> InputDescription:
        """The input description of ``input`` (or of ``data``/``bag`` with the log flags), with
        the window, split and held joints of the flags; ``flip_wrench_sign`` (not ``None``)
        overrides the sign of ``sensor_frame``'s wrenches, ``flip_frames`` (F/T frames) set theirs
        to ``flip``."""
        from inertia_id_ros.formats.description import InputDescription

        if self.input is not None:
            given = [n for n in ("time_unit", "angle_unit") if getattr(self, n) is not None]
            if given:
                raise InputError(
                    " and ".join("--" + n.replace("_", "-") for n in given)
                    + (" apply" if len(given) > 1 else " applies")
                    + " to --data/--bag; an --input description gives its units itself"
                )
            description = InputDescription.from_yaml(self.input)
        elif self.data is not None:
            description = InputDescription.from_canonical(
                self.data, self.time_unit, self.angle_unit, sensor_frame
            )
        else:
            if self.time_unit is not None:
                raise InputError("--time-unit applies to --data (bag stamps are in s)")
            description = InputDescription.from_bag(
                self.path,
                self.joint_states_topic or DEFAULT_JOINT_STATES_TOPIC,
                self.angle_unit,
                self.wrench_topic or DEFAULT_WRENCH_TOPIC,
                sensor_frame,
            )
        if description.runs:
            runs = tuple(
                replace(
                    run,
                    description=self._with_calibration(
                        _with_signs(
                            run.resolved(sensor_frame, self.joint_states_topic, self.wrench_topic),
                            sensor_frame,
                            flip_wrench_sign,
                            flip_frames,
                        )
                    ),
                )
                for run in description.runs
            )
            description = replace(description, runs=runs)
        else:
            description = self._with_calibration(
                _with_signs(description, sensor_frame, flip_wrench_sign, flip_frames)
            )
        return description.with_flags(
            self.t_start,
            self.t_end,
            self.held_out_from,
            self.held,
            self.held_out_runs,
            self.no_split,
        )

    def _with_calibration(self, description: InputDescription) -> InputDescription:
        """``description`` with ``ft_calibration`` as the calibration of every F/T sensor it
        names (:class:`DataError` when it names a frame that is not one of the sensors)."""
        from pathlib import Path

        from inertia_id_ros.formats.ft_calibration import read_ft_calibration

        if self.ft_calibration is None:
            return description
        frames = [ft.frame for ft in description.ft_sensors]
        named = read_ft_calibration(self.ft_calibration)
        unknown = [f for f in named if f not in frames]
        if unknown:
            raise DataError(
                f"{self.ft_calibration}: calibrates {unknown}, not F/T sensors of "
                f"{description.source} ({frames})"
            )
        return replace(
            description,
            ft_sensors=tuple(
                replace(ft, calibration=Path(self.ft_calibration)) if ft.frame in named else ft
                for ft in description.ft_sensors
            ),
        )

    def read_log(
        self,
        model: pin.Model,
        urdf: str,
        sensor_frame: str | None = None,
        flip_wrench_sign: bool | None = None,
    ) -> tuple[Recording, Recording | None, list[Finding]]:
        """``(train, held_out, notes)``: the recording of :meth:`description` for ``model``
        (URDF file ``urdf``), split by the description, and what the loader noted."""
        from inertia_id_ros.formats.recording import split_recording

        description = self.description(sensor_frame, flip_wrench_sign)
        recording, notes = _load(description, model, urdf)
        train, held_out = split_recording(recording, description)
        return train, held_out, notes

    def read_whole_log(
        self, model: pin.Model, urdf: str, flip_frames: Sequence[str]
    ) -> tuple[Recording, float | None, list[Finding]]:
        """``(recording, held_out_from, notes)`` of the input description for a whole-body fit:
        its ``train`` interval if any, and its ``held_out_from`` (s; the fit holds out the time
        after it)."""
        description = self.description(flip_frames=flip_frames)
        if description.held_out is not None:
            raise InputError(
                f"{description.source}: fit-whole-body splits by held_out_from "
                "(--held-out-from), not by a held_out interval"
            )
        recording, notes = _load(description, model, urdf)
        if description.runs:
            return (*_runs_held_out_last(recording, description), notes)
        if description.train is not None:
            recording = recording.window(*description.intervals[description.train])
        return recording, description.held_out_from, notes


def _load(description: InputDescription, model: pin.Model, urdf: str) -> tuple[Recording, list]:
    """The recording of ``description`` and its loader's notes (findings of kind ``log``)."""
    from inertia_id_ros.formats.recording import load_recording

    recording = load_recording(description, list(model.names)[1:], urdf)
    notes = [Finding("log", description.source, NOTE, note) for note in recording.notes]
    return recording, notes


def _with_signs(
    description: InputDescription,
    sensor_frame: str | None,
    flip_wrench_sign: bool | None,
    flip_frames: Sequence[str],
) -> InputDescription:
    """``description`` with the F/T signs of the command line: ``flip_wrench_sign`` (not
    ``None``) for ``sensor_frame``'s wrenches, ``flip`` for the frames ``flip_frames``."""
    if flip_wrench_sign is not None:
        description = replace(
            description,
            ft_sensors=tuple(
                replace(ft, sign="flip" if flip_wrench_sign else "keep")
                if ft.frame == sensor_frame
                else ft
                for ft in description.ft_sensors
            ),
        )
    unknown = [f for f in flip_frames if f not in [ft.frame for ft in description.ft_sensors]]
    if unknown:
        raise InputError(
            f"--flip-wrench-sign {unknown[0]}: no such F/T sensor in {description.source}"
        )
    description = replace(
        description,
        ft_sensors=tuple(
            replace(ft, sign="flip") if ft.frame in flip_frames else ft
            for ft in description.ft_sensors
        ),
    )
    return description


def _runs_held_out_last(
    recording: Recording, description: InputDescription
) -> tuple[Recording, float | None]:
    """A whole-body fit's ``(recording, held_out_from)`` of several runs: the held-out runs
    (``held_out_runs``) joined after the others, and the time they start from (s after the
    first joint sample); a split within each run is refused (the fit holds out its end)."""
    from inertia_id_ros.formats.runs import join, split_runs

    if description.held_out_from is not None:
        raise InputError(
            f"{description.source}: with runs, fit-whole-body holds out whole runs "
            "(held_out_runs, --held-out-runs), not held_out_from"
        )
    train, held_out = split_runs(recording, description)
    if held_out is None:
        return train, None
    joined = replace(join([train, held_out], description.source), notes=recording.notes)
    start = joined.runs[len(train.runs)].t0
    return joined, start - joined.t0 - 1e-9
