"""``inertia-id fit-links``: the links of a chain (and joint friction, offset, armature) from
recorded joint states and efforts (the job :func:`~inertia_id_ros.jobs.fit_links.fit_links`)."""

from __future__ import annotations

import argparse

from inertia_id_ros.cli import common
from inertia_id_ros.jobs.fit_links import FitLinksOptions, fit_links
from inertia_id_ros.modes.links import LinksMode


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
    common.add_weighting_option(links, FitLinksOptions.weighting, "each joint")
    links.add_argument(
        "--filter-order",
        type=int,
        default=FitLinksOptions.filter_order,
        metavar="P",
        help="degree of the local polynomial with --filter-half-width "
        f"({FitLinksOptions.filter_order})",
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


def run(args: argparse.Namespace) -> int:
    """Fit the links; the exit code."""
    result = fit_links(args.urdf, common.log_source(args), options_of(args))
    code = common.print_result("fit-links", result, args.json)
    if result.validation_error is not None:
        raise result.validation_error
    if not code and result.validation is not None:
        print("\n".join(result.validation.summary))
    return code


def options_of(args: argparse.Namespace) -> FitLinksOptions:
    """The job's options from the command line's."""
    return FitLinksOptions(
        method=args.method,
        joints=args.joints,
        prior_weight=args.prior_weight,
        weighting=args.weighting,
        filter_half_width=args.filter_half_width,
        filter_order=args.filter_order,
        coulomb_velocity=args.coulomb_velocity,
        estimate_tilt=not args.no_tilt,
        torque_delay=args.torque_delay,
        bounding_ellipsoid=args.bounding_ellipsoid,
        validation_data=args.validate,
    )
