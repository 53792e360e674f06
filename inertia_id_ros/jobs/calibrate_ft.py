"""The calibrate-ft job: each named F/T sensor's offset and calibration matrix, in situ, from the
wrench the model of what it carries predicts (the URDF's links, or a fit-whole-body result's:
trusted links) along a recorded motion (:mod:`inertia_id_ros.chain.ft_calibration`), on any base
of fit-whole-body (floating with an IMU, fixed at a frame such as a stance sole, suspended);
checked on the samples it holds out against the current calibration with fitted offsets."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from inertia_id_ros.errors import InputError
from inertia_id_ros.findings import NOTE, Finding
from inertia_id_ros.jobs.base import (
    JobResult,
    carrying,
    findings_document,
    in_source_terms,
    load_urdf,
)
from inertia_id_ros.jobs.fit_whole_body import FitWholeBodyOptions
from inertia_id_ros.jobs.whole_body_recording import Loaded, model_and_samples, read_recording
from inertia_id_ros.options import FT_CALIBRATION_KINDS

if TYPE_CHECKING:
    import numpy as np

    from inertia_id_ros.chain.ft_calibration import FTCalibration, HeldOutErrors
    from inertia_id_ros.core.whole_body_model import WholeBodyModel, WholeBodySamples
    from inertia_id_ros.formats.source import LogSource

CALIBRATE_FT_DEFAULT_HALF_WIDTH = 0.1
"""The joint states' differentiation and the readings' smoothing (± s) of a wrist sensor's
calibration."""
FILTER_CANDIDATES = (0.05, 0.1, 0.15, 0.2)
"""Half-widths (± s) among which a whole-body calibration chooses its filter."""
FILTER_CV_SAMPLES = 1000
"""At most this many training samples (evenly spaced) score each candidate filter."""


@dataclass(frozen=True)
class CalibrateFTOptions:
    """How to calibrate: the ``sensors`` (frames; default every internal sensor), ``kind``
    (``full`` 6×6 or ``gains``), the ``holdout`` fraction (the last part of the log, not fitted,
    on which the errors are reported; 0: fit it all), ``links`` (a fit-whole-body result JSON
    whose links are trusted; default the URDF's), ``filter_half_width`` (s; ``None``: chosen
    among :data:`FILTER_CANDIDATES` by cross-validation, a wrist sensor
    :data:`CALIBRATE_FT_DEFAULT_HALF_WIDTH`), and the recording's
    base and sensors as for fit-whole-body (``base``, ``fixed_frame``, ``fixed_tilt``,
    ``imu_tilt``, ``flip_wrench_sign``, a bag's ``ft_topics`` and ``imu_topic``)."""

    sensors: tuple[str, ...] | None = None
    kind: str = "full"
    holdout: float = 0.25
    links: str | None = None
    filter_half_width: float | None = None
    base: str = "floating"
    fixed_frame: str | None = None
    fixed_tilt: tuple[float, float] = (0.0, 0.0)
    imu_tilt: str = FitWholeBodyOptions.imu_tilt
    flip_wrench_sign: tuple[str, ...] = ()
    ft_topics: tuple[tuple[str, str], ...] = ()
    imu_topic: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in FT_CALIBRATION_KINDS:
            raise InputError(f"--kind must be one of {FT_CALIBRATION_KINDS}, got {self.kind!r}")
        if not 0.0 <= self.holdout < 1.0:
            raise InputError(f"--holdout must be in [0, 1), got {self.holdout}")

    def whole_body(self) -> FitWholeBodyOptions:
        """The fit-whole-body options that read the recording alike."""
        return FitWholeBodyOptions(
            base=self.base,
            fixed_frame=self.fixed_frame,
            fixed_tilt=self.fixed_tilt,
            imu_tilt=self.imu_tilt,
            flip_wrench_sign=self.flip_wrench_sign,
            filter_half_width=self.filter_half_width or CALIBRATE_FT_DEFAULT_HALF_WIDTH,
            ft_topics=self.ft_topics,
            imu_topic=self.imu_topic,
        )


@dataclass(frozen=True)
class FTCalibrationFit(JobResult[dict[str, "FTCalibration"]]):
    """The calibrations by sensor frame (``estimate``), their ``held_out`` errors (``None``
    without a held-out part) and the calibration file's content (``calibration_file``)."""

    held_out: dict[str, HeldOutErrors] | None = None
    calibration_file: dict[str, Any] = field(default_factory=dict)


def calibrate_ft(
    urdf: str, source: LogSource, options: CalibrateFTOptions = CalibrateFTOptions()
) -> FTCalibrationFit:
    """Calibrate the F/T sensors of the robot of the URDF file ``urdf`` on the recording of
    ``source`` (a whole-body NPZ, bag or input description) with ``options``."""
    return in_source_terms(source, lambda: _calibrate_ft(urdf, source, options))


def _calibrate_ft(
    urdf: str, source: LogSource, options: CalibrateFTOptions = CalibrateFTOptions()
) -> FTCalibrationFit:
    """:func:`calibrate_ft` with the fixes in the library's terms."""
    import time

    import numpy as np

    from inertia_id_ros.chain.ft_calibration import sensor_references

    started = time.perf_counter()
    _refuse_calibrated(source)
    wb = options.whole_body()
    loaded = read_recording(urdf, source, wb)
    found = list(loaded.notes)
    with carrying(found):
        model, samples = _rows(urdf, loaded, wb, options.filter_half_width or FILTER_CANDIDATES[0])
        frames = _sensors(model, options.sensors, source.path)
        prior = _trusted_links(model, options.links)
        period = float(np.median(np.diff(loaded.recording.states.t)))
        if options.filter_half_width is None:
            first = (model, samples)
            scores = _filter_scores(urdf, loaded, wb, frames, prior, options.holdout, first)
            chosen = min(scores, key=lambda k: scores[k][0])
            options = replace(options, filter_half_width=chosen)
            found.append(_filter_note({k: v[0] for k, v in scores.items()}))
            model, samples = scores[chosen][1:]
        references = sensor_references(model, samples, prior)
    references = {frame: references[frame] for frame in frames}
    return _calibrate(references, period, options, source.path, started, found)


def _refuse_calibrated(source: LogSource) -> None:
    """An :class:`InputError` when ``source`` applies an F/T calibration: a calibration is
    fitted to the readings as logged (after their sign)."""
    frames = source.description().calibrated_frames() if source.input is not None else []
    if source.ft_calibration is not None or frames:
        where = f"the 'calibration' of {frames} in {source.input}" if frames else "--ft-calibration"
        raise InputError(
            f"calibrate-ft fits the readings as logged: remove {where} (calibrating on top of "
            "a calibration would write a file relative to it)"
        )


def _rows(
    urdf: str, loaded: Loaded, wb: FitWholeBodyOptions, half_width: float
) -> tuple[WholeBodyModel, WholeBodySamples]:
    """The model (every link known) and samples of ``loaded``, differentiated over
    ``half_width`` s."""
    return model_and_samples(urdf, loaded, replace(wb, bodies=(), filter_half_width=half_width))


def _filter_scores(
    urdf: str,
    loaded: Loaded,
    wb: FitWholeBodyOptions,
    frames: list[str],
    prior: np.ndarray | None,
    holdout: float,
    first: tuple[WholeBodyModel, WholeBodySamples],
) -> dict[float, tuple[float, WholeBodyModel, WholeBodySamples]]:
    """Per candidate half-width (:data:`FILTER_CANDIDATES`) the cross-validated error with which
    its reference predicts the raw readings of ``frames`` on the training part
    (:func:`~inertia_id_ros.chain.ft_calibration.reading_prediction_error`, at most
    :data:`FILTER_CV_SAMPLES` samples), summed over the sensors; with the model and samples
    (``first``: those of the first candidate, already differentiated)."""
    from inertia_id_ros.chain.ft_calibration import reading_prediction_error, sensor_references

    scores = {}
    for half_width in FILTER_CANDIDATES:
        model, samples = (
            first if half_width == FILTER_CANDIDATES[0] else _rows(urdf, loaded, wb, half_width)
        )
        split = int(round(len(samples) * (1.0 - holdout)))
        step = max(split // FILTER_CV_SAMPLES, 1)
        references = sensor_references(model, samples.subset(slice(0, split, step)), prior)
        score = sum(reading_prediction_error(*references[f]) for f in frames)
        scores[half_width] = (score, model, samples)
    return scores


def _filter_note(scores: dict[float, float]) -> Finding:
    """A note naming the chosen filter and the runner-up, with their scores."""
    ranked = sorted(scores, key=scores.__getitem__)
    best, second = ranked[0], ranked[1]
    return Finding(
        "filter_choice",
        "",
        NOTE,
        f"derivative filter ±{best:g} s chosen by cross-validation (score {scores[best]:.4g}); "
        f"runner-up ±{second:g} s ({scores[second]:.4g})",
        {"chosen": best, "runner_up": second, "scores": {str(k): v for k, v in scores.items()}},
    )


def calibrate_wrist_ft(
    urdf: str,
    sensor_frame: str,
    payload: str,
    source: LogSource,
    options: CalibrateFTOptions = CalibrateFTOptions(),
) -> FTCalibrationFit:
    """Calibrate the wrist F/T sensor at ``sensor_frame`` of the arm of the URDF file ``urdf``
    on the payload recording of ``source`` (an NPZ or CSV, or a bag), the reference the wrench
    of the trusted payload of the result JSON ``payload`` (its body about and in the sensor
    frame: a known body, or a fit-payload result of a calibrated sensor); ``options`` as for
    :func:`calibrate_ft` (``flip_wrench_sign`` naming the sensor frame: the readings negated)."""
    import time

    import numpy as np

    from inertia_id_ros.core.kinematics import SensorKinematics
    from inertia_id_ros.formats.data import read_payload_bag, read_payload_file, with_derivatives
    from inertia_id_ros.formats.export import read_known_body
    from inertia_id_ros.modes.payload import payload_rows
    from inertia_id_ros.options import DEFAULT_JOINT_STATES_TOPIC, DEFAULT_WRENCH_TOPIC

    started = time.perf_counter()
    if source.uses_description():
        raise InputError("calibrate-ft --sensor-frame takes --data or --bag, not --input")
    recording = (
        read_payload_file(source.data)
        if source.data is not None
        else read_payload_bag(
            source.path,
            source.joint_states_topic or DEFAULT_JOINT_STATES_TOPIC,
            source.wrench_topic or DEFAULT_WRENCH_TOPIC,
        )
    )
    theta = read_known_body(payload, sensor_frame, InputError)
    try:
        kinematics = SensorKinematics(load_urdf(urdf), sensor_frame)
    except ValueError as e:
        raise InputError(str(e)) from None
    options = replace(
        options, filter_half_width=options.filter_half_width or CALIBRATE_FT_DEFAULT_HALF_WIDTH
    )
    states = with_derivatives(
        recording.joint_states, options.filter_half_width or CALIBRATE_FT_DEFAULT_HALF_WIDTH
    )
    _, Y, logged = payload_rows(kinematics, replace(recording, joint_states=states))
    sign = -1.0 if sensor_frame in options.flip_wrench_sign else 1.0
    reference = sign * (Y[:, :, :10] @ theta)
    period = float(np.median(np.diff(recording.wrenches.t)))
    references = {sensor_frame: (logged, reference)}
    return _calibrate(references, period, replace(options, links=payload), source.path, started, [])


def _calibrate(
    references: dict[str, tuple[np.ndarray, np.ndarray]],
    period: float,
    options: CalibrateFTOptions,
    source: str,
    started: float,
    found: list[Finding],
) -> FTCalibrationFit:
    """Each sensor's calibration from its ``(readings, reference)`` (readings smoothed over the
    options' half-width; the sample ``period`` s), fitted on the first ``1 - holdout`` and
    checked on the rest; ``started`` the job's start (``time.perf_counter``)."""
    import time

    from inertia_id_ros.chain.ft_calibration import (
        fit_ft_calibration,
        held_out_errors,
        smooth_readings,
    )
    from inertia_id_ros.formats.ft_calibration import ft_calibration_document

    n = len(next(iter(references.values()))[0])
    split = n if options.holdout == 0 else int(round(n * (1.0 - options.holdout)))
    calibrations, held_out = {}, {}
    for frame, (logged, reference) in references.items():
        half_width = options.filter_half_width or CALIBRATE_FT_DEFAULT_HALF_WIDTH
        readings = smooth_readings(logged, period, half_width)
        train = readings[:split], reference[:split]
        calibrations[frame] = fit_ft_calibration(*train, kind=options.kind)
        if split < n:
            test = readings[split:], reference[split:]
            held_out[frame] = held_out_errors(calibrations[frame], train, test)
    elapsed = time.perf_counter() - started
    file = ft_calibration_document(calibrations, source)
    document = _document(file, held_out, options, split, elapsed)
    document |= findings_document(found)
    summary = _summary(calibrations, held_out, options, source, split, n, elapsed)
    return FTCalibrationFit(
        calibrations, tuple(found), document, tuple(summary), held_out or None, file
    )


def _sensors(model: WholeBodyModel, named: tuple[str, ...] | None, source: str) -> list[str]:
    """The internal sensors to calibrate: ``named`` (each refused with a clear message when it
    is not an internal sensor of the recording) or all."""
    internal = [s.frame for s in model.sensors if s.kind == "internal"]
    if named is None:
        if not internal:
            raise InputError(f"{source}: no internal F/T sensor to calibrate")
        return internal
    for frame in named:
        if frame not in internal:
            raise InputError(
                f"{source}: --sensors {frame!r} is not an internal F/T sensor of the recording "
                f"(internal sensors: {internal}); contact sensors are not calibrated"
            )
    return list(named)


def _trusted_links(model: WholeBodyModel, links: str | None) -> np.ndarray | None:
    """(L, 10) the model's links with those of the fit-whole-body result ``links`` (``None``:
    the URDF's)."""
    if links is None:
        return None
    import numpy as np

    from inertia_id_ros.formats.export import read_result

    result = read_result(links)
    thetas = {b["name"]: b["theta"] for b in result.get("bodies", []) if "theta" in b}
    if not thetas:
        raise InputError(f"{links}: no 'bodies' with 'theta' (a fit-whole-body result JSON)")
    prior = np.array(model.link_prior, dtype=float)
    for u, link in enumerate(model.links):
        if link in thetas:
            prior[u] = np.asarray(thetas[link], dtype=float)
    return prior


def _document(
    file: dict[str, Any],
    held_out: dict[str, HeldOutErrors],
    options: CalibrateFTOptions,
    split: int,
    elapsed: float,
) -> dict[str, Any]:
    """The result JSON: the calibration file's content, the options that shaped it, the
    held-out errors per sensor (``current``: the old calibration with fitted offsets;
    ``calibrated``; ``ratio``; per axis, N and N m) and the time taken."""
    return {
        **file,
        "kind": options.kind,
        "links": options.links or "urdf",
        "filter_half_width": options.filter_half_width,
        "train_samples": split,
        "holdout": options.holdout,
        "held_out": {
            frame: {
                "current": e.current.tolist(),
                "calibrated": e.calibrated.tolist(),
                "ratio": e.ratio.tolist(),
            }
            for frame, e in held_out.items()
        },
        "time_s": elapsed,
    }


AXES = ("fx", "fy", "fz", "tx", "ty", "tz")


def _summary(
    calibrations: dict[str, FTCalibration],
    held_out: dict[str, HeldOutErrors],
    options: CalibrateFTOptions,
    source: str,
    split: int,
    n: int,
    elapsed: float,
) -> list[str]:
    """The calibration for people: per sensor the gains (diagonal), the largest cross-coupling,
    the offset; the held-out errors per axis before and after."""
    import numpy as np

    lines = [
        f"calibrate-ft ({options.kind}, links {options.links or 'from the URDF'}): "
        f"{len(calibrations)} sensors, {split} of {n} samples from {source}; {elapsed:.2f} s"
    ]
    for frame, c in calibrations.items():
        diagonal = np.diag(c.matrix)
        coupling = np.abs(c.matrix - np.diag(diagonal)).max()
        lines.append(
            f"{frame}: gains "
            + " ".join(f"{g:.3f}±{s:.3f}" for g, s in zip(diagonal, np.diag(c.matrix_std)))
            + f"; cross-coupling up to {coupling:.3f}; offset "
            + " ".join(f"{o:.2f}" for o in c.offset)
        )
    if held_out:
        lines.append(
            f"held-out last {100 * options.holdout:g} %: RMS wrench error (N, N m) per axis, "
            "current calibration with fitted offsets -> calibrated (ratio)"
        )
        for frame, e in held_out.items():
            lines.append(
                f"  {frame}: "
                + ", ".join(
                    f"{a} {b:.3g}->{c:.3g} ({r:.2f})"
                    for a, b, c, r in zip(AXES, e.current, e.calibrated, e.ratio)
                )
            )
    return lines
