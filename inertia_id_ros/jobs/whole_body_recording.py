"""Reading a whole-body recording for a fit (``fit-whole-body``, ``calibrate-ft``): an NPZ, a
bag or an input description, its F/T calibration applied, a floating base without an IMU refused
in the user's terms."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from inertia_id_ros.errors import InputError
from inertia_id_ros.findings import Finding
from inertia_id_ros.jobs.base import carrying, load_urdf
from inertia_id_ros.options import DEFAULT_IMU_TOPIC, DEFAULT_JOINT_STATES_TOPIC

if TYPE_CHECKING:
    from inertia_id_ros.core.whole_body_model import WholeBodyModel, WholeBodySamples
    from inertia_id_ros.formats.source import LogSource
    from inertia_id_ros.formats.whole_body_log import WholeBodyRecording
    from inertia_id_ros.jobs.fit_whole_body import FitWholeBodyOptions


def ft_topics_error(given: object) -> InputError:
    """A bag's F/T topics missing or malformed (``given``: as given)."""
    return InputError(
        f"--bag needs --ft TOPIC=KIND for every F/T sensor (KIND: contact or internal), got {given}"
    )


@dataclass(frozen=True)
class Loaded:
    """A recording read for a whole-body fit: its loader's ``notes``, the ``held`` joints (not
    in the log), the F/T frames whose readings are still to be negated (``flips``) and the
    held-out fraction (``holdout``: the options' or the description's)."""

    recording: WholeBodyRecording
    notes: list[Finding] = field(default_factory=list)
    held: Mapping[str, float] = field(default_factory=dict)
    flips: tuple[str, ...] = ()
    holdout: float | None = None


def model_and_samples(
    urdf: str, loaded: Loaded, options: FitWholeBodyOptions
) -> tuple[WholeBodyModel, WholeBodySamples]:
    """The model and samples of ``loaded`` with ``options`` (its ``bodies`` identified, the
    joint states differentiated over its half-width)."""
    from inertia_id_ros.formats.whole_body_log import whole_body_inputs

    return whole_body_inputs(
        loaded.recording,
        urdf,
        options.base,
        options.bodies,
        options.half_width,
        flip_wrench_sign=loaded.flips,
        fixed_frame=options.fixed_frame,
        fixed_tilt=options.fixed_tilt,
        imu_tilt=options.imu_tilt,
        estimate_contact_offsets=options.estimate_contact_offsets,
    )


def read_recording(urdf: str, source: LogSource, options: FitWholeBodyOptions) -> Loaded:
    """The recording of ``source`` (:func:`_read_source`), its F/T readings through the
    source's ``ft_calibration`` when given (an input description applies it as it loads; an NPZ
    or a bag here, to the readings before their signs: :meth:`SensorCalibration.before_sign`)."""
    from inertia_id_ros.formats.ft_calibration import apply_ft_calibration, read_ft_calibration

    if source.input is not None or source.ft_calibration is None:
        return _with_imu(_read_source(urdf, source, options), source, options)
    loaded = _with_imu(
        _read_source(urdf, replace(source, ft_calibration=None), options), source, options
    )
    recording = loaded.recording
    flipped = recording.ft_flip_wrench_sign or (False,) * len(recording.ft_frames)
    signs = {
        f: -1.0 if flip or f in loaded.flips else 1.0
        for f, flip in zip(recording.ft_frames, flipped)
    }
    calibrations = read_ft_calibration(source.ft_calibration)
    wrench = apply_ft_calibration(
        recording.ft_frames,
        recording.ft_wrench,
        {f: c.before_sign(signs.get(f, 1.0)) for f, c in calibrations.items()},
        recording.source,
    )
    return replace(loaded, recording=replace(recording, ft_wrench=wrench))


def _with_imu(loaded: Loaded, source: LogSource, options: FitWholeBodyOptions) -> Loaded:
    """``loaded``; an :class:`InputError` naming the fix in ``source``'s terms when the base is
    floating and the recording has no IMU."""
    from inertia_id_ros.findings import REMEDIES

    if options.base == "floating" and not loaded.recording.imu:
        raise InputError(
            f"{loaded.recording.source}: a floating base needs an IMU (its orientation, angular "
            "velocity and specific force) and the recording has none. "
            + REMEDIES["no_imu"][source.terms]
        )
    return loaded


def _read_source(urdf: str, source: LogSource, options: FitWholeBodyOptions) -> Loaded:
    """The recording of ``source``: an input description (:func:`_read_description`), an NPZ
    or a bag (its ``ft_topics``, the IMU at ``imu_topic`` unless the base is not floating and no
    IMU topic is given)."""
    from inertia_id_ros.formats.whole_body_log import read_whole_body_bag, read_whole_body_file

    flips, holdout = options.flip_wrench_sign, options.holdout
    if source.uses_description():
        return _read_description(urdf, source, options)
    if source.data is not None:
        if options.ft_topics or options.imu_topic or source.joint_states_topic:
            raise InputError("--ft, --imu-topic and --joint-states-topic only apply to --bag")
        return Loaded(read_whole_body_file(source.data), flips=flips, holdout=holdout)
    if not options.ft_topics:
        raise ft_topics_error(None)
    imu_topic = options.imu_topic or DEFAULT_IMU_TOPIC
    recording = read_whole_body_bag(
        source.path,
        list(options.ft_topics),
        source.joint_states_topic or DEFAULT_JOINT_STATES_TOPIC,
        None if options.base != "floating" and not options.imu_topic else imu_topic,
        options.half_width,
    )
    return Loaded(recording, flips=flips, holdout=holdout)


def _read_description(urdf: str, source: LogSource, options: FitWholeBodyOptions) -> Loaded:
    """The recording of an input description (``input`` only: the log flags need one): its
    training interval, its F/T sensors' signs (``flip_wrench_sign`` applied), its held joints
    and the held-out fraction of its ``held_out_from`` (not with ``holdout``)."""
    import numpy as np

    if source.input is None:
        raise InputError(
            "the log flags (--time-unit, --t-start, ...) of fit-whole-body "
            "take an --input description"
        )
    if options.ft_topics or options.imu_topic or source.joint_states_topic:
        raise InputError(
            "--ft, --imu-topic and --joint-states-topic only apply to --bag "
            "(an --input description names its topics)"
        )
    loaded, held_out_from, notes = source.read_whole_log(
        load_urdf(urdf), urdf, options.flip_wrench_sign
    )
    with carrying(notes):
        recording = loaded.whole_body(options.half_width)
        holdout = options.holdout
        if held_out_from is not None:
            if holdout is not None:
                raise InputError(
                    "--holdout: the --input description splits off its own held-out part "
                    "(held_out_from)"
                )
            holdout = float(np.mean(recording.states.t - loaded.t0 >= held_out_from))
            if not 0.0 < holdout < 1.0:
                raise InputError(
                    f"{loaded.source}: held_out_from {held_out_from:g} s leaves no samples on "
                    "one side"
                )
    return Loaded(recording, notes, loaded.held, (), holdout)
