"""``inertia-id fit-whole-body``: every link of a floating-base robot from an IMU and several F/T
sensors (the job :func:`~inertia_id_ros.jobs.fit_whole_body.fit_whole_body` does it; this module
parses, calls and prints)."""

from __future__ import annotations

import argparse

from inertia_id_ros.cli import common
from inertia_id_ros.jobs.fit_whole_body import WHOLE_BODY_FILTER_CANDIDATES, FitWholeBodyOptions
from inertia_id_ros.jobs.whole_body_recording import ft_topics_error
from inertia_id_ros.options import (
    BASE_KINDS,
    DEFAULT_IMU_TOPIC,
    DEFAULT_JOINT_STATES_TOPIC,
    IMU_TILT_USES,
    WHOLE_BODY_METHODS,
)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """The ``fit-whole-body`` command on ``subparsers``."""
    whole = common.add_command(
        subparsers,
        "fit-whole-body",
        run,
        help="identify every link of a floating-base robot from an IMU and several F/T sensors",
    )
    add_data_options(whole)
    common.add_urdf_option(whole, note="the prior")
    common.add_json_option(whole)
    whole.add_argument(
        "--method",
        default=FitWholeBodyOptions.method,
        choices=WHOLE_BODY_METHODS,
        help="identification method (lmi; ols: unconstrained baseline)",
    )
    add_base_options(whole)
    _add_fit_options(whole)
    common.add_plausibility_options(whole)


def add_data_options(whole: argparse.ArgumentParser) -> None:
    """The recorded data (``--data``, ``--bag``, ``--input`` and the log flags) and a bag's
    topics."""
    common.add_recording_options(
        whole, "recorded data, .npz (see inertia_id_ros.formats.whole_body_log)"
    )
    whole.add_argument(
        "--ft",
        action="append",
        metavar="TOPIC=KIND",
        help="--bag: a WrenchStamped topic and its sensor's kind (contact or "
        "internal), once per F/T sensor; the first sets the stamps",
    )
    whole.add_argument("--imu-topic", help=f"--bag: sensor_msgs/Imu topic ({DEFAULT_IMU_TOPIC})")
    whole.add_argument(
        "--joint-states-topic", help=f"--bag: JointState topic ({DEFAULT_JOINT_STATES_TOPIC})"
    )


def add_base_options(whole: argparse.ArgumentParser) -> None:
    """The base: floating, fixed (its frame and tilt, the IMU's use) or suspended."""
    whole.add_argument(
        "--base",
        default=FitWholeBodyOptions.base,
        choices=BASE_KINDS,
        help="floating (IMU), fixed (held at --fixed-frame: on a stand, or on a "
        "stance sole) or suspended (floating)",
    )
    whole.add_argument(
        "--fixed-frame",
        metavar="FRAME",
        help="--base fixed: the URDF frame held still (default: the URDF root, on "
        "a stand); e.g. l_sole for a humanoid on its left foot, whose pelvis "
        "then moves with the stance leg's joints (no IMU needed)",
    )
    whole.add_argument(
        "--fixed-tilt",
        metavar="ROLL,PITCH",
        type=_roll_pitch,
        default=FitWholeBodyOptions.fixed_tilt,
        help="--base fixed: the fixed frame's roll and pitch in the world (rad; 0,0: level)",
    )
    whole.add_argument(
        "--imu-tilt",
        choices=IMU_TILT_USES,
        default=FitWholeBodyOptions.imu_tilt,
        help="--base fixed with IMU data: correct: the IMU's mean specific force "
        "(the joints' motion removed) gives the fixed frame's tilt; check: "
        "keep --fixed-tilt and report the IMU's beside it "
        f"({FitWholeBodyOptions.imu_tilt})",
    )


