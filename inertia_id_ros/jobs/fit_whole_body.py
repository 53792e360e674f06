"""The fit-whole-body job: every link of a robot on a floating, fixed or suspended base from its
joint states, IMU and F/T sensors (:func:`~inertia_id_ros.chain.whole_body_fit.fit_whole_body`;
data: :mod:`inertia_id_ros.formats.whole_body_log`), checked for plausibility
(:mod:`inertia_id_ros.offline.plausibility`) and, when asked, on the samples it holds out
(:func:`~inertia_id_ros.chain.whole_body_fit.holdout_comparison`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from inertia_id_ros.errors import EstimateUnavailable, InputError, ProblemError, SolverError
from inertia_id_ros.findings import NOTE, WARN, Finding, refused
from inertia_id_ros.jobs.base import (
    JobResult,
    carrying,
    findings_document,
    in_source_terms,
)
from inertia_id_ros.jobs.whole_body_recording import Loaded, model_and_samples, read_recording
from inertia_id_ros.modes.whole_body import WholeBodyMode
from inertia_id_ros.offline.summary import whole_body_table
from inertia_id_ros.options import (
    DEFAULT_IMU_TILT,
    WHOLE_BODY_DEFAULT_PRIOR_WEIGHT,
    WHOLE_BODY_DEFAULT_WEIGHTING,
)

if TYPE_CHECKING:
    from inertia_id_ros.chain import whole_body_fit
    from inertia_id_ros.core.whole_body_model import WholeBodyModel, WholeBodySamples
    from inertia_id_ros.formats.source import LogSource
    from inertia_id_ros.formats.whole_body_log import WholeBodyRecording
    from inertia_id_ros.offline.volumes import Volume

WHOLE_BODY_FILTER_CANDIDATES = (0.025, 0.05, 0.1, 0.15, 0.2)
"""Half-widths (± s) among which a whole-body fit chooses its derivative filter."""
WHOLE_BODY_READ_HALF_WIDTH = 0.05
"""The half-width (± s) with which a recording is first read, before its filter is chosen."""
PINNED = "pinned at 0 kg (not identified)"
"""A link's identifiability when its mass sits at its bound (never "identified")."""


@dataclass(frozen=True)
class FitWholeBodyOptions:
    """How to fit the links: ``method`` (lmi, pointmass or ols: the unconstrained baseline), the
    ``base`` (floating: moved as its IMU says; fixed: held at ``fixed_frame``, default the URDF
    root, tilted by ``fixed_tilt`` (roll, pitch; rad) or, with IMU data and ``imu_tilt``
    ``correct``, as the IMU says; suspended), the ``bodies`` identified (default every link with
    mass; the others keep their URDF inertials), ``prior_weight`` (the pull toward the URDF),
    ``holdout`` (fit on the first 1 - holdout of the samples, predict the rest), ``efforts``
    (joint-torque rows from the recorded efforts), ``flip_wrench_sign`` (frames of F/T sensors
    that report the opposite wrench), ``estimate_contact_offsets``, ``weighting`` (none or
    channel), ``filter_half_width`` (s) of the joint states' and the gyro's differentiation
    (``None``: chosen by cross-validation on held-out time blocks of the training part,
    :func:`~inertia_id_ros.chain.whole_body_filter.choose_filter`),
    ``free_fall`` (the robot touched nothing), ``bounding_ellipsoid`` (each link's mass within
    its grown collision geometry); a bag's ``ft_topics`` ((topic, kind) per F/T sensor, the
    first setting the stamps) and ``imu_topic``."""

    method: str = "lmi"
    base: str = "floating"
    fixed_frame: str | None = None
    fixed_tilt: tuple[float, float] = (0.0, 0.0)
    imu_tilt: str = DEFAULT_IMU_TILT
    bodies: tuple[str, ...] | None = None
    prior_weight: float = WHOLE_BODY_DEFAULT_PRIOR_WEIGHT
    holdout: float | None = None
    efforts: bool = False
    flip_wrench_sign: tuple[str, ...] = ()
    estimate_contact_offsets: bool = False
    weighting: str = WHOLE_BODY_DEFAULT_WEIGHTING
    filter_half_width: float | None = None
    free_fall: bool = False
    bounding_ellipsoid: bool = False
    ft_topics: tuple[tuple[str, str], ...] = ()
    imu_topic: str | None = None

    @property
    def half_width(self) -> float:
        """The filter's half-width (s): the one given, else (before a choice)
        :data:`WHOLE_BODY_READ_HALF_WIDTH`."""
        given = self.filter_half_width
        return WHOLE_BODY_READ_HALF_WIDTH if given is None else given

    def __post_init__(self) -> None:
        if self.prior_weight < 0:
            raise InputError(f"--prior-weight must be >= 0, got {self.prior_weight}")
        if self.base != "fixed" and (self.fixed_frame is not None or any(self.fixed_tilt)):
            raise InputError("--fixed-frame and --fixed-tilt apply to --base fixed")


