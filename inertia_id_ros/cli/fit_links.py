"""``inertia-id fit-links``: the links of a chain (and joint friction, offset, armature) from
recorded joint states and efforts (:func:`~inertia_id_ros.chain.identify.identify_links`)."""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import TYPE_CHECKING

from inertia_id_ros.cli import common
from inertia_id_ros.errors import DataError, InputError, ProblemError, SolverError
from inertia_id_ros.modes.links import LinksMode
from inertia_id_ros.options import (
    LINKS_DEFAULT_WEIGHTING,
)

if TYPE_CHECKING:
    import pinocchio as pin

    from inertia_id_ros.chain.identify import LinkIdentification
    from inertia_id_ros.chain.links import LinkModel
    from inertia_id_ros.formats.data import JointStates


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """The ``fit-links`` command on ``subparsers``."""
    links = common.add_command(
        subparsers,
        "fit-links",
        run,
        help="identify links and joint friction from recorded joint states and efforts",
    )
    common.add_data_options(links, wrenches=False, methods=LinksMode.methods)
    links.add_argument(
        "--joints",
        type=common.comma_names,
        metavar="JOINT,...",
        help="joints to identify (default: all recorded); the others are locked "
        "at their mean position",
    )
    links.add_argument(
        "--prior-weight",
        type=float,
        default=None,
        help="weight of the pull toward the URDF's inertials, per torque sample "
        "((N m)² per SI unit²; default: chosen by cross-validation)",
    )
    common.add_weighting_option(links, LINKS_DEFAULT_WEIGHTING, "each joint")
    links.add_argument(
        "--filter-order",
        type=int,
        default=2,
        metavar="P",
        help="degree of the local polynomial with --filter-half-width (2)",
    )
    links.add_argument(
        "--coulomb-velocity",
        type=float,
        default=None,
        metavar="V",
        help="width of the Coulomb sign tanh(dq/V) (rad/s; 0: exact sign; "
        "default: chosen by cross-validation)",
    )
    links.add_argument(
        "--no-tilt",
        action="store_true",
        help="keep the URDF's gravity (default: estimate the base's tilt)",
    )
    links.add_argument(
        "--torque-delay",
        type=float,
        default=None,
        metavar="SEC",
        help="delay of the efforts behind the motion (s; 0: none; default: estimated on the data)",
    )
    common.add_plausibility_options(links)


def _link_model(
    model: pin.Model,
    states: JointStates,
    joints: list[str],
    coulomb_velocity: float | None,
    held: dict[str, float],
) -> LinkModel:
    """The chain of ``joints``; the other joints locked at their mean recorded positions, the
    ``held`` ones (not logged) at their value, the rest at the model's neutral position."""
    from inertia_id_ros.chain.friction import JointDrive
    from inertia_id_ros.chain.links import LinkModel
    from inertia_id_ros.core.robots import reduce_model

    locked = {name: value for name, value in states.mean_positions().items() if name not in joints}
    locked.update(held)
    try:
        return LinkModel(
            reduce_model(model, joints, locked),
            JointDrive(coulomb_velocity=coulomb_velocity or 0.0),
        )
    except ValueError as e:
        raise InputError(str(e)) from None