def _add_fit_options(whole: argparse.ArgumentParser) -> None:
    """What is fitted and how: links, prior weight, held-out part, rows, signs, offsets,
    weighting, differentiation, free fall."""
    whole.add_argument(
        "--bodies",
        type=common.comma_names,
        metavar="LINK,...",
        help="links to identify (default: every link with mass); the others keep "
        "their URDF inertials",
    )
    whole.add_argument(
        "--prior-weight",
        type=float,
        default=FitWholeBodyOptions.prior_weight,
        help="pull toward the URDF in scaled coordinates, relative to the data "
        f"({FitWholeBodyOptions.prior_weight:g})",
    )
    whole.add_argument(
        "--holdout",
        type=float,
        metavar="FRACTION",
        help="fit on the first 1 - FRACTION of the samples and print the errors "
        "predicting the rest, beside the URDF's and an OLS fit's",
    )
    whole.add_argument(
        "--efforts", action="store_true", help="add joint-torque rows from the recorded 'effort'"
    )
    whole.add_argument(
        "--flip-wrench-sign",
        action="append",
        metavar="FRAME",
        help="the F/T sensor at FRAME reports the opposite wrench (e.g. the real "
        "iCub's child_to_parent sensors); repeat per sensor",
    )
    whole.add_argument(
        "--estimate-contact-offsets",
        action="store_true",
        help="estimate the contact sensors' constant offsets too (default: only "
        "the internal sensors'); a contact sensor's offset is identifiable "
        "only when its wrench changes independently of the base rows",
    )
    common.add_weighting_option(
        whole,
        FitWholeBodyOptions.weighting,
        "the base's and each sensor's force and torque rows (and each joint's torque),",
    )
    whole.add_argument(
        "--filter-half-width",
        type=common.positive_seconds,
        default=FitWholeBodyOptions.filter_half_width,
        metavar="SEC",
        help="half-width of the local polynomial fit that differentiates joint "
        "states and the gyro (s; default: chosen by cross-validation on held-out time "
        f"blocks among {', '.join(f'{h:g}' for h in WHOLE_BODY_FILTER_CANDIDATES)})",
    )
    common.add_ft_calibration_option(whole)
    whole.add_argument(
        "--free-fall",
        action="store_true",
        help="the robot touched nothing (a floating or suspended base without a "
        "contact sensor is refused otherwise: its base rows would say every "
        "link weighs 0 kg)",
    )


def _roll_pitch(text: str) -> tuple[float, float]:
    """An argparse ``type``: ``--fixed-tilt ROLL,PITCH`` (rad)."""
    angles = common.comma_numbers(text)
    if len(angles) != 2:
        raise argparse.ArgumentTypeError(f"expected ROLL,PITCH in rad, got {text!r}")
    return angles[0], angles[1]


def options_of(args: argparse.Namespace) -> FitWholeBodyOptions:
    """The job's options of the command line's ``args``; a bag's ``--ft TOPIC=KIND`` entries
    split (one without ``=`` is an error)."""
    topics = [entry.rsplit("=", 1) for entry in args.ft or []]
    if args.bag is not None and any(len(topic) != 2 for topic in topics):
        raise ft_topics_error(args.ft)
    return FitWholeBodyOptions(
        method=args.method,
        base=args.base,
        fixed_frame=args.fixed_frame,
        fixed_tilt=args.fixed_tilt,
        imu_tilt=args.imu_tilt,
        bodies=None if args.bodies is None else tuple(args.bodies),
        prior_weight=args.prior_weight,
        holdout=args.holdout,
        efforts=args.efforts,
        flip_wrench_sign=tuple(args.flip_wrench_sign or ()),
        estimate_contact_offsets=args.estimate_contact_offsets,
        weighting=args.weighting,
        filter_half_width=args.filter_half_width,
        free_fall=args.free_fall,
        bounding_ellipsoid=args.bounding_ellipsoid,
        ft_topics=tuple((topic[0], topic[-1]) for topic in topics),
        imu_topic=args.imu_topic,
    )


def run(args: argparse.Namespace) -> int:
    """Fit every link; the exit code."""
    from inertia_id_ros.jobs.fit_whole_body import fit_whole_body

    options = options_of(args)
    result = fit_whole_body(args.urdf, common.log_source(args), options)
    return common.print_result("fit-whole-body", result, args.json)