@dataclass(frozen=True)
class WholeBodyFit(JobResult["whole_body_fit.WholeBodyFit"]):
    """A whole-body fit: ``estimate`` the links' and sensor offsets' fit
    (:class:`~inertia_id_ros.chain.whole_body_fit.WholeBodyFit`), of ``model`` (the links,
    sensors and base fitted); ``holdout`` per row group the force and torque RMS errors on the
    held-out samples (N, N m) of the fit, the URDF and OLS, when asked."""

    model: WholeBodyModel | None = None
    holdout: dict[str, dict[str, Any]] | None = None


def fit_whole_body(
    urdf: str, source: LogSource, options: FitWholeBodyOptions = FitWholeBodyOptions()
) -> WholeBodyFit:
    """Every link of the robot of the URDF file ``urdf`` (and its sensors' offsets) from the
    recording of ``source`` (an NPZ, a bag or an input description), with ``options``."""
    return in_source_terms(source, lambda: _fit_whole_body(urdf, source, options))


def _fit_whole_body(
    urdf: str, source: LogSource, options: FitWholeBodyOptions = FitWholeBodyOptions()
) -> WholeBodyFit:
    """:func:`fit_whole_body` with the fixes in the library's terms."""
    from inertia_id_ros.formats.units import check_time_units, log_unit_findings
    from inertia_id_ros.offline.plausibility import free_fall_finding, stance_tilt_finding
    from inertia_id_ros.offline.volumes import ellipsoids_of, link_volumes, volumes_holding

    loaded = read_recording(urdf, source, options)
    recording = loaded.recording
    found = [*loaded.notes, *_uncovered_findings(recording)]  # reported before an error
    choice = None
    with carrying(found):
        checks = check_time_units(recording.states.t, "joint state stamps")  # before using them
        if refused(checks):
            return WholeBodyFit(None, (*found, *checks), findings_document(checks))
        found += checks
        model, samples = model_and_samples(urdf, loaded, options)
        efforts = _check_rows(model, samples, recording.source, loaded, options)
        checks = free_fall_finding(options.base, recording.ft_types, options.free_fall)
        checks += stance_tilt_finding(options.fixed_frame, _imu_tilt(recording, model, options))
        checks += log_unit_findings(recording.states, model.model, list(model.joint_names))
        if refused(checks):
            return WholeBodyFit(None, (*found, *checks), findings_document(checks))
        found += checks
        if options.filter_half_width is None:
            options, choice = _filter_choice(urdf, source, options, loaded.holdout, efforts)
            loaded = replace(read_recording(urdf, source, options), holdout=loaded.holdout)
            recording = loaded.recording
            model, samples = model_and_samples(urdf, loaded, options)
        tilt_line, tilt_findings = _tilt(recording, model, options)
        found += tilt_findings
        volumes = volumes_holding(
            link_volumes(urdf, model.bodies), dict(zip(model.links, model.link_prior))
        )
        ellipsoids = ellipsoids_of(volumes, model.bodies) if options.bounding_ellipsoid else None
        fit, holdout = _fit(model, samples, options, loaded.holdout, efforts, ellipsoids)
        still, planar = _still_joints(recording, model, samples, fit, efforts)
    held_out = None if holdout is None else {"fraction": loaded.holdout, "rms": holdout}
    document, findings = _document(
        model,
        samples,
        fit,
        efforts,
        volumes,
        options,
        held_out,
        ([choice] if choice is not None else []) + planar,
        still,
    )
    summary = [
        *_summary(model, fit, document, source.path, options, tilt_line),
        *_holdout_lines(holdout, loaded.holdout, options.method),
    ]
    return WholeBodyFit(fit, (*found, *findings), document, tuple(summary), model, holdout)


