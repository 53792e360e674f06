"""The fit-payload-torques job: the payload at a frame of an arm without an F/T sensor, from
recorded joint states and efforts (:func:`~inertia_id_ros.chain.payload_from_torques.fit_payload`).

Two routes:

- **a link model**: the torques the links and drives need without the payload (``links_result``:
  a ``fit-links`` result, with friction and offsets, whose differentiation filter and torque delay
  the data then get; else the URDF's links, without friction) are subtracted from the measured
  ones, and the payload's regressor fitted to the rest;
- **differencing** (``unloaded``): a loaded and an unloaded run of the same motion; at the same
  joint states the links' and drives' torques are equal, so their difference is the payload's
  alone, and the link model cancels (no URDF masses or friction enter).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from inertia_id_ros.errors import (
    DataError,
    EstimateUnavailable,
    InputError,
    ProblemError,
    SolverError,
)
from inertia_id_ros.findings import WARN, Finding, refused
from inertia_id_ros.formats.source import LogSource
from inertia_id_ros.jobs.base import (
    JobResult,
    check_bounding_ellipsoid,
    check_payload_volume,
    findings_document,
    in_source_terms,
    load_urdf,
    payload_volume_of,
)
from inertia_id_ros.modes.payload_torques import PayloadTorquesMode
from inertia_id_ros.offline.summary import body_lines
from inertia_id_ros.options import PAYLOAD_DEFAULT_WEIGHTING

if TYPE_CHECKING:
    import numpy as np
    import pinocchio as pin

    from inertia_id_ros.chain.links import JointTorqueData, LinkModel
    from inertia_id_ros.chain.payload_from_torques import PayloadTorqueFit, RunAlignment
    from inertia_id_ros.formats.data import JointStates
    from inertia_id_ros.offline.volumes import Volume


@dataclass(frozen=True)
class FitPayloadTorquesOptions:
    """How to fit the payload (the defaults of ``inertia-id fit-payload-torques``): ``method`` (a
    solver name), ``weighting`` of the joints, the link model: ``links_result`` (a fit-links
    result JSON; ``None``: the URDF's links, no friction) or ``unloaded`` (differencing: a
    recording of the same motion without the payload, a file, or a bag when the source is one),
    ``joints`` of the chain (``None``: all recorded; the others are locked at their mean
    position), each joint's ``torque_constants`` (N m/A: the efforts are motor currents),
    ``gear_ratios`` and ``effort_signs`` (in ``joints`` order), ``estimate_offsets`` (the change
    of each joint's torque offset), the derivative filter's ``filter_half_width`` (s; ``None``:
    the ``links_result``'s, else the payload's default for the sample rate), ``bounding_ellipsoid``
    (the payload's mass within the ellipsoid around its volume) and the payload's volume about
    the frame's origin: ``payload_sphere`` (radius, m) or ``payload_box`` (half-extents, m).
    Raises :class:`InputError` for values out of range."""

    method: str = "lmi"
    weighting: str = PAYLOAD_DEFAULT_WEIGHTING
    links_result: str | None = None
    unloaded: str | None = None
    joints: Sequence[str] | None = None
    torque_constants: Sequence[float] | None = None
    gear_ratios: Sequence[float] | None = None
    effort_signs: Sequence[float] | None = None
    estimate_offsets: bool = True
    filter_half_width: float | None = None
    bounding_ellipsoid: bool = False
    payload_sphere: float | None = None
    payload_box: Sequence[float] | None = None

    def __post_init__(self) -> None:
        check_bounding_ellipsoid(self.method, self.bounding_ellipsoid)
        check_payload_volume(self.payload_sphere, self.payload_box)
        for first, second in (("links_result", "unloaded"), ("payload_sphere", "payload_box")):
            if getattr(self, first) is not None and getattr(self, second) is not None:
                raise InputError(f"give {first} or {second}, not both")


@dataclass(frozen=True)
class PayloadTorquesFit(JobResult["PayloadTorqueFit"]):
    """A payload from joint torques: ``estimate`` the fit (``theta`` about and in the frame, its
    covariance, the offset changes, ...), ``alignment`` how the unloaded run was matched to the
    loaded one (differencing only)."""

    alignment: RunAlignment | None = None


@dataclass(frozen=True)
class _Run:
    """A recorded run: its joint ``states`` with efforts from ``source``, every joint's mean
    recorded (or held) ``positions`` (rad or m; the held joints are not logged) and the
    loader's ``notes``."""

    states: JointStates
    positions: dict[str, float]
    source: str
    notes: list[Finding]


@dataclass(frozen=True)
class _Torques:
    """What the payload is fitted to: the chain's model ``links`` and its parameters
    ``links_x`` (``None``: differencing), the torque ``data``, how the joint states were
    differentiated (``differentiation``: the keyword arguments of
    :func:`~inertia_id_ros.formats.data.with_derivatives`), the link model in words
    (``link_model``), the runs' ``alignment`` (differencing), the fit-links result read
    (``link_result``, ``None`` without one), the half-width (s) a payload's inertia needs on
    these data (``payload_half_width``) and the unloaded run's ``notes``."""

    links: LinkModel
    links_x: np.ndarray | None
    data: JointTorqueData
    differentiation: dict[str, Any]
    link_model: str
    alignment: RunAlignment | None
    link_result: dict[str, Any] | None
    payload_half_width: float
    notes: list[Finding]


def fit_payload_torques(
    urdf: str,
    source: LogSource,
    frame: str,
    options: FitPayloadTorquesOptions = FitPayloadTorquesOptions(),
) -> PayloadTorquesFit:
    """The payload at the URDF frame ``frame`` of the robot of the URDF file ``urdf``, fitted
    to the joint states with efforts of ``source`` as ``options`` say (module docstring: a link
    model, or differencing ``options.unloaded``), and checked."""
    return in_source_terms(source, lambda: _fit_payload_torques(urdf, source, frame, options))


def _fit_payload_torques(
    urdf: str,
    source: LogSource,
    frame: str,
    options: FitPayloadTorquesOptions = FitPayloadTorquesOptions(),
) -> PayloadTorquesFit:
    """:func:`fit_payload_torques` with the fixes in the library's terms."""
    from inertia_id_ros.core.robots import frame_id
    from inertia_id_ros.formats.data import check_joints
    from inertia_id_ros.formats.export import body_json
    from inertia_id_ros.formats.units import log_unit_findings
    from inertia_id_ros.offline.fit_checks import payload_torque_sign_findings
    from inertia_id_ros.offline.plausibility import link_filter_findings
    from inertia_id_ros.offline.volumes import volume_findings

    source.check_bag_options()
    model = load_urdf(urdf)
    frame_id(model, frame)  # FrameNotFound: bad input
    loaded = _read(source, model, urdf)
    joints = list(options.joints or loaded.states.joint_names)
    check_joints(loaded.states, list(model.names)[1:], joints, loaded.source)
    checks = log_unit_findings(loaded.states, model, joints)
    if refused(checks):
        return PayloadTorquesFit(None, (*loaded.notes, *checks), findings_document(checks))
    torques = _torques(urdf, source, model, loaded, joints, options)
    volume = payload_volume_of(options.payload_sphere, options.payload_box)
    fit, caught = _fit(torques, frame, options, volume)
    body = body_json("payload", frame, fit.theta)
    findings = payload_torque_sign_findings(
        torques.links, torques.links_x, torques.data, frame, options.estimate_offsets
    )
    findings += volume_findings("payload", fit.theta, volume)
    if torques.link_result is not None:  # the links' filter against the payload's
        findings[:0] = link_filter_findings(
            torques.link_result,
            str(options.links_result),
            torques.payload_half_width,
            options.filter_half_width,
        )
    document = _document(loaded.states, joints, body, fit, torques, options)
    document.update(findings_document(findings))
    summary = _summary(loaded, joints, frame, body, fit, torques, options)
    every = (*loaded.notes, *checks, *torques.notes, *findings, *caught)
    return PayloadTorquesFit(fit, every, document, tuple(summary), torques.alignment)


def _read(source: LogSource, model: pin.Model, urdf: str) -> _Run:
    """The run of ``source`` (through its input description when it has one: units, window,
    held joints)."""
    held: dict[str, float] = {}
    notes: list[Finding] = []
    if source.uses_description():
        if source.held_out_from is not None:
            raise InputError(
                "--held-out-from does not apply to fit-payload-torques (no validation)"
            )
        recording, _, notes = source.read_log(model, urdf)
        states, held, name = recording.joint_states, recording.held, recording.source
    else:
        states, name = source.read_joint_states()
    if states.effort is None:
        raise DataError(f"{name}: no efforts (joint torques or motor currents) recorded")
    return _Run(states, {**states.mean_positions(), **held}, name, notes)


def _torques(
    urdf: str,
    source: LogSource,
    model: pin.Model,
    loaded: _Run,
    joints: list[str],
    options: FitPayloadTorquesOptions,
) -> _Torques:
    """The link model (a fit-links result's, with its filter and delay, or the URDF's) and the
    torque data it leaves to the payload, or the difference of the loaded and the unloaded
    run."""
    from inertia_id_ros.chain.actuators import effort_scales
    from inertia_id_ros.chain.differentiation import payload_half_width, sample_period
    from inertia_id_ros.chain.payload_from_torques import difference_runs
    from inertia_id_ros.formats.data import check_joints
    from inertia_id_ros.formats.link_result import read_link_result
    from inertia_id_ros.offline.validation import differentiation_of

    scales = effort_scales(
        joints, options.torque_constants, options.gear_ratios, options.effort_signs
    )
    links = _link_model(model, loaded, joints, scales)
    needed_half_width = options.filter_half_width or payload_half_width(
        sample_period(loaded.states.t)
    )
    differentiation: dict[str, Any] = {"half_width": needed_half_width}
    links_x: np.ndarray | None
    result = None
    if options.links_result:  # the data differentiated and delayed as the links' fit chose
        link_result = read_link_result(options.links_result, links)
        links, links_x, result = link_result.model, link_result.x, link_result.result
        differentiation = differentiation_of(
            result, options.filter_half_width, default=needed_half_width
        )
        link_model = f"fit-links result {options.links_result}"
    else:
        links_x, link_model = links.prior, "the URDF's links (no friction)"
    t, data = torque_data(loaded.states, joints, differentiation)
    if not options.unloaded:
        return _Torques(
            links, links_x, data, differentiation, link_model, None, result, needed_half_width, []
        )
    unloaded = _read(_unloaded_source(source, options.unloaded), model, urdf)
    check_joints(unloaded.states, list(model.names)[1:], joints, options.unloaded)
    try:
        data, alignment = difference_runs(
            t, data, *torque_data(unloaded.states, joints, differentiation)
        )
    except ValueError as e:
        raise DataError(f"{options.unloaded}: {e}") from None
    link_model = "difference of a loaded and an unloaded run"
    return _Torques(
        links,
        None,
        data,
        differentiation,
        link_model,
        alignment,
        result,
        needed_half_width,
        unloaded.notes,
    )


def _unloaded_source(source: LogSource, unloaded: str) -> LogSource:
    """The unloaded run: an input description (``.yaml``) with the window and held joints of
    the command line, or read as ``source`` is (a file, or a bag when ``source`` is one) with
    the same log flags (units, window, held joints)."""
    from pathlib import Path

    from inertia_id_ros.formats.description import DESCRIPTION_SUFFIXES

    if Path(unloaded).suffix in DESCRIPTION_SUFFIXES:
        return LogSource(
            input=unloaded, t_start=source.t_start, t_end=source.t_end, held=source.held
        )
    if source.input is not None:
        raise InputError(
            "--unloaded: with --input, give the unloaded run as an input description (.yaml) too"
        )
    if source.bag:
        return replace(source, data=None, bag=unloaded)
    return replace(source, data=unloaded, bag=None)


def _link_model(
    model: pin.Model, loaded: _Run, joints: list[str], scales: list[float]
) -> LinkModel:
    """The chain of ``joints`` (the others locked at their mean recorded positions, or at the
    held joints' values when not in the log), each joint's efforts scaled by ``scales``."""
    from inertia_id_ros.chain.friction import JointDrive
    from inertia_id_ros.chain.links import LinkModel

    try:
        return LinkModel.from_model(
            model,
            joints,
            loaded.positions,
            [JointDrive(effort_scale=scale) for scale in scales],
        )
    except ValueError as e:
        raise InputError(str(e)) from None


def torque_data(
    states: JointStates, joints: list[str], differentiation: dict[str, Any]
) -> tuple[np.ndarray, JointTorqueData]:
    """``(t, data)``: the chain's columns of ``states`` with accelerations (recorded, else
    differentiated: ``differentiation`` the keyword arguments of
    :func:`~inertia_id_ros.formats.data.with_derivatives`)."""
    from inertia_id_ros.chain.links import JointTorqueData
    from inertia_id_ros.formats.data import with_derivatives

    full = with_derivatives(states, **differentiation)
    if full.dq is None or full.ddq is None or full.effort is None:
        raise DataError("no joint velocities, accelerations or efforts after differentiation")
    columns = [full.joint_names.index(j) for j in joints]
    return full.t, JointTorqueData(
        full.q[:, columns],
        full.dq[:, columns],
        full.ddq[:, columns],
        full.effort[:, columns],
        tuple(joints),
    )


def _fit(
    torques: _Torques, frame: str, options: FitPayloadTorquesOptions, volume: Volume
) -> tuple[PayloadTorqueFit, list[Finding]]:
    """The payload's fit to ``torques`` (within ``volume``'s ellipsoid with
    ``options.bounding_ellipsoid``) and the
    library's warnings (``runtime_warning`` findings). A solver's failure is
    :class:`EstimateUnavailable`."""
    from inertia_id_ros.chain.payload_from_torques import fit_payload

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        try:
            fit = fit_payload(
                torques.links,
                torques.links_x,
                torques.data,
                frame,
                estimate_offsets=options.estimate_offsets,
                method=options.method,
                weighting=options.weighting,
                bounding_ellipsoid=(
                    volume.ellipsoid_matrix() if options.bounding_ellipsoid else None
                ),
            )
        except (ProblemError, SolverError) as e:
            raise EstimateUnavailable("solver_failed", str(e)) from None
        except ValueError as e:
            raise InputError(str(e)) from None
    return fit, [Finding("runtime_warning", "", WARN, str(w.message)) for w in caught]


def _document(
    states: JointStates,
    joints: list[str],
    body: dict[str, Any],
    fit: PayloadTorqueFit,
    torques: _Torques,
    options: FitPayloadTorquesOptions,
) -> dict[str, Any]:
    """The result JSON but its findings: the payload's ``body``, its uncertainty, the offset
    changes, the fit's figures, the derivative filter and torque delay applied, the runs'
    alignment."""
    alignment = torques.alignment
    return {
        "mode": PayloadTorquesMode.name,
        "method": options.method,
        "weighting": options.weighting,
        "bodies": [body],
        "link_model": torques.link_model,
        "theta_std": fit.theta_std.tolist(),
        "covariance": fit.covariance.tolist(),
        "offset_changes": dict(zip(joints, fit.offset_changes.tolist())),
        "rank": fit.rank,
        "n_parameters": fit.n_parameters,
        "warnings": list(fit.warnings),
        "residual_rms": fit.residual_rms,
        "samples": torques.data.n_samples,
        "differentiation": _filter_json(states, torques.differentiation),
        "torque_delay": {"delay_s": torques.differentiation.get("delay", 0.0)},
        "solve_time_s": float(fit.solution.solve_time),
        "alignment": None
        if alignment is None
        else {"shift_s": alignment.shift, "position_rms": alignment.position_rms},
    }


def _filter_json(states: JointStates, differentiation: dict[str, Any]) -> dict[str, Any]:
    """The derivative filter :func:`torque_data` applied to ``states``, as fit-links writes
    its own (:meth:`~inertia_id_ros.chain.differentiation.DifferentiationFilter.as_json`)."""
    from inertia_id_ros.chain.differentiation import (
        SOURCE_RECORDED,
        DifferentiationFilter,
        filter_for,
    )

    if states.dq is not None and states.ddq is not None:
        return DifferentiationFilter(SOURCE_RECORDED).as_json()
    return filter_for(
        states.t,
        states.dq is not None,
        differentiation["half_width"],
        differentiation.get("order", 2),
    ).as_json()


def _filter_line(torques: _Torques, options: FitPayloadTorquesOptions) -> str:
    """The derivative filter applied and where it comes from. It is not chosen by
    cross-validation: the torques' held-out error prefers filters that flatten the payload's
    inertia (docs/measurements.md, "The payload's derivative filter")."""
    half_width = torques.differentiation["half_width"]
    if options.filter_half_width is not None:
        origin = "as given"
    elif ((torques.link_result or {}).get("differentiation") or {}).get("half_width_s"):
        origin = "the links' fit's (its differentiation)"
    else:
        origin = (
            "the payload's default (not cross-validated: the torques' held-out error prefers "
            "wider filters, which flatten the payload's inertia)"
        )
    return f"  accelerations: local polynomial filter ±{half_width:g} s, {origin}"


def _summary(
    loaded: _Run,
    joints: list[str],
    frame: str,
    body: dict[str, Any],
    fit: PayloadTorqueFit,
    torques: _Torques,
    options: FitPayloadTorquesOptions,
) -> list[str]:
    """What fit-payload-torques prints: the data and link model, the runs' alignment, the
    payload with its standard errors, the offset changes, the residual, and a note when the
    URDF's links are the link model."""
    lines = [
        f"fit-payload-torques ({options.method}): {torques.data.n_samples} samples of "
        f"{len(joints)} joints from {loaded.source}; link model: {torques.link_model}"
    ]
    lines.append(_filter_line(torques, options))
    if torques.alignment is not None:
        lines.append(
            f"  unloaded run matched with a time shift of {torques.alignment.shift:+.3f} s, "
            f"joint positions {torques.alignment.position_rms:.2g} rad rms apart"
        )
    lines += [
        f"payload at {frame!r}, in that frame:",
        *body_lines(body),
        *_uncertainty_lines(fit.theta, fit.covariance),
    ]
    if options.estimate_offsets:
        lines.append(
            "  torque offset changes ["
            + ", ".join(f"{v:.3f}" for v in fit.offset_changes)
            + "] N m"
        )
    lines.append(
        f"  joint torque residual rms {fit.residual_rms:.4g} N m; {fit.rank} of "
        f"{fit.n_parameters} parameters excited; "
        + ("poorly determined, see the warnings" if fit.warnings else "well determined")
    )
    if torques.links_x is not None and not options.links_result:
        lines.append(
            "  note: the URDF's links (their masses, no friction) decide what their "
            "error adds to the payload; prefer --links-result (a fit-links result) or "
            "--unloaded (differencing)"
        )
    return lines


def _uncertainty_lines(theta: np.ndarray, covariance: np.ndarray) -> list[str]:
    """Standard errors of the mass, COM and inertia about the COM of ``theta`` (10,) with its
    ``covariance`` (10, 10); none without a positive mass."""
    import numpy as np

    from inertia_id_ros.core.covariance import com_covariance, inertia_com_covariance

    if not theta[0] > 0:
        return []
    com_std = np.sqrt(np.clip(np.diag(com_covariance(theta, covariance)), 0.0, None))
    inertia_std = np.sqrt(np.clip(np.diag(inertia_com_covariance(theta, covariance)), 0.0, None))
    return [
        f"  standard errors: mass {np.sqrt(max(covariance[0, 0], 0.0)):.4f} kg, COM ["
        + ", ".join(f"{1e3 * v:.2f}" for v in com_std)
        + "] mm, inertia ["
        + ", ".join(f"{1e3 * v:.4f}" for v in inertia_std)
        + "] 1e-3 kg m²"
    ]
