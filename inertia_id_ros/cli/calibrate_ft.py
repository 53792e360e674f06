"""``inertia-id calibrate-ft``: each F/T sensor's offset and calibration matrix in situ, from the
model of what it carries (the job :func:`~inertia_id_ros.jobs.calibrate_ft.calibrate_ft` does
it; this module parses, calls and prints)."""

from __future__ import annotations

import argparse

from inertia_id_ros.cli import common
from inertia_id_ros.cli.fit_whole_body import add_base_options, add_data_options
from inertia_id_ros.jobs.calibrate_ft import (
    CALIBRATE_FT_DEFAULT_HALF_WIDTH,
    FILTER_CANDIDATES,
    CalibrateFTOptions,
)
from inertia_id_ros.options import FT_CALIBRATION_KINDS


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """The ``calibrate-ft`` command on ``subparsers``."""
    cal = common.add_command(
        subparsers,
        "calibrate-ft",
        run,
        help="calibrate F/T sensors in situ (offset and 6x6 matrix or gains) from the model "
        "of what each carries",
    )
    add_data_options(cal)
    common.add_urdf_option(cal, note="its links are the trusted model, unless --links")
    common.add_json_option(cal)
    add_base_options(cal)
    cal.add_argument(
        "--sensors",
        type=common.comma_names,
        metavar="FRAME,...",
        help="internal F/T sensors to calibrate (default: every internal sensor)",
    )
    cal.add_argument(
        "--kind",
        choices=FT_CALIBRATION_KINDS,
        default=CalibrateFTOptions.kind,
        help=f"a full 6x6 matrix or one gain per axis ({CalibrateFTOptions.kind})",
    )
    cal.add_argument(
        "--links",
        metavar="RESULT",
        help="a fit-whole-body result JSON whose links are trusted (default: the URDF's)",
    )
    cal.add_argument(
        "--holdout",
        type=float,
        default=CalibrateFTOptions.holdout,
        metavar="FRACTION",
        help="fit on the first 1 - FRACTION of the samples, print the errors on the rest "
        f"before and after ({CalibrateFTOptions.holdout:g}; 0: fit all)",
    )
    cal.add_argument(
        "--flip-wrench-sign",
        action="append",
        metavar="FRAME",
        help="the F/T sensor at FRAME reports the opposite wrench; repeat per sensor",
    )
    cal.add_argument(
        "--filter-half-width",
        type=common.positive_seconds,
        default=CalibrateFTOptions.filter_half_width,
        metavar="SEC",
        help="half-width of the local polynomial fit that differentiates joint states and "
        "smooths the readings (s; default: chosen by cross-validation among "
        f"{', '.join(f'{h:g}' for h in FILTER_CANDIDATES)}; a wrist sensor: "
        f"{CALIBRATE_FT_DEFAULT_HALF_WIDTH:g})",
    )
    cal.add_argument("--out", metavar="FILE", help="write the calibration (YAML) to FILE")
    cal.add_argument(
        "--firmware-matrix",
        action="append",
        type=frame_and_file,
        metavar="FRAME=FILE",
        help="the sensor at FRAME's current firmware matrix file (IIT FTSens matrix_SN*.txt): "
        "write it with the calibration composed in beside it, as <name>_insitu.txt (the offset "
        "stays in --out's file); repeat per sensor",
    )
    cal.add_argument(
        "--payload",
        metavar="RESULT",
        help="a wrist sensor: the result JSON of the trusted payload it carries (its body in "
        "the sensor frame); the data are a payload recording (joint states and wrenches)",
    )
    cal.add_argument("--sensor-frame", metavar="FRAME", help="--payload: the wrist sensor's frame")
    cal.add_argument("--wrench-topic", help="--payload with --bag: the WrenchStamped topic")


def frame_and_file(text: str) -> tuple[str, str]:
    """``FRAME=FILE`` as ``(frame, file)``."""
    frame, _, path = text.partition("=")
    if not frame or not path:
        raise argparse.ArgumentTypeError(f"expected FRAME=FILE, got {text!r}")
    return frame, path


def run(args: argparse.Namespace) -> int:
    """Calibrate the sensors; the exit code."""
    from inertia_id_ros.errors import InputError
    from inertia_id_ros.formats.firmware_matrix import write_recalibrated_firmware_matrix
    from inertia_id_ros.formats.ft_calibration import calibrations_of, write_ft_calibration
    from inertia_id_ros.jobs.calibrate_ft import calibrate_ft, calibrate_wrist_ft

    topics = [entry.rsplit("=", 1) for entry in args.ft or []]
    options = CalibrateFTOptions(
        sensors=None if args.sensors is None else tuple(args.sensors),
        kind=args.kind,
        holdout=args.holdout,
        links=args.links,
        filter_half_width=args.filter_half_width,
        base=args.base,
        fixed_frame=args.fixed_frame,
        fixed_tilt=args.fixed_tilt,
        imu_tilt=args.imu_tilt,
        flip_wrench_sign=tuple(args.flip_wrench_sign or ()),
        ft_topics=tuple((topic[0], topic[-1]) for topic in topics),
        imu_topic=args.imu_topic,
    )
    if (args.payload is None) != (args.sensor_frame is None):
        raise InputError("--payload and --sensor-frame go together (a wrist sensor)")
    source = common.log_source(args)
    if args.payload is not None:
        result = calibrate_wrist_ft(args.urdf, args.sensor_frame, args.payload, source, options)
    else:
        result = calibrate_ft(args.urdf, source, options)
    written = [args.out]
    if args.out and not result.refused:
        common.write_output(
            args.out, lambda out: write_ft_calibration(out, result.calibration_file)
        )
    if args.firmware_matrix and not result.refused:
        sensors = result.calibration_file["ft_calibration"]["sensors"]
        calibrations = calibrations_of(sensors, "calibrate-ft")
        for frame, current in args.firmware_matrix:
            if frame not in calibrations:
                raise InputError(f"--firmware-matrix: {frame!r} is not among {list(calibrations)}")
            written.append(str(write_recalibrated_firmware_matrix(current, calibrations[frame])))
    return common.print_result("calibrate-ft", result, args.json, written=tuple(written))
