"""``inertia-id calibrate-drives``: each joint's current-to-torque gain from unloaded and loaded
runs with a weighed payload (the job
:func:`~inertia_id_ros.jobs.calibrate_drives.calibrate_drives`)."""

from __future__ import annotations

import argparse

from inertia_id_ros.cli import common
from inertia_id_ros.errors import InputError
from inertia_id_ros.jobs.calibrate_drives import (
    CalibrateDrivesOptions,
    calibrate_drives,
    run_source,
)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """The ``calibrate-drives`` command on ``subparsers``."""
    command = common.add_command(
        subparsers,
        "calibrate-drives",
        run,
        help="calibrate each joint's current-to-torque gain from an unloaded and a loaded run "
        "with a weighed payload (motor currents logged as efforts)",
    )
    command.add_argument(
        "--unloaded",
        action="append",
        required=True,
        metavar="RUN",
        help="a run without the payload: an input description (.yaml, efforts in A), an "
        ".npz/.csv file or a bag; repeat with --loaded for several pairs",
    )
    command.add_argument(
        "--loaded",
        action="append",
        required=True,
        metavar="RUN",
        help="a run with the payload (the n-th --loaded pairs with the n-th --unloaded)",
    )
    common.add_urdf_option(command)
    command.add_argument("--frame", required=True, help="URDF frame the payload is attached to")
    command.add_argument(
        "--mass",
        type=float,
        action="append",
        required=True,
        help="the payload's weighed mass (kg): once for every pair, or once per pair",
    )
    command.add_argument(
        "--joints",
        type=common.comma_names,
        metavar="JOINT,...",
        help="joints of the chain (default: all recorded); the others are locked at their "
        "mean position",
    )
    command.add_argument(
        "--method",
        default=CalibrateDrivesOptions.method,
        choices=("lmi", "ols"),
        help=f"solver (default {CalibrateDrivesOptions.method}: every body consistent)",
    )
    command.add_argument(
        "--filter-half-width",
        type=common.positive_seconds,
        metavar="SEC",
        help="half-width of the derivative filter (s; default: the payload's for the rate)",
    )
    command.add_argument(
        "--check",
        action="store_true",
        help="print beside each gain the controller's own: its target torque over its target "
        "current at standstill (input descriptions with effort_target and current_target)",
    )
    command.add_argument("--yaml", metavar="OUT", help="write the effort entry (YAML) to OUT")
    common.add_json_option(command)


def run(args: argparse.Namespace) -> int:
    """Calibrate the gains; the exit code."""
    if len(args.unloaded) != len(args.loaded):
        raise InputError(
            f"give --unloaded and --loaded in pairs: {len(args.unloaded)} unloaded, "
            f"{len(args.loaded)} loaded"
        )
    pairs = [(run_source(u), run_source(lo)) for u, lo in zip(args.unloaded, args.loaded)]
    options = CalibrateDrivesOptions(
        method=args.method,
        joints=args.joints,
        filter_half_width=args.filter_half_width,
        check=args.check,
    )
    mass = args.mass[0] if len(args.mass) == 1 else args.mass
    result = calibrate_drives(args.urdf, pairs, args.frame, mass, options)
    if args.yaml and result.estimate is not None:
        with open(args.yaml, "w", encoding="utf-8") as out:
            out.write(result.yaml)
    return common.print_result("calibrate-drives", result, args.json, [args.yaml])