def _filter_choice(
    urdf: str,
    source: LogSource,
    options: FitWholeBodyOptions,
    holdout: float | None,
    efforts: bool,
) -> tuple[FitWholeBodyOptions, Finding]:
    """``(options, note)``: ``options`` with the half-width
    :func:`~inertia_id_ros.chain.whole_body_filter.choose_filter` picks on the training part (the
    first 1 - ``holdout``; the recording read and differentiated once per candidate) and a note
    naming it, the runner-up and their scores."""
    import numpy as np

    from inertia_id_ros.chain.whole_body_filter import choose_filter

    def rows_of(half_width: float) -> tuple[WholeBodyModel, WholeBodySamples]:
        each = replace(options, filter_half_width=half_width)
        model, samples = model_and_samples(urdf, read_recording(urdf, source, each), each)
        train = len(samples) - int(round(len(samples) * (holdout or 0.0)))
        return model, samples.subset(slice(0, train))

    t = read_recording(urdf, source, options).recording.states.t
    choice = choose_filter(
        rows_of,
        WHOLE_BODY_FILTER_CANDIDATES,
        float(np.median(np.diff(t))),
        options.prior_weight,
        efforts,
    )
    runner = "" if choice.runner_up is None else f"; runner-up ±{choice.runner_up:g} s"
    scores = ", ".join(f"±{h:g} s {v:.4g}" for h, v in choice.scores.items())
    note = Finding(
        "filter_choice",
        "",
        NOTE,
        f"derivative filter ±{choice.half_width:g} s chosen by cross-validation on held-out "
        f"time blocks{runner} (mean squared row error: {scores})",
        {
            "half_width": choice.half_width,
            "runner_up": choice.runner_up,
            "scores": {str(h): v for h, v in choice.scores.items()},
        },
    )
    return replace(options, filter_half_width=choice.half_width), note


def _uncovered_findings(recording: WholeBodyRecording) -> list[Finding]:
    """A warning per bag topic that does not cover some stamps of the first F/T topic (their
    rows are dropped)."""
    return [
        Finding(
            "uncovered_stamps",
            "",
            WARN,
            f"{topic!r} does not cover {count} stamps (stopped or not started): their rows "
            "are dropped",
            {"topic": topic, "stamps": count},
        )
        for topic, count in recording.uncovered.items()
    ]


def _check_rows(
    model: WholeBodyModel,
    samples: WholeBodySamples,
    source: str,
    loaded: Loaded,
    options: FitWholeBodyOptions,
) -> bool:
    """Whether the fit takes joint-torque rows (``efforts`` asked and recorded), after refusing
    (:class:`InputError`) rows that held joints move, a held-out fraction outside (0, 1) and a
    model without rows."""
    from inertia_id_ros.formats.held import rows_moved_by

    if loaded.held:
        moved = rows_moved_by(model, samples, list(loaded.held), options.efforts)
        if moved:
            raise InputError(
                f"{source}: the rows {moved} depend on the motion of held joint(s) "
                f"{sorted(loaded.held)} (not in the log); log them, or fit a model whose rows "
                "they do not move (--base fixed, sensors beyond them)"
            )
    if loaded.holdout is not None and not 0.0 < loaded.holdout < 1.0:
        raise InputError(f"--holdout must be in (0, 1), got {loaded.holdout}")
    efforts = options.efforts and samples.efforts is not None
    if not model.channels(efforts):
        raise InputError(
            f"--base {model.base} with contact F/T sensors only"
            + ("" if efforts else " and no joint efforts")
            + ": no rows to fit (a fixed base has no base rows; give internal "
            "sensors or --efforts with recorded efforts)"
        )
    return efforts


