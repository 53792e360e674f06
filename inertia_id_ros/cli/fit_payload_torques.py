"""``inertia-id fit-payload-torques``: the payload at a frame of an arm without an F/T sensor, from
recorded joint states and efforts, with a link model or from a loaded and an unloaded run of the
same motion (the job :func:`~inertia_id_ros.jobs.fit_payload_torques.fit_payload_torques`)."""

from __future__ import annotations

import argparse

from inertia_id_ros.cli import common
from inertia_id_ros.jobs.fit_payload_torques import FitPayloadTorquesOptions, fit_payload_torques
from inertia_id_ros.modes.payload_torques import PayloadTorquesMode


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
        help="differencing: a recording (file, or bag with --bag, or an input description "
        ".yaml) of the same motion without the payload; the link model cancels",
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
    common.add_weighting_option(command, FitPayloadTorquesOptions.weighting, "each joint")
    command.add_argument(
        "--no-offsets",
        action="store_true",
        help="do not estimate the change of each joint's torque offset",
    )
    common.add_plausibility_options(command, "--frame")


def run(args: argparse.Namespace) -> int:
    """Fit the payload; the exit code."""
    result = fit_payload_torques(args.urdf, common.log_source(args), args.frame, options_of(args))
    return common.print_result("fit-payload-torques", result, args.json)


def options_of(args: argparse.Namespace) -> FitPayloadTorquesOptions:
    """The job's options from the command line's."""
    return FitPayloadTorquesOptions(
        method=args.method,
        weighting=args.weighting,
        links_result=args.links_result,
        unloaded=args.unloaded,
        joints=args.joints,
        torque_constants=args.torque_constants,
        gear_ratios=args.gear_ratios,
        effort_signs=args.effort_signs,
        estimate_offsets=not args.no_offsets,
        filter_half_width=args.filter_half_width,
        bounding_ellipsoid=args.bounding_ellipsoid,
        payload_sphere=args.payload_sphere,
        payload_box=args.payload_box,
    )
