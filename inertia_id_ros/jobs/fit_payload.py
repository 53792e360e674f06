"""The fit-payload job: the payload beyond an F/T sensor from recorded joint states and wrenches,
fed through the node's estimator
(:class:`~inertia_id_ros.online.payload_estimator.PayloadEstimator`) in time order as live, then
checked for plausibility (:mod:`inertia_id_ros.offline.plausibility`) and, when asked, validated
on held-out data (:func:`~inertia_id_ros.jobs.validate.validate_fit`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from inertia_id_ros.errors import (
    DATA_LIMITED,
    ConfigError,
    EstimateUnavailable,
    InputError,
    SampleRejected,
)
from inertia_id_ros.findings import REMEDIES, Finding, refused
from inertia_id_ros.jobs.base import (
    JobResult,
    carrying,
    check_bounding_ellipsoid,
    findings_document,
    in_source_terms,
    load_urdf,
    payload_volume_of,
)
from inertia_id_ros.modes.payload import PayloadMode
from inertia_id_ros.offline.summary import body_lines, dropped_text
from inertia_id_ros.options import DEFAULT_HALF_WIDTH, PAYLOAD_DEFAULT_WEIGHTING

if TYPE_CHECKING:
    import numpy as np
    import pinocchio as pin

    from inertia_id_ros.core.kinematics import SensorKinematics
    from inertia_id_ros.formats.data import PayloadRecording
    from inertia_id_ros.formats.recording import Recording
    from inertia_id_ros.formats.source import LogSource
    from inertia_id_ros.jobs.validate import Validation
    from inertia_id_ros.offline.volumes import Volume
    from inertia_id_ros.online.payload_estimator import Estimate, PayloadEstimator

FEED_BLOCK_SEC = 0.5
"""Recorded samples are fed to the estimator in time order, this many seconds at a time, with a
``process()`` after each block (bounded buffers, as live)."""


@dataclass(frozen=True)
class FitPayloadOptions:
    """How to fit the payload: ``method`` (of the payload mode's), ``filter_half_width`` (s) of
    the joint states' differentiation, ``flip_wrench_sign`` (``True``: the sensor reports the
    wrench the body exerts on it, negate; ``False``: take the readings as they are; ``None``: as
    recorded, or the input description's sign), ``estimate_offset`` (the F/T sensor's constant
    offset), ``weighting`` (``none`` or ``channel``: each wrench component by its noise level),
    ``window_sec`` (use the newest seconds of the recording; 0: all); a CAD ``prior`` (method
    ``cad_prior``): a result JSON whose body is in the sensor frame, or ``prior_link`` of
    ``prior_urdf`` (default: the fit's URDF) with the links beyond it; the payload's volume for
    the checks and ``bounding_ellipsoid``: within ``payload_sphere`` m of the sensor frame's
    origin or ``payload_box`` half-extents (m); ``validate``: held-out data (a file or bag) to
    validate the result on."""

    method: str = "lmi"
    filter_half_width: float = DEFAULT_HALF_WIDTH
    flip_wrench_sign: bool | None = None
    estimate_offset: bool = True
    weighting: str = PAYLOAD_DEFAULT_WEIGHTING
    window_sec: float = 0.0
    prior: str | None = None
    prior_urdf: str | None = None
    prior_link: str | None = None
    payload_sphere: float | None = None
    payload_box: tuple[float, ...] | None = None
    bounding_ellipsoid: bool = False
    validate: str | None = None


@dataclass(frozen=True)
class PayloadFit(JobResult["Estimate"]):
    """A payload fit: ``estimate`` the estimator's
    (:class:`~inertia_id_ros.online.payload_estimator.Estimate`: ``theta`` about and in the
    sensor frame, the sensor's offset, ...); ``validation`` on held-out data when asked (and the
    fit not refused)."""

    validation: Validation | None = None


def fit_payload(
    urdf: str,
    sensor_frame: str,
    source: LogSource,
    options: FitPayloadOptions = FitPayloadOptions(),
) -> PayloadFit:
    """The payload beyond the F/T sensor at ``sensor_frame`` (a frame of the URDF file ``urdf``,
    the wrenches' frame) from the joint states and wrenches of ``source``, with ``options``."""
    return in_source_terms(source, lambda: _fit_payload(urdf, sensor_frame, source, options))


def _fit_payload(
    urdf: str,
    sensor_frame: str,
    source: LogSource,
    options: FitPayloadOptions = FitPayloadOptions(),
) -> PayloadFit:
    """:func:`fit_payload` with the fixes in the library's terms."""
    from inertia_id_ros.formats.units import log_unit_findings
    from inertia_id_ros.jobs.validate import validate_fit

    source.check_bag_options()
    _check_prior_options(options)
    check_bounding_ellipsoid(options.method, options.bounding_ellipsoid)
    model = load_urdf(urdf)
    recording, train, held_out, notes = _read(model, urdf, sensor_frame, source, options)
    found = list(notes)  # reported before an error raised from here on
    with carrying(found):
        kinematics = _sensor_kinematics(model, sensor_frame, recording, train)
        volume = payload_volume_of(options.payload_sphere, options.payload_box)
        checks = log_unit_findings(
            recording.joint_states,
            model,
            list(kinematics.joint_names),
            {"wrench stamps": recording.wrenches.t},
        )
        if refused(checks):
            return PayloadFit(None, (*found, *checks), findings_document(checks))
        found += checks
        prior = _payload_prior(options, model, sensor_frame)
        estimator = _estimator(kinematics, recording, options, prior, volume)
        feed_estimator(estimator, recording)
        estimate = _solve(estimator, recording.source)
        document, findings, identifiability = _document(sensor_frame, estimator, estimate, volume)
        found += findings
        summary = _summary(document, options, estimator, estimate, recording.source, prior)
        validation = None
        if not refused(findings):
            validation = validate_fit(
                document,
                urdf,
                source,
                options.validate,
                train,
                held_out,
                sensor_frame,
                options.filter_half_width,
            )
    return PayloadFit(estimate, tuple(found), document, (*summary, *identifiability), validation)


def _read(
    model: pin.Model, urdf: str, sensor_frame: str, source: LogSource, options: FitPayloadOptions
) -> tuple[PayloadRecording, Recording | None, Recording | None, list[Finding]]:
    """``(recording, train, held_out, notes)``: the payload's data of ``source`` (its wrenches
    negated for ``flip_wrench_sign``), the training and held-out parts of an input description
    (``None`` without one) and its loader's notes."""
    from inertia_id_ros.formats.data import read_payload_bag, read_payload_file
    from inertia_id_ros.options import DEFAULT_JOINT_STATES_TOPIC, DEFAULT_WRENCH_TOPIC

    if source.uses_description():
        train, held_out, notes = source.read_log(
            model, urdf, sensor_frame, options.flip_wrench_sign
        )
        with carrying(notes):
            return train.payload(sensor_frame), train, held_out, notes
    if source.data is not None:
        recording = read_payload_file(source.data)
    else:
        recording = read_payload_bag(
            source.path,
            source.joint_states_topic or DEFAULT_JOINT_STATES_TOPIC,
            source.wrench_topic or DEFAULT_WRENCH_TOPIC,
        )
    if options.flip_wrench_sign:
        wrenches = replace(recording.wrenches, wrench=-recording.wrenches.wrench)
        recording = replace(recording, wrenches=wrenches)
    return recording, None, None, []


def _sensor_kinematics(
    model: pin.Model, sensor_frame: str, recording: PayloadRecording, train: Recording | None
) -> SensorKinematics:
    """The kinematics of ``sensor_frame``, after checking that the recorded joints and wrenches
    fit the model (joints known and none the sensor depends on held, wrenches in that frame)."""
    from inertia_id_ros.core.kinematics import SensorKinematics
    from inertia_id_ros.formats.data import check_joints, check_wrench_frame

    try:
        kinematics = SensorKinematics(model, sensor_frame)
    except ValueError as e:
        raise InputError(str(e)) from None
    held = [j for j in kinematics.joint_names if train is not None and j in train.held]
    if held:
        raise InputError(
            f"{recording.source}: held joint(s) {held} (not in the log) move the "
            f"sensor {sensor_frame!r}: every wrench row depends on their motion"
        )
    check_joints(
        recording.joint_states, list(model.names)[1:], kinematics.joint_names, recording.source
    )
    check_wrench_frame(recording, sensor_frame)
    return kinematics


def _check_prior_options(options: FitPayloadOptions) -> None:
    """Refuse, before anything is read, prior options that do not fit together, and a method
    that needs a prior without one."""
    from inertia_id_ros.online.payload_estimator import check_prior_available

    if options.prior and (options.prior_urdf or options.prior_link):
        raise InputError("give either --prior or --prior-urdf/--prior-link, not both")
    if options.prior_urdf and not options.prior_link:
        raise InputError("--prior-urdf needs --prior-link (the link of the payload)")
    try:
        check_prior_available(options.method, bool(options.prior or options.prior_link))
    except ValueError:
        raise InputError(
            f"--method {options.method} needs the payload's CAD values as a prior: "
            "give --prior RESULT.json or --prior-link LINK (of --prior-urdf URDF, "
            "default --urdf)"
        ) from None


def _payload_prior(
    options: FitPayloadOptions, model: pin.Model, sensor_frame: str
) -> np.ndarray | None:
    """The prior theta (10,) of ``prior`` or ``prior_link`` in ``sensor_frame`` (``None``
    without one)."""
    from inertia_id_ros.formats.prior import prior_from_link, prior_from_result

    try:
        if options.prior:
            return prior_from_result(options.prior, sensor_frame)
        if options.prior_link:
            prior_model = load_urdf(options.prior_urdf) if options.prior_urdf else model
            return prior_from_link(prior_model, options.prior_link, sensor_frame)
    except ConfigError as e:
        raise InputError(f"prior: {e}") from None
    return None


def _estimator(
    kinematics: SensorKinematics,
    recording: PayloadRecording,
    options: FitPayloadOptions,
    prior: np.ndarray | None,
    volume: Volume,
) -> PayloadEstimator:
    """The node's estimator, its window holding the whole ``recording`` (or ``window_sec``)."""
    from inertia_id_ros.online.payload_estimator import EstimatorConfig, PayloadEstimator

    states, wrenches = recording.joint_states, recording.wrenches
    ellipsoid = volume.ellipsoid_matrix().ravel() if options.bounding_ellipsoid else None
    span = max(states.t[-1], wrenches.t[-1]) - min(states.t[0], wrenches.t[0])
    try:
        config = EstimatorConfig(
            window_sec=options.window_sec or span + 1.0,
            method=options.method,
            estimate_offset=options.estimate_offset,
            filter_half_width=options.filter_half_width,
            weighting=options.weighting,
            window_capacity=wrenches.t.size,
            prior=None if prior is None else tuple(prior.tolist()),
            bounding_ellipsoid=None if ellipsoid is None else tuple(ellipsoid.tolist()),
        )
    except ValueError as e:
        raise InputError(str(e)) from None
    return PayloadEstimator(kinematics, config)


def feed_estimator(estimator: PayloadEstimator, recording: PayloadRecording) -> None:
    """Add every joint state and wrench of ``recording`` to ``estimator`` in time order, in blocks
    of :data:`FEED_BLOCK_SEC`, processing after each block. Rejected samples are counted by the
    estimator (``estimator.dropped``)."""
    import numpy as np

    states, wrenches = recording.joint_states, recording.wrenches
    names = states.joint_names
    start = min(states.t[0], wrenches.t[0])
    end = max(states.t[-1], wrenches.t[-1])
    boundaries = np.append(np.arange(start, end, FEED_BLOCK_SEC)[1:], np.inf)
    joint_stops = np.searchsorted(states.t, boundaries, side="left")
    wrench_stops = np.searchsorted(wrenches.t, boundaries, side="left")
    joint_start = wrench_start = 0
    for joint_stop, wrench_stop in zip(joint_stops, wrench_stops):
        for i in range(joint_start, joint_stop):
            try:
                estimator.add_joint_state(
                    states.t[i], names, states.q[i], None if states.dq is None else states.dq[i]
                )
            except SampleRejected:
                pass
        for k in range(wrench_start, wrench_stop):
            try:
                estimator.add_wrench(wrenches.t[k], wrenches.wrench[k])
            except SampleRejected:
                pass
        joint_start, wrench_start = joint_stop, wrench_stop
        estimator.process()


def _solve(estimator: PayloadEstimator, source: str) -> Estimate:
    """The estimator's estimate, consistent or not (a baseline such as ``ols`` may be
    inconsistent: reported, flagged, never hidden). Data that cannot determine it are an
    :class:`InputError` naming ``source`` and the samples dropped; a failed solve raises
    :class:`EstimateUnavailable`."""
    try:
        return estimator.solve(require_consistent=False)
    except EstimateUnavailable as e:
        if e.reason not in DATA_LIMITED:
            raise
        dropped = estimator.stats().dropped
        detail = f" (samples dropped: {dropped_text(dropped)})" if dropped else ""
        known = REMEDIES["known_offset"]  # the estimator's fix, in the command line's terms
        message = e.message.replace(known["node"], known["flags"])
        raise InputError(f"{source}: no estimate: {message}{detail}") from None


def _document(
    sensor_frame: str, estimator: PayloadEstimator, estimate: Estimate, volume: Volume
) -> tuple[dict[str, Any], list[Finding], list[str]]:
    """``(document, findings, identifiability)``: the result JSON, the checks after the fit
    (residuals against the unconstrained fit, the bounding volume) and how well the data
    determine the payload, in lines."""
    from inertia_id_ros.formats.export import body_json
    from inertia_id_ros.offline.fit_checks import (
        identifiability_json,
        identifiability_lines,
        payload_base_parameters,
        payload_fit_findings,
    )

    _, Y, f = estimator.window.samples(copy=False)
    with_offset = estimator.config.estimate_offset
    findings, ratios = payload_fit_findings(sensor_frame, Y, f, estimate, with_offset, volume)
    bp = payload_base_parameters(Y, with_offset)
    document = {
        "mode": PayloadMode.name,
        "method": estimate.method,
        "bodies": [body_json("payload", sensor_frame, estimate.theta)],
        "sensor_offset": estimate.sensor_offset.tolist(),
        "residual_rms": estimate.residual_rms,
        "samples": estimate.n_samples,
        "solve_time_s": estimate.solve_time,
        "residual_ratios": ratios,
        "identifiability": identifiability_json(bp),
        **findings_document(findings),
    }
    return document, findings, identifiability_lines(bp)


def _summary(
    document: dict[str, Any],
    options: FitPayloadOptions,
    estimator: PayloadEstimator,
    estimate: Estimate,
    source: str,
    prior: np.ndarray | None,
) -> list[str]:
    """The fit (its result JSON ``document``) for people: the data used, the payload, its prior,
    the sensor's offset, the residual, the standard errors."""
    body = document["bodies"][0]
    dropped = estimator.stats().dropped
    offset = estimate.sensor_offset
    lines = [
        f"fit-payload ({estimate.method}): {estimate.n_samples} wrench samples over "
        f"{estimate.t_last - estimate.t_first:.1f} s from {source}"
        + (f"; dropped {dropped_text(dropped)}" if dropped else ""),
        f"payload beyond {body['frame']!r}, in that frame:",
        *body_lines(body),
    ]
    if prior is not None:
        lines.append(f"  prior {options.prior or options.prior_link!r}: mass {prior[0]:.4f} kg")
    if options.estimate_offset:
        lines.append(
            "  F/T offset ["
            + ", ".join(f"{v:.3f}" for v in offset[:3])
            + "] N, ["
            + ", ".join(f"{v:.4f}" for v in offset[3:])
            + "] N m"
        )
    lines.append(
        f"  residual rms {estimate.residual_rms:.4g}, solve time "
        f"{estimate.solve_time:.3f} s" + (f" ({estimate.message})" if estimate.message else "")
    )
    std = estimate.theta_std
    lines.append(
        f"  standard errors: mass {std[0]:.2g} kg, first moments "
        + ", ".join(f"{v:.2g}" for v in std[1:4])
        + " kg m"
    )
    return lines