def _imu_tilt(
    recording: WholeBodyRecording, model: WholeBodyModel, options: FitWholeBodyOptions
) -> tuple[float, float] | None:
    """The fixed base's (roll, pitch) (rad) the IMU measures; ``None`` without an IMU or for
    another base."""
    from inertia_id_ros.formats.whole_body_log import imu_fixed_tilt

    if model.base != "fixed" or not recording.imu or model.imu_frame is None:
        return None
    if options.imu_tilt == "correct":
        return model.fixed_tilt
    roll, pitch = imu_fixed_tilt(recording, model, options.half_width)
    return float(roll), float(pitch)


def _tilt(
    recording: WholeBodyRecording, model: WholeBodyModel, options: FitWholeBodyOptions
) -> tuple[str | None, list[Finding]]:
    """A fixed base's line: its frame and tilt as used, with IMU data the IMU's mean tilt beside
    it; and a warning when ``imu_tilt`` ``check`` finds them further apart than
    :data:`~inertia_id_ros.core.base_motion.TILT_CHECK_TOLERANCE`. ``(None, [])`` for
    another base."""
    import numpy as np

    from inertia_id_ros.core.base_motion import TILT_CHECK_TOLERANCE, tilt_difference
    from inertia_id_ros.formats.whole_body_log import imu_fixed_tilt

    if model.base != "fixed":
        return None, []
    frame = model.fixed_frame or "the URDF root"
    given = np.degrees(model.fixed_tilt)
    if not recording.imu or options.imu_tilt == "correct":
        source = "from the IMU" if recording.imu else "given"
        return f"fixed at {frame}, tilt roll {given[0]:.2f}° pitch {given[1]:.2f}° ({source})", []
    measured = tuple(imu_fixed_tilt(recording, model, options.half_width).tolist())
    roll, pitch = np.degrees(measured)
    apart_rad = tilt_difference(model.fixed_tilt, measured)
    apart = np.degrees(apart_rad)
    findings = []
    if apart_rad > TILT_CHECK_TOLERANCE:
        findings.append(
            Finding(
                "imu_tilt",
                "",
                WARN,
                f"the IMU tilts {frame} by roll {roll:.2f}° pitch {pitch:.2f}°, "
                f"{apart:.1f}° from --fixed-tilt (roll {given[0]:.2f}° pitch "
                f"{given[1]:.2f}°); --imu-tilt correct uses the IMU's",
                {"imu_tilt_deg": [float(roll), float(pitch)], "apart_deg": float(apart)},
            )
        )
    line = (
        f"fixed at {frame}, tilt roll {given[0]:.2f}° pitch {given[1]:.2f}° (given; the IMU "
        f"measures roll {roll:.2f}° pitch {pitch:.2f}°, {apart:.2f}° apart)"
    )
    return line, findings


def _fit(
    model: WholeBodyModel,
    samples: WholeBodySamples,
    options: FitWholeBodyOptions,
    holdout: float | None,
    efforts: bool,
    ellipsoids: list[Any] | None,
) -> tuple[whole_body_fit.WholeBodyFit, dict[str, dict[str, Any]] | None]:
    """``(fit, held-out errors)``: the fit on all ``samples``, or on the first 1 - ``holdout``
    with the errors predicting the rest (``None`` without). A failed solve raises
    :class:`EstimateUnavailable`."""
    from inertia_id_ros.chain import whole_body_fit as chain

    try:
        if holdout is None:
            fit = chain.fit_whole_body(
                model,
                samples,
                options.method,
                prior_weight=options.prior_weight,
                with_efforts=efforts,
                weighting=options.weighting,
                bounding_ellipsoids=ellipsoids,
            )
            return fit, None
        return chain.holdout_comparison(
            model,
            samples,
            holdout,
            options.method,
            options.prior_weight,
            efforts,
            options.weighting,
            bounding_ellipsoids=ellipsoids,
        )
    except ProblemError as e:
        raise EstimateUnavailable("invalid_problem", str(e)) from e
    except SolverError as e:
        raise EstimateUnavailable("solver_failed", str(e)) from e


