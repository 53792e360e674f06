"""``inertia-id fit-payload-torques``: the payload at a frame of an arm without an F/T sensor, from
recorded joint states and efforts (:func:`~inertia_id_ros.chain.payload_from_torques.fit_payload`).

Two routes:

- **a link model**: the torques the links and drives need without the payload (``--links-result``:
  a ``fit-links`` result, with friction and offsets, whose differentiation filter and torque delay
  the data then get; else the URDF's links, without friction) are subtracted from the measured
  ones, and the payload's regressor fitted to the rest;
- **differencing** (``--unloaded RUN``): a loaded and an unloaded run of the same motion; at the
  same joint states the links' and drives' torques are equal, so their difference is the
  payload's alone, and the link model cancels (no URDF masses or friction enter).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import TYPE_CHECKING, Any

from inertia_id_ros.cli import common
from inertia_id_ros.errors import DataError, InputError, ProblemError, SolverError
from inertia_id_ros.modes.payload_torques import PayloadTorquesMode
from inertia_id_ros.options import PAYLOAD_DEFAULT_WEIGHTING

if TYPE_CHECKING:
    import numpy as np
    import pinocchio as pin

    from inertia_id_ros.chain.links import JointTorqueData, LinkModel
    from inertia_id_ros.formats.data import JointStates


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """The ``fit-payload-torques`` command on ``subparsers``."""
    command = common.add_command(
        subparsers,
        "fit-payload-torques",
        run,
        help="identify the payload at a frame from recorded joint torques (no F/T sensor): "
        "with a link model, or from a loaded and an unloaded run of the same motion",
    )
    common.add_data_options(
        command, wrenches=False, methods=PayloadTorquesMode.methods, validate=False
    )
    command.add_argument(
        "--frame",
        required=True,
        help="URDF frame the payload is attached to (e.g. the flange); the "
        "result is about and in it",
    )
    model = command.add_mutually_exclusive_group()
    model.add_argument(
        "--links-result",
        metavar="RESULT",
        help="the links and drives without the payload: a fit-links result JSON "
        "(default: the URDF's links, no friction)",
    )
    model.add_argument(
        "--unloaded",
        metavar="RUN",
        help="differencing: a recording (file, or bag with --bag) of the same "
        "motion without the payload; the link model cancels",
    )
    command.add_argument(
        "--joints",
        type=common.comma_names,
        metavar="JOINT,...",
        help="joints of the chain (default: all recorded); the others are "
        "locked at their mean position",
    )
    command.add_argument(
        "--torque-constants",
        metavar="K1,K2,...",
        type=common.comma_numbers,
        help="the efforts are motor currents (A): each joint's torque constant "
        "(N m/A at the motor), in --joints order",
    )
    command.add_argument(
        "--gear-ratios",
        metavar="N1,N2,...",
        type=common.comma_numbers,
        help="each joint's gear ratio (with --torque-constants; default 1)",
    )
    command.add_argument(
        "--effort-signs",
        metavar="S1,S2,...",
        type=common.comma_numbers,
        help="each joint's effort sign, +1 or -1 (default +1)",
    )
    common.add_weighting_option(command, PAYLOAD_DEFAULT_WEIGHTING, "each joint")
    command.add_argument(
        "--no-offsets",
        action="store_true",
        help="do not estimate the change of each joint's torque offset",
    )
    common.add_plausibility_options(command, "--frame")


def _effort_scales(args: argparse.Namespace, joints: list[str]) -> list[float]:
    """Joint torque per unit of effort of each joint
    (:func:`~inertia_id_ros.chain.actuators.effort_scales`)."""
    from inertia_id_ros.chain.actuators import effort_scales

    return effort_scales(joints, args.torque_constants, args.gear_ratios, args.effort_signs)


def _read(
    args: argparse.Namespace, model: pin.Model, unloaded: bool = False
) -> tuple[JointStates, dict[str, float], str]:
    """``(joint states with efforts, held joints {name: value}, source)`` of the loaded run
    (``--data``/``--bag``/``--input``) or of ``--unloaded`` (read as ``--data``/``--bag`` with
    the same log flags: units, window, held joints)."""
    import argparse as _argparse

    if unloaded:
        if args.input is not None:
            raise InputError(
                "--unloaded takes a recording as --data or --bag does; with "
                "--input, describe the loaded run only"
            )
        args = _argparse.Namespace(
            **{
                **vars(args),
                "data": None if args.bag else args.unloaded,
                "bag": args.unloaded if args.bag else None,
            }
        )
    held: dict[str, float] = {}
    if common.uses_description(args):
        if args.held_out_from is not None:
            raise InputError(
                "--held-out-from does not apply to fit-payload-torques (no validation)"
            )
        recording, _ = common.read_log(args, model, args.urdf)
        states, held, source = recording.joint_states, recording.held, recording.source
    else:
        states, source = common.read_joint_states(args)
    if states.effort is None:
        raise DataError(f"{source}: no efforts (joint torques or motor currents) recorded")
    return states, held, source


def _torque_data(
    states: JointStates, joints: list[str], differentiation: dict[str, Any]
) -> tuple[np.ndarray, JointTorqueData]:
    """``(t, data)``: the chain's columns of ``states`` with accelerations (recorded, else
    differentiated: ``differentiation`` the keyword arguments of
    :func:`~inertia_id_ros.formats.data.with_derivatives`)."""
    from inertia_id_ros.chain.links import JointTorqueData
    from inertia_id_ros.formats.data import with_derivatives

    full = with_derivatives(states, **differentiation)
    columns = [full.joint_names.index(j) for j in joints]
    return full.t, JointTorqueData(
        full.q[:, columns],
        full.dq[:, columns],
        full.ddq[:, columns],
        full.effort[:, columns],
        tuple(joints),
    )


def _filter_json(states: JointStates, differentiation: dict[str, Any]) -> dict[str, Any]:
    """The derivative filter :func:`_torque_data` applied to ``states``, as fit-links writes
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