def run(args: argparse.Namespace) -> int:
    """Fit the links; the exit code."""
    import numpy as np

    from inertia_id_ros.chain.differentiation import (
        filter_for,
        payload_half_width,
        sample_period,
    )
    from inertia_id_ros.chain.identify import identify_links
    from inertia_id_ros.chain.links import torque_error
    from inertia_id_ros.cli.validate import validate_after_fit
    from inertia_id_ros.formats.data import check_joints
    from inertia_id_ros.formats.export import body_json
    from inertia_id_ros.formats.units import log_unit_findings
    from inertia_id_ros.offline.plausibility import (
        ellipsoids_of,
        link_filter_findings,
        link_volumes,
        volumes_holding,
    )

    common.check_data_source(args)
    common.check_bounding_ellipsoid(args)
    held_out, held = None, {}
    if common.uses_description(args):
        model = common.load_urdf_model(args.urdf)
        train, held_out = common.read_log(args, model, args.urdf)
        states, held, source = train.joint_states, train.held, train.source
        if states.effort is None:
            raise DataError(f"{source}: no joint efforts (joints.effort)")
    else:
        states, source = common.read_joint_states(args)
    if not common.uses_description(args):
        model = common.load_urdf_model(args.urdf)
    joints = args.joints or list(states.joint_names)
    moving_held = [name for name in joints if name in held]
    if moving_held:
        raise InputError(
            f"--joints names held joint(s) {moving_held}: they are not in the log, "
            "and every torque row of the fit depends on their motion"
        )
    check_joints(states, list(model.names)[1:], joints, source)
    if held:
        from inertia_id_ros.formats.description import joints_coupled

        coupled = joints_coupled(model, {**states.mean_positions(), **held}, joints, list(held))
        if coupled:
            raise InputError(
                f"{source}: the torques of the fitted joints depend on the motion "
                f"of held joint(s) {coupled} (not in the log): log them, or fit "
                "only joints on other branches (--joints)"
            )
    if args.coulomb_velocity is not None and args.coulomb_velocity < 0:
        raise InputError(f"--coulomb-velocity must be >= 0 rad/s, got {args.coulomb_velocity}")
    if args.prior_weight is not None and args.prior_weight < 0:
        raise InputError(f"--prior-weight must be >= 0, got {args.prior_weight}")
    code = common.report_input_findings(
        "fit-links", log_unit_findings(states, model, joints), args.json
    )
    if code:
        return code
    links = _link_model(model, states, joints, args.coulomb_velocity, held)
    prior = np.asarray(links.prior)[: 10 * len(links.link_names)].reshape(-1, 10)
    volumes = volumes_holding(
        link_volumes(args.urdf, links.link_names), dict(zip(links.link_names, prior))
    )
    ellipsoids = ellipsoids_of(volumes, links.link_names) if args.bounding_ellipsoid else None
    differentiation = None
    if args.filter_half_width is not None:
        differentiation = filter_for(
            states.t, states.dq is not None, args.filter_half_width, args.filter_order
        )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        try:
            identification = identify_links(
                links,
                states.t,
                states.q,
                states.dq,
                states.ddq,
                states.effort,
                states.joint_names,
                method=args.method,
                weighting=args.weighting,
                prior_weight=args.prior_weight,
                differentiation=differentiation,
                estimate_tilt=not args.no_tilt,
                select_coulomb=args.coulomb_velocity is None,
                torque_delay=args.torque_delay,
                bounding_ellipsoids=ellipsoids,
            )
        except (ProblemError, SolverError) as e:
            print(f"inertia-id fit-links: no estimate: {e}", file=sys.stderr)
            return common.EXIT_NO_ESTIMATE
        except ValueError as e:
            raise DataError(f"{source}: {e}") from None
    for warning in caught:
        print(f"inertia-id fit-links: warning: {warning.message}", file=sys.stderr)
    fit, data, links = identification.fit, identification.data, identification.model
    errors = torque_error(links, fit.x, data)
    bodies = [
        body_json(link, link, theta) for link, theta in zip(links.link_names, fit.link_parameters)
    ]
    drive = links.drive_parameters(fit.x)
    joint_entries = [
        {
            "name": joint,
            "viscous": drive[joint]["viscous"],
            "coulomb": drive[joint]["coulomb"],
            "coulomb_velocity": joint_drive.coulomb_velocity,
            "offset": drive[joint]["offset"],
            "armature": drive[joint]["armature"],
        }
        for joint, joint_drive in zip(links.joint_names, links.drives)
    ]
    result = {
        "method": args.method,
        "bodies": bodies,
        "joints": joint_entries,
        "residual_rms": errors.overall,
        "samples": data.n_samples,
        "solve_time_s": float(fit.solution.solve_time),
        **identification.as_json(),
    }
    findings, identifiability, checked = _findings_after_fit(identification, volumes)
    result.update(checked)
    labels = _labels(findings, links.link_names)
    code = common.report_findings("fit-links", findings, result)
    common.write_json(args.json, result)
    lines = [
        f"fit-links ({args.method}, prior weight {fit.prior_weight:.3g}): {data.n_samples} "
        f"samples of {len(links.joint_names)} joints from {source}; solver "
        f"{fit.solution.status!r} in {fit.solution.solve_time:.2f} s",
        *identification.summary_lines(),
        *identifiability,
        f"{'link':<20}{'mass (kg)':>10}{'COM (mm)':>26}{'λmin(J)':>12}  consistent",
    ]
    for body in bodies:
        com = "" if body["com"] is None else " ".join(f"{1e3 * c:8.1f}" for c in body["com"])
        lines.append(
            f"{body['name']:<20}{body['mass']:10.3f}{com:>26}"
            f"{body['min_pseudo_inertia_eig']:12.2e}  "
            f"{'yes' if body['fully_consistent'] else 'NO'}"
            + (f"  ({labels[body['name']]})" if body["name"] in labels else "")
        )
    lines.append(
        f"{'joint':<20}{'viscous':>10}{'coulomb':>10}{'offset':>10}{'armature':>10}"
        f"{'rms (N m)':>11}"
    )
    for entry, rms in zip(joint_entries, errors.per_joint):
        lines.append(
            f"{entry['name']:<20}{entry['viscous']:10.4f}{entry['coulomb']:10.4f}"
            f"{entry['offset']:10.4f}{entry['armature']:10.4f}{rms:11.4f}"
        )
    lines.append(
        f"joint torque rms {errors.overall:.4f} N m; all links fully consistent: "
        f"{'yes' if fit.fully_consistent else 'NO'}"
    )
    payload_width = payload_half_width(sample_period(states.t))
    if link_filter_findings(result, "fit-links", payload_width):  # the rule the payload fit applies
        lines.append(
            f"note: as the link model of fit-payload-torques, refit with "
            f"--filter-half-width {payload_width:g}: a payload's inertia "
            "needs less smoothing than the links' torques"
        )
    common.print_summary(lines, code, [args.json])
    if code:
        return code
    validate_after_fit(args, result, train if common.uses_description(args) else None, held_out)
    return 0