def _still_joints(
    recording: WholeBodyRecording,
    model: WholeBodyModel,
    samples: WholeBodySamples,
    fit: whole_body_fit.WholeBodyFit,
    efforts: bool,
) -> tuple[tuple[str, ...], list[Finding]]:
    """``(still, findings)``: the logged joints whose motion stays within their encoder noise
    (:func:`~inertia_id_ros.chain.stillness.joint_motions`) and, when there are any, the
    ``effectively_planar`` note with the rank of the rows with them held at their mean, at rest,
    beside the fit's (their noise counted as motion)."""
    from inertia_id_ros.chain.stillness import joint_motions, still_names
    from inertia_id_ros.chain.whole_body_fit import (
        identifiability,
        normal_equations,
        whole_body_problem,
    )
    from inertia_id_ros.offline.fit_checks import planar_findings

    states = recording.states
    names = [name for name in model.joint_names if name in states.joint_names]
    columns = [states.joint_names.index(name) for name in names]
    still = still_names(joint_motions(states.t, states.q[:, columns], names))
    if not still:
        return still, []
    held = [model.joint_names.index(name) for name in still]
    q, dq, ddq = samples.q.copy(), samples.dq.copy(), samples.ddq.copy()
    q[:, held] = q[:, held].mean(axis=0)
    dq[:, held] = ddq[:, held] = 0.0
    equations = normal_equations(model, replace(samples, q=q, dq=dq, ddq=ddq), efforts)
    problem, scales = whole_body_problem(model, equations, 0.0)
    rank = identifiability(model, problem.gram, scales).rank
    return still, planar_findings(still, rank, fit.identifiability.rank)


def _document(
    model: WholeBodyModel,
    samples: WholeBodySamples,
    fit: whole_body_fit.WholeBodyFit,
    efforts: bool,
    volumes: dict[str, Volume],
    options: FitWholeBodyOptions,
    held_out: dict[str, Any] | None,
    notes: list[Finding],
    still: Sequence[str] = (),
) -> tuple[dict[str, Any], list[Finding]]:
    """``(document, findings)``: the result JSON (with the ``held_out`` errors as
    ``"holdout"``) and the checks after the fit, after the ``notes`` (the filter's choice, whose
    figures are ``differentiation``; the ``still`` joints, listed as ``still_joints``): each
    sensor's wrenches against the
    URDF's (a sign), residuals per sensor against the unconstrained fit, masses pinned at zero
    (their links' identifiability :data:`PINNED`), the links' bounding volumes."""
    from inertia_id_ros.chain.identify import PRIOR_MASS_FACTOR, mass_ratios
    from inertia_id_ros.formats.whole_body_log import whole_body_json
    from inertia_id_ros.offline.fit_checks import (
        whole_body_gain_findings,
        whole_body_residual_findings,
    )
    from inertia_id_ros.offline.plausibility import pinned_mass_findings, prior_mass_findings
    from inertia_id_ros.offline.volumes import volume_findings

    document = {
        "mode": WholeBodyMode.name,
        **whole_body_json(model, fit, options.method, fit.solve_time, efforts),
    }
    for note in notes:
        if note.kind == "filter_choice":
            document["differentiation"] = note.figures
    document["still_joints"] = list(still)
    if held_out is not None:
        document["holdout"] = held_out
    findings, gains = whole_body_gain_findings(model, samples, efforts)
    findings = notes + findings
    ratio_findings, ratios = whole_body_residual_findings(
        model, samples, fit.x, options.prior_weight, efforts
    )
    findings += ratio_findings
    prior = model.link_prior[[model.links.index(b) for b in model.bodies]]
    if options.method != "ols":
        findings += pinned_mass_findings(model.bodies, fit.thetas[:, 0], prior[:, 0])
    masses = fit.thetas[:, 0]
    far = mass_ratios(masses, prior[:, 0])
    findings += prior_mass_findings(model.bodies, far, masses, PRIOR_MASS_FACTOR)
    for name, theta in zip(model.bodies, fit.thetas):
        if name in volumes:
            findings += volume_findings(name, theta, volumes[name])
    pinned = {f.subject for f in findings if f.kind == "pinned_mass"}
    for body in document["bodies"]:
        if body["name"] in pinned:
            body["identifiability"] = PINNED
    document |= {"urdf_gains": gains, "residual_ratios": ratios, **findings_document(findings)}
    return document, findings