def _link_model(
    model: pin.Model,
    states: JointStates,
    joints: list[str],
    scales: list[float],
    held: dict[str, float],
) -> LinkModel:
    """The chain of ``joints`` (the others locked at their mean recorded positions, or at
    ``held``'s values when not in the log), each joint's efforts scaled by ``scales``."""
    from inertia_id_ros.chain.friction import JointDrive
    from inertia_id_ros.chain.links import LinkModel

    try:
        return LinkModel.from_model(
            model,
            joints,
            {**states.mean_positions(), **held},
            [JointDrive(effort_scale=scale) for scale in scales],
        )
    except ValueError as e:
        raise InputError(str(e)) from None


def _uncertainty_lines(theta: np.ndarray, covariance: np.ndarray) -> list[str]:
    """Standard errors of the mass, COM and inertia about the COM."""
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


def run(args: argparse.Namespace) -> int:
    """Fit the payload; the exit code."""
    from inertia_id_ros.chain.differentiation import payload_half_width, sample_period
    from inertia_id_ros.chain.payload_from_torques import difference_runs, fit_payload
    from inertia_id_ros.core.robots import frame_id
    from inertia_id_ros.formats.data import check_joints
    from inertia_id_ros.formats.export import body_json
    from inertia_id_ros.formats.link_result import read_link_result
    from inertia_id_ros.formats.units import log_unit_findings
    from inertia_id_ros.offline.plausibility import link_filter_findings, volume_findings
    from inertia_id_ros.offline.validation import differentiation_of

    common.check_data_source(args)
    common.check_bounding_ellipsoid(args)
    volume = common.payload_volume_of(args)
    model = common.load_urdf_model(args.urdf)
    states, held, source = _read(args, model)
    frame_id(model, args.frame)  # FrameNotFound: bad input
    joints = args.joints or list(states.joint_names)
    check_joints(states, list(model.names)[1:], joints, source)
    code = common.report_input_findings(
        "fit-payload-torques", log_unit_findings(states, model, joints), args.json
    )
    if code:
        return code
    links = _link_model(model, states, joints, _effort_scales(args, joints), held)
    needed_half_width = args.filter_half_width or payload_half_width(sample_period(states.t))
    differentiation = {"half_width": needed_half_width}
    alignment, link_findings = None, []
    if args.links_result:  # the data differentiated and delayed as the links' fit chose
        link_result = read_link_result(args.links_result, links)
        links, links_x = link_result.model, link_result.x
        differentiation = differentiation_of(
            link_result.result, args.filter_half_width, default=needed_half_width
        )
        link_findings = link_filter_findings(
            link_result.result, args.links_result, needed_half_width, args.filter_half_width
        )
        link_model = f"fit-links result {args.links_result}"
    else:
        links_x, link_model = links.prior, "the URDF's links (no friction)"
    t, data = _torque_data(states, joints, differentiation)
    if args.unloaded:
        unloaded, _, _ = _read(args, model, unloaded=True)
        check_joints(unloaded, list(model.names)[1:], joints, args.unloaded)
        try:
            data, alignment = difference_runs(
                t, data, *_torque_data(unloaded, joints, differentiation)
            )
        except ValueError as e:
            raise DataError(f"{args.unloaded}: {e}") from None
        links_x, link_model = None, "difference of a loaded and an unloaded run"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        try:
            fit = fit_payload(
                links,
                links_x,
                data,
                args.frame,
                estimate_offsets=not args.no_offsets,
                method=args.method,
                weighting=args.weighting,
                bounding_ellipsoid=(volume.ellipsoid_matrix() if args.bounding_ellipsoid else None),
            )
        except (ProblemError, SolverError) as e:
            print(f"inertia-id fit-payload-torques: no estimate: {e}", file=sys.stderr)
            return common.EXIT_NO_ESTIMATE
        except ValueError as e:
            raise InputError(str(e)) from None
    body = body_json("payload", args.frame, fit.theta)
    result: dict[str, Any] = {
        "method": args.method,
        "weighting": args.weighting,
        "bodies": [body],
        "link_model": link_model,
        "theta_std": fit.theta_std.tolist(),
        "covariance": fit.covariance.tolist(),
        "offset_changes": dict(zip(joints, fit.offset_changes.tolist())),
        "rank": fit.rank,
        "n_parameters": fit.n_parameters,
        "warnings": list(fit.warnings),
        "residual_rms": fit.residual_rms,
        "samples": data.n_samples,
        "differentiation": _filter_json(states, differentiation),
        "torque_delay": {"delay_s": differentiation.get("delay", 0.0)},
        "solve_time_s": float(fit.solution.solve_time),
        "alignment": None
        if alignment is None
        else {"shift_s": alignment.shift, "position_rms": alignment.position_rms},
    }
    code = common.report_findings(
        "fit-payload-torques", link_findings + volume_findings("payload", fit.theta, volume), result
    )
    common.write_json(args.json, result)
    for warning in caught:
        print(f"inertia-id fit-payload-torques: warning: {warning.message}", file=sys.stderr)
    lines = [
        f"fit-payload-torques ({args.method}): {data.n_samples} samples of "
        f"{len(joints)} joints from {source}; link model: {link_model}"
    ]
    if alignment is not None:
        lines.append(
            f"  unloaded run matched with a time shift of {alignment.shift:+.3f} s, "
            f"joint positions {alignment.position_rms:.2g} rad rms apart"
        )
    lines += [
        f"payload at {args.frame!r}, in that frame:",
        *common.body_lines(body),
        *_uncertainty_lines(fit.theta, fit.covariance),
    ]
    if not args.no_offsets:
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
    if links_x is not None and not args.links_result:
        lines.append(
            "  note: the URDF's links (their masses, no friction) decide what their "
            "error adds to the payload; prefer --links-result (a fit-links result) or "
            "--unloaded (differencing)"
        )
    common.print_summary(lines, written=[args.json])
    return code
