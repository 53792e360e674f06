"""``inertia-id fit-payload``: the payload beyond an F/T sensor from recorded joint states and
wrenches, with the node's estimator (the job :func:`~inertia_id_ros.jobs.fit_payload.fit_payload`
does it; this module parses, calls and prints)."""

from __future__ import annotations

import argparse

from inertia_id_ros.cli import common
from inertia_id_ros.jobs.fit_payload import FitPayloadOptions
from inertia_id_ros.modes.payload import PayloadMode


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """The ``fit-payload`` command on ``subparsers``."""
    payload = common.add_command(
        subparsers,
        "fit-payload",
        run,
        help="identify the payload beyond an F/T sensor from recorded joint states and wrenches",
    )
    common.add_data_options(payload, wrenches=True, methods=PayloadMode.methods)
    payload.add_argument(
        "--sensor-frame", required=True, help="URDF frame of the F/T sensor (the wrenches' frame)"
    )
    payload.add_argument(
        "--flip-wrench-sign",
        action=argparse.BooleanOptionalAction,
        help="the sensor reports the wrench the body exerts on it (the node's "
        "flip_wrench_sign): negate the readings; --no-flip-wrench-sign: "
        "take them as they are (default: as recorded; with --input, the "
        "description's sign, by default the URDF's measure_direction)",
    )
    payload.add_argument(
        "--no-offset",
        action="store_true",
        help="do not estimate the F/T sensor offset (it is calibrated out)",
    )
    common.add_ft_calibration_option(payload)
    common.add_weighting_option(payload, FitPayloadOptions.weighting, "each wrench component")
    payload.add_argument(
        "--window-sec",
        type=float,
        default=FitPayloadOptions.window_sec,
        metavar="SEC",
        help="use the newest SEC seconds of the recording (default: all)",
    )
    payload.add_argument(
        "--prior",
        metavar="RESULT",
        help="the payload's CAD values as a prior (method cad_prior): a result "
        "JSON of this schema, its body in --sensor-frame",
    )
    payload.add_argument(
        "--prior-urdf", metavar="URDF", help="URDF of --prior-link (default: --urdf)"
    )
    payload.add_argument(
        "--prior-link",
        metavar="LINK",
        help="the prior from a URDF link: its inertial and the links beyond "
        "it, moved to --sensor-frame",
    )
    common.add_plausibility_options(payload, "the sensor frame")


def options_of(args: argparse.Namespace) -> FitPayloadOptions:
    """The job's options of the command line's ``args`` (an option not given keeps the job's
    default)."""
    given = {"filter_half_width": args.filter_half_width}  # None: the job's default
    return FitPayloadOptions(
        method=args.method,
        flip_wrench_sign=args.flip_wrench_sign,
        estimate_offset=not args.no_offset,
        weighting=args.weighting,
        window_sec=args.window_sec,
        prior=args.prior,
        prior_urdf=args.prior_urdf,
        prior_link=args.prior_link,
        payload_sphere=args.payload_sphere,
        payload_box=None if args.payload_box is None else tuple(args.payload_box),
        bounding_ellipsoid=args.bounding_ellipsoid,
        validate=args.validate,
        **{name: value for name, value in given.items() if value is not None},
    )


def run(args: argparse.Namespace) -> int:
    """Fit the payload; the exit code."""
    from inertia_id_ros.jobs.fit_payload import fit_payload

    source = common.log_source(args)
    result = fit_payload(args.urdf, args.sensor_frame, source, options_of(args))
    code = common.print_result("fit-payload", result, args.json)
    if not code and result.validation is not None:
        print("\n".join(result.validation.summary))
    return code