def _summary(
    model: WholeBodyModel,
    fit: whole_body_fit.WholeBodyFit,
    document: dict[str, Any],
    source: str,
    options: FitWholeBodyOptions,
    tilt_line: str | None,
) -> list[str]:
    """The fit for people: the data and rows used, the identifiability, the fixed base's tilt,
    each link and sensor offset, the residual, the weights."""
    from inertia_id_ros.offline.fit_checks import identifiability_lines

    lines = [
        f"fit-whole-body ({options.method}, {model.base} base): {fit.n_samples} samples, "
        f"{model.n_bodies} links, {len(model.sensors)} F/T sensors from {source}; "
        f"solve {fit.solve_time:.3f} s ({fit.solution.status}); "
        f"{fit.identifiability.rank} of {fit.identifiability.n_params} base parameters; "
        f"weighting {options.weighting}",
        *identifiability_lines(fit.identifiability.combinations),
        *([tilt_line] if tilt_line else []),
        *whole_body_table(document),
    ]
    inconsistent = sum(not body["fully_consistent"] for body in document["bodies"])
    lines.append(f"residual rms {fit.residual_rms:.4f}; inconsistent links: {inconsistent}")
    if fit.weights is not None:
        weighting = document["weighting"]
        lines.append(
            f"weights ({weighting['iterations']} fits; residual std per row, N or N m): "
            + ", ".join(
                f"{name} {w:.3g} ({weighting['sigma'][name]:.3g})"
                for name, w in weighting["weights"].items()
            )
        )
    return lines


def _holdout_lines(
    holdout: dict[str, dict[str, Any]] | None, fraction: float | None, method: str
) -> list[str]:
    """The held-out errors for people: per row group the force / torque RMS errors of the fit,
    the URDF (with its offsets fitted) and OLS, and the fit's ratios to them."""
    if holdout is None or fraction is None:
        return []
    first = next(iter(holdout.values()))
    columns = [k for k in ("fit", "urdf", "urdf_offsets", "ols") if k in first["force"]]
    titles = {"fit": method, "urdf": "URDF", "urdf_offsets": "URDF+offsets", "ols": "OLS"}
    urdf = "urdf_offsets" if "urdf_offsets" in columns else "urdf"  # offsets are nuisances
    lines = [
        f"held-out last {100 * fraction:.3g} %: RMS error of the predicted wrenches "
        f"(force N / torque N m; the ratios force / torque); the OLS fit leaves "
        f"{first['ols_inconsistent_links']} links inconsistent",
        f"{'rows':<22}"
        + "".join(f"{titles[k]:>18}" for k in columns)
        + f"{'fit/' + titles[urdf]:>18}"
        + f"{'fit/OLS':>18}",
    ]
    for group, row in holdout.items():
        f, t = row["force"], row["torque"]
        lines.append(
            f"{group:<22}"
            + "".join(f"{f[k]:9.3f}/{t[k]:<8.3f}" for k in columns)
            + "".join(f"{f['fit'] / f[k]:9.3f}/{t['fit'] / t[k]:<8.3f}" for k in (urdf, "ols"))
        )
    return lines