def _findings_after_fit(
    identification: LinkIdentification, volumes: dict
) -> tuple[list, list[str], dict]:
    """``(findings, lines, JSON)`` of a links fit: each joint's torques against the URDF's (a
    sign), residuals per joint against the unconstrained fit, the base's tilt, masses pinned at
    zero, the links' bounding volumes, what the data determine; the JSON's
    ``"residual_ratios"``, ``"urdf_gains"`` and ``"identifiability"``."""
    import numpy as np

    from inertia_id_ros.chain.base_parameters import base_parameters
    from inertia_id_ros.chain.base_tilt import MAX_TILT
    from inertia_id_ros.offline.plausibility import (
        identifiability_json,
        identifiability_lines,
        links_gain_findings,
        links_residual_findings,
        pinned_mass_findings,
        tilt_finding,
        volume_findings,
    )

    fit, data, links = identification.fit, identification.data, identification.model
    findings, gains = links_gain_findings(links, data)
    ratio_findings, ratios = links_residual_findings(links, data, fit.x, fit.prior_weight)
    findings += ratio_findings
    if identification.tilt is not None:
        findings += tilt_finding(identification.tilt.roll, identification.tilt.pitch, MAX_TILT)
    if fit.method != "ols":
        prior = np.asarray(links.prior)[: 10 * len(links.link_names)].reshape(-1, 10)
        findings += pinned_mass_findings(links.link_names, fit.link_parameters[:, 0], prior[:, 0])
    for name, theta in zip(links.link_names, fit.link_parameters):
        if name in volumes:
            findings += volume_findings(name, theta, volumes[name])
    bp = base_parameters(links, data)
    return (
        findings,
        identifiability_lines(bp),
        {
            "residual_ratios": ratios,
            "urdf_gains": gains,
            "identifiability": identifiability_json(bp),
        },
    )


def _labels(findings: list, link_names: tuple[str, ...]) -> dict[str, str]:
    """Per link, what its table row adds: ``"mass pinned at 0, not identified"``."""
    return {
        f.subject: "mass pinned at 0 kg, not identified"
        for f in findings
        if f.kind == "pinned_mass" and f.subject in link_names
    }
