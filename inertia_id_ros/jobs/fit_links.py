"""The fit-links job: the links of a chain (and joint friction, offset, armature) from recorded
joint states and efforts (:func:`~inertia_id_ros.chain.identify.identify_links`: derivative
filter, Coulomb width, torque delay, base tilt and prior weight chosen on the data unless given),
checked (:func:`~inertia_id_ros.offline.fit_checks.links_fit_findings`) and, when asked,
validated on held-out data (:func:`~inertia_id_ros.jobs.validate.validate_fit`).

:func:`fit_links` reads the data (:mod:`inertia_id_ros.formats`), fits
(:mod:`inertia_id_ros.chain`), builds the bodies' JSON (:mod:`inertia_id_ros.formats.export`),
checks and validates (:mod:`inertia_id_ros.offline`), in that order, and returns; the command
``inertia-id fit-links`` prints what it returns.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from inertia_id_ros.errors import (
    CallerError,
    DataError,
    EstimateUnavailable,
    InputError,
    ProblemError,
    SolverError,
)
from inertia_id_ros.findings import NOTE, WARN, Finding, refused
from inertia_id_ros.jobs.base import (
    JobResult,
    check_bounding_ellipsoid,
    findings_document,
    in_source_terms,
    load_urdf,
)
from inertia_id_ros.modes.links import LinksMode
from inertia_id_ros.options import LINKS_DEFAULT_WEIGHTING

if TYPE_CHECKING:
    import numpy as np
    import pinocchio as pin

    from inertia_id_ros.chain.identify import LinkIdentification
    from inertia_id_ros.chain.links import LinkModel
    from inertia_id_ros.chain.motors import MotorCoupling
    from inertia_id_ros.formats.data import JointStates
    from inertia_id_ros.formats.recording import Recording
    from inertia_id_ros.formats.source import LogSource
    from inertia_id_ros.jobs.validate import Validation
    from inertia_id_ros.offline.volumes import Volume


@dataclass(frozen=True)
class FitLinksOptions:
    """How to fit the links (the defaults of ``inertia-id fit-links``): ``method`` (a solver
    name), ``joints`` to identify (``None``: all recorded; the others are locked at their mean
    position), ``prior_weight`` of the pull toward the URDF's inertials ((N m)² per SI unit², per
    torque sample; ``None``: by cross-validation), ``weighting`` of the joints, the derivative
    filter's ``filter_half_width`` (s; ``None``: by cross-validation) and ``filter_order``,
    ``coulomb_velocity`` (rad/s, the Coulomb sign's width; 0: exact sign; ``None``: by
    cross-validation), ``estimate_tilt`` (the base's tilt; else the URDF's gravity),
    ``torque_delay`` (s, of the efforts behind the motion; 0: none; ``None``: estimated),
    ``bounding_ellipsoid`` (each link's mass within the ellipsoid around its collision geometry)
    and ``validation_data`` (held-out data, a file or bag, to validate the result on).
    Raises :class:`InputError` for values out of range."""

    method: str = "lmi"
    joints: Sequence[str] | None = None
    prior_weight: float | None = None
    weighting: str = LINKS_DEFAULT_WEIGHTING
    filter_half_width: float | None = None
    filter_order: int = 2
    coulomb_velocity: float | None = None
    estimate_tilt: bool = True
    torque_delay: float | None = None
    bounding_ellipsoid: bool = False
    validation_data: str | None = None

    def __post_init__(self) -> None:
        check_bounding_ellipsoid(self.method, self.bounding_ellipsoid)
        if self.coulomb_velocity is not None and self.coulomb_velocity < 0:
            raise InputError(f"--coulomb-velocity must be >= 0 rad/s, got {self.coulomb_velocity}")
        if self.prior_weight is not None and self.prior_weight < 0:
            raise InputError(f"--prior-weight must be >= 0, got {self.prior_weight}")


@dataclass(frozen=True)
class LinksFit(JobResult["LinkIdentification"]):
    """A links fit: ``estimate`` the identification (the fit, its data, the chosen filter,
    delay, tilt and prior weight), ``validation`` its errors on held-out data when asked."""

    validation: Validation | None = None
    validation_error: CallerError | None = None
    """Why the validation could not run (bad held-out data, or both ``validation_data`` and
    a description's split): the fit stands, its validation is missing."""


@dataclass(frozen=True)
class _Recorded:
    """The data of a links fit: the robot's ``model``, the joint ``states`` and their
    ``effort`` (N, n) from ``source``, the ``held`` joints (not logged, rad or m), the
    ``joints`` to identify, every joint's mean recorded (or held) ``positions`` (rad or m),
    the description's ``train`` and ``held_out`` parts (``None`` without a description), the
    loader's ``notes``, the ``checks`` of the data's units and the transmissions' ``coupling``
    among the ``joints`` (``None``: none)."""

    model: pin.Model
    states: JointStates
    effort: np.ndarray
    source: str
    held: dict[str, float]
    joints: list[str]
    positions: dict[str, float]
    train: Recording | None
    held_out: Recording | None
    notes: list[Finding]
    checks: list[Finding]
    coupling: MotorCoupling | None = None


@dataclass(frozen=True)
class _Fitted:
    """A links fit's outcome: the ``identification`` and the ``model`` fitted (with its gravity
    and Coulomb widths), what was chosen (``chosen``: the JSON's filter, prior weight,
    weighting, gravity, delay; ``chosen_lines``: in words), the ``samples`` fitted, whether
    every link is ``fully_consistent``, each joint's torque RMS error
    (``per_joint``, N m) and overall (``rms``), each joint's ``drives`` ({term: value}), the
    links' bounding ``volumes`` if the fit was constrained by them, the half-width (s) a
    payload's differentiation would take on these data (``payload_half_width``), and the
    library's warnings (``runtime_warning`` findings)."""

    identification: LinkIdentification
    model: LinkModel
    chosen: dict[str, Any]
    chosen_lines: list[str]
    samples: int
    fully_consistent: bool
    per_joint: np.ndarray
    rms: float
    drives: dict[str, dict[str, float]]
    volumes: dict[str, Volume] | None
    payload_half_width: float
    warnings: list[Finding]


def fit_links(
    urdf: str, source: LogSource, options: FitLinksOptions = FitLinksOptions()
) -> LinksFit:
    """The links of the robot of the URDF file ``urdf`` (and its joints' drives) fitted to the
    joint states with efforts of ``source``, as ``options`` say; checked, and validated on
    ``options.validation_data`` or on the held-out part of ``source``'s description."""
    return in_source_terms(source, lambda: _fit_links(urdf, source, options))


def _fit_links(
    urdf: str, source: LogSource, options: FitLinksOptions = FitLinksOptions()
) -> LinksFit:
    """:func:`fit_links` with the fixes in the library's terms."""
    from inertia_id_ros.formats.export import body_json
    from inertia_id_ros.jobs.validate import validate_fit
    from inertia_id_ros.offline.fit_checks import links_fit_findings
    from inertia_id_ros.offline.plausibility import link_filter_findings

    recorded = _read(urdf, source, options)
    read = (*recorded.notes, *recorded.checks)
    if refused(recorded.checks):
        return LinksFit(None, read, findings_document(recorded.checks))
    fitted = _fit(urdf, recorded, options)
    identification = fitted.identification
    bodies = [
        body_json(link, link, theta)
        for link, theta in zip(fitted.model.link_names, identification.fit.link_parameters)
    ]
    findings, identifiability, checked = links_fit_findings(identification, urdf, fitted.volumes)
    wide_filter = bool(link_filter_findings(fitted.chosen, "fit-links", fitted.payload_half_width))
    document = _document(options.method, bodies, fitted, checked, findings)
    summary = _summary(options.method, recorded, fitted, bodies, identifiability, findings)
    if wide_filter:  # the rule fit-payload-torques applies to a link model
        summary.append(
            f"note: as the link model of fit-payload-torques, refit with "
            f"--filter-half-width {fitted.payload_half_width:g}: a payload's inertia "
            "needs less smoothing than the links' torques"
        )
    every = (*read, *fitted.warnings, *findings)
    validation = error = None
    if not refused(findings):
        try:
            validation = validate_fit(
                document,
                urdf,
                source,
                options.validation_data,
                recorded.train,
                recorded.held_out,
                filter_half_width=options.filter_half_width,
            )
        except CallerError as e:
            error = e
    return LinksFit(identification, every, document, tuple(summary), validation, error)


def _read(urdf: str, source: LogSource, options: FitLinksOptions) -> _Recorded:
    """The robot's model and the recorded joint states with efforts, the joints checked against
    the model and the held joints, the loader's notes and the units' checks
    (:class:`_Recorded`)."""
    from inertia_id_ros.formats.data import check_joints
    from inertia_id_ros.formats.held import joints_coupled
    from inertia_id_ros.formats.units import log_unit_findings

    source.check_bag_options()
    train = held_out = None
    held: dict[str, float] = {}
    notes: list[Finding] = []
    if source.uses_description():
        model = load_urdf(urdf)
        train, held_out, notes = source.read_log(model, urdf)
        states, held, name = train.joint_states, train.held, train.source
    else:
        states, name = source.read_joint_states()  # a file's or a bag's efforts, or DataError
        model = load_urdf(urdf)
    if states.effort is None:
        raise DataError(f"{name}: no joint efforts (joints.effort)")
    joints = list(options.joints or states.joint_names)
    moving_held = [joint for joint in joints if joint in held]
    if moving_held:
        raise InputError(
            f"--joints names held joint(s) {moving_held}: they are not in the log, "
            "and every torque row of the fit depends on their motion"
        )
    check_joints(states, list(model.names)[1:], joints, name)
    positions = {**states.mean_positions(), **held}
    if held:
        coupled = joints_coupled(model, positions, joints, list(held))
        if coupled:
            raise InputError(
                f"{name}: the torques of the fitted joints depend on the motion "
                f"of held joint(s) {coupled} (not in the log): log them, or fit "
                "only joints on other branches (--joints)"
            )
    checks = log_unit_findings(states, model, joints)
    coupling = None if train is None else train.coupling
    if coupling is not None:
        outside = coupling.turning_outside(joints)
        if outside:
            notes.append(
                Finding(
                    "log",
                    name,
                    NOTE,
                    f"the motors of {', '.join(outside)} turn with joints not fitted: their "
                    "rotor inertia and friction are not modelled (fit those joints too)",
                )
            )
        coupling = coupling.restricted(joints)
    return _Recorded(
        model,
        states,
        states.effort,
        name,
        held,
        joints,
        positions,
        train,
        held_out,
        notes,
        checks,
        coupling,
    )


def _fit(urdf: str, recorded: _Recorded, options: FitLinksOptions) -> _Fitted:
    """The identification of ``recorded``'s links (:class:`_Fitted`); the library's warnings
    caught as findings. A solver's failure is :class:`EstimateUnavailable`."""
    from inertia_id_ros.chain.differentiation import filter_for, payload_half_width, sample_period
    from inertia_id_ros.chain.identify import identify_links
    from inertia_id_ros.chain.links import torque_error
    from inertia_id_ros.offline.volumes import ellipsoids_of, link_bounds

    states = recorded.states
    differentiation = None
    if options.filter_half_width is not None:
        differentiation = filter_for(
            states.t, states.dq is not None, options.filter_half_width, options.filter_order
        )
    payload_width = payload_half_width(sample_period(states.t))
    links = _link_model(recorded, options.coulomb_velocity)
    volumes = ellipsoids = None
    if options.bounding_ellipsoid:  # the fit's constraint: each link's collision geometry
        volumes = link_bounds(urdf, links)
        ellipsoids = ellipsoids_of(volumes, links.link_names)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        try:
            identification = identify_links(
                links,
                states.t,
                states.q,
                states.dq,
                states.ddq,
                recorded.effort,
                states.joint_names,
                method=options.method,
                weighting=options.weighting,
                prior_weight=options.prior_weight,
                differentiation=differentiation,
                estimate_tilt=options.estimate_tilt,
                select_coulomb=options.coulomb_velocity is None,
                torque_delay=options.torque_delay,
                bounding_ellipsoids=ellipsoids,
            )
        except (ProblemError, SolverError) as e:
            raise EstimateUnavailable("solver_failed", str(e)) from None
        except ValueError as e:
            raise DataError(f"{recorded.source}: {e}") from None
    chosen, chosen_lines = identification.as_json(), identification.summary_lines()
    fitted = identification.model or links
    errors = torque_error(fitted, identification.fit.x, identification.data)
    return _Fitted(
        identification,
        fitted,
        chosen,
        chosen_lines,
        identification.data.n_samples,
        identification.fit.fully_consistent,
        errors.per_joint,
        errors.overall,
        fitted.drive_parameters(identification.fit.x),
        volumes,
        payload_width,
        [Finding("runtime_warning", "", WARN, str(w.message)) for w in caught],
    )


def _link_model(recorded: _Recorded, coulomb_velocity: float | None) -> LinkModel:
    """The chain of the joints to identify; the other joints locked at their mean recorded
    positions, the held ones (not logged) at their value, the rest at the model's neutral
    position; every drive's Coulomb sign ``coulomb_velocity`` wide (rad/s; ``None``: 0); each
    motor the transmissions couple to several of the joints with its terms."""
    from inertia_id_ros.chain.friction import JointDrive
    from inertia_id_ros.chain.links import LinkModel

    try:
        return LinkModel.from_model(
            recorded.model,
            recorded.joints,
            recorded.positions,
            JointDrive(coulomb_velocity=coulomb_velocity or 0.0),
            recorded.coupling,
        )
    except ValueError as e:
        raise InputError(str(e)) from None


def _document(
    method: str,
    bodies: list[dict[str, Any]],
    fitted: _Fitted,
    checked: dict[str, Any],
    findings: list[Finding],
) -> dict[str, Any]:
    """The result JSON: ``method``, ``bodies``, each joint's drive (and each coupled motor's
    terms with the transmission, :func:`~inertia_id_ros.formats.link_result.motors_json`), the
    torque residual, the samples, the solve time, what was chosen (filter, prior weight,
    weighting, gravity, delay), the ``checked`` figures and the ``findings``."""
    from inertia_id_ros.formats.link_result import motors_json

    identification, links = fitted.identification, fitted.model
    fit = identification.fit
    joints = [
        {
            "name": joint,
            "viscous": fitted.drives[joint]["viscous"],
            "coulomb": fitted.drives[joint]["coulomb"],
            "coulomb_velocity": drive.coulomb_velocity,
            "offset": fitted.drives[joint]["offset"],
            "armature": fitted.drives[joint]["armature"],
        }
        for joint, drive in zip(links.joint_names, links.drives)
    ]
    return {
        "mode": LinksMode.name,
        "method": method,
        "bodies": bodies,
        "joints": joints,
        **motors_json(links, fitted.drives),
        "residual_rms": fitted.rms,
        "samples": fitted.samples,
        "solve_time_s": float(fit.solution.solve_time),
        **fitted.chosen,
        **checked,
        **findings_document(findings),
    }


def _summary(
    method: str,
    recorded: _Recorded,
    fitted: _Fitted,
    bodies: list[dict[str, Any]],
    identifiability: list[str],
    findings: list[Finding],
) -> list[str]:
    """What fit-links prints: the fit (with ``method``), what was chosen, what the data
    determine, a table of the links (a link's mass pinned at zero labelled) and of the joints'
    drives, the residual."""
    from inertia_id_ros.formats.link_result import motor_lines

    identification, links = fitted.identification, fitted.model
    fit = identification.fit
    pinned = {f.subject for f in findings if f.kind == "pinned_mass"}
    lines = [
        f"fit-links ({method}, prior weight {fit.prior_weight:.3g}): "
        f"{fitted.samples} samples of {len(links.joint_names)} joints from "
        f"{recorded.source}; solver {fit.solution.status!r} in {fit.solution.solve_time:.2f} s",
        *fitted.chosen_lines,
        *identifiability,
        f"{'link':<20}{'mass (kg)':>10}{'COM (mm)':>26}{'λmin(J)':>12}  consistent",
    ]
    for body in bodies:
        com = "" if body["com"] is None else " ".join(f"{1e3 * c:8.1f}" for c in body["com"])
        lines.append(
            f"{body['name']:<20}{body['mass']:10.3f}{com:>26}"
            f"{body['min_pseudo_inertia_eig']:12.2e}  "
            f"{'yes' if body['fully_consistent'] else 'NO'}"
            + ("  (mass pinned at 0 kg, not identified)" if body["name"] in pinned else "")
            + ("  at_bound" if body["at_bound"] and body["name"] not in pinned else "")
        )
    lines.append(
        f"{'joint':<20}{'viscous':>10}{'coulomb':>10}{'offset':>10}{'armature':>10}"
        f"{'rms (N m)':>11}"
    )
    for joint, rms in zip(links.joint_names, fitted.per_joint):
        drive = fitted.drives[joint]
        lines.append(
            f"{joint:<20}{drive['viscous']:10.4f}{drive['coulomb']:10.4f}"
            f"{drive['offset']:10.4f}{drive['armature']:10.4f}{rms:11.4f}"
        )
    lines += motor_lines(links, fitted.drives)
    lines.append(
        f"joint torque rms {fitted.rms:.4f} N m; all links fully consistent: "
        f"{'yes' if fitted.fully_consistent else 'NO'}"
    )
    return lines
