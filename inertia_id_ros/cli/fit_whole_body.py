"""``inertia-id fit-whole-body``: every link of a floating-base robot from an IMU and several F/T
sensors (:func:`~inertia_id_ros.chain.whole_body_fit.fit_whole_body`; data:
:mod:`inertia_id_ros.formats.whole_body_log`)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from inertia_id_ros.cli import common
from inertia_id_ros.errors import InputError, ProblemError, SolverError
from inertia_id_ros.options import (
    BASE_KINDS,
    DEFAULT_IMU_TILT,
    DEFAULT_IMU_TOPIC,
    DEFAULT_JOINT_STATES_TOPIC,
    IMU_TILT_USES,
    WHOLE_BODY_DEFAULT_PRIOR_WEIGHT,
    WHOLE_BODY_DEFAULT_WEIGHTING,
    WHOLE_BODY_METHODS,
)

if TYPE_CHECKING:
    from inertia_id_ros.core.whole_body_model import WholeBodyModel
    from inertia_id_ros.formats.whole_body_log import WholeBodyRecording

PINNED = "pinned at 0 kg (not identified)"
"""A link's identifiability when its mass sits at its bound (never "identified")."""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """The ``fit-whole-body`` command on ``subparsers``."""
    whole = common.add_command(
        subparsers,
        "fit-whole-body",
        run,
        help="identify every link of a floating-base robot from an IMU and several F/T sensors",
    )
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
    common.add_urdf_option(whole, note="the prior")
    common.add_json_option(whole)
    whole.add_argument(
        "--method",
        default="lmi",
        choices=WHOLE_BODY_METHODS,
        help="identification method (lmi; ols: unconstrained baseline)",
    )
    whole.add_argument(
        "--base",
        default="floating",
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
        default="0,0",
        help="--base fixed: the fixed frame's roll and pitch in the world (rad; 0,0: level)",
    )
    whole.add_argument(
        "--imu-tilt",
        choices=IMU_TILT_USES,
        default=DEFAULT_IMU_TILT,
        help="--base fixed with IMU data: correct: the IMU's mean specific force "
        "(the joints' motion removed) gives the fixed frame's tilt; check: "
        "keep --fixed-tilt and report the IMU's beside it "
        f"({DEFAULT_IMU_TILT})",
    )
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
        default=WHOLE_BODY_DEFAULT_PRIOR_WEIGHT,
        help="pull toward the URDF in scaled coordinates, relative to the data "
        f"({WHOLE_BODY_DEFAULT_PRIOR_WEIGHT:g})",
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
        WHOLE_BODY_DEFAULT_WEIGHTING,
        "the base's and each sensor's force and torque rows (and each joint's torque),",
    )
    whole.add_argument(
        "--filter-half-width",
        type=common.positive_seconds,
        default=0.05,
        metavar="SEC",
        help="half-width of the local polynomial fit that differentiates joint "
        "states and the gyro (s; 0.05)",
    )
    whole.add_argument(
        "--free-fall",
        action="store_true",
        help="the robot touched nothing (a floating or suspended base without a "
        "contact sensor is refused otherwise: its base rows would say every "
        "link weighs 0 kg)",
    )
    common.add_plausibility_options(whole)


def run(args: argparse.Namespace) -> int:
    """Fit every link; the exit code."""
    import numpy as np

    from inertia_id_ros.chain.whole_body_fit import fit_whole_body, holdout_comparison
    from inertia_id_ros.formats.units import check_time_units, log_unit_findings
    from inertia_id_ros.formats.whole_body_log import (
        read_whole_body_bag,
        read_whole_body_file,
        whole_body_inputs,
        whole_body_json,
    )
    from inertia_id_ros.offline.plausibility import (
        ellipsoids_of,
        free_fall_finding,
        identifiability_lines,
        link_volumes,
        volumes_holding,
    )

    if args.prior_weight < 0:
        raise InputError(f"--prior-weight must be >= 0, got {args.prior_weight}")
    fixed_tilt = args.fixed_tilt
    if args.base != "fixed" and (args.fixed_frame is not None or any(fixed_tilt)):
        raise InputError("--fixed-frame and --fixed-tilt apply to --base fixed")
    bodies = args.bodies
    held: dict[str, float] = {}
    flips = args.flip_wrench_sign or ()
    if common.uses_description(args):
        if args.input is None:
            raise InputError(
                "the log flags (--time-unit, --t-start, ...) of fit-whole-body "
                "take an --input description"
            )
        if args.ft or args.imu_topic or args.joint_states_topic:
            raise InputError(
                "--ft, --imu-topic and --joint-states-topic only apply to --bag "
                "(an --input description names its topics)"
            )
        loaded, held_out_from = common.read_whole_log(
            args, common.load_urdf_model(args.urdf), args.urdf, flips
        )
        flips, held = (), loaded.held
        recording = loaded.whole_body(args.filter_half_width)
        if held_out_from is not None:
            if args.holdout is not None:
                raise InputError(
                    "--holdout: the --input description splits off its own "
                    "held-out part (held_out_from)"
                )
            t = recording.states.t - loaded.t0
            args.holdout = float(np.mean(t >= held_out_from))
            if not 0.0 < args.holdout < 1.0:
                raise InputError(
                    f"{loaded.source}: held_out_from {held_out_from:g} s leaves "
                    "no samples on one side"
                )
    elif args.data is not None:
        if args.ft or args.imu_topic or args.joint_states_topic:
            raise InputError("--ft, --imu-topic and --joint-states-topic only apply to --bag")
        recording = read_whole_body_file(args.data)
    else:
        topics = [entry.rsplit("=", 1) for entry in args.ft or []]
        if not topics or any(len(t) != 2 for t in topics):
            raise InputError(
                "--bag needs --ft TOPIC=KIND for every F/T sensor (KIND: contact "
                f"or internal), got {args.ft}"
            )
        recording = read_whole_body_bag(
            args.bag,
            [(topic, kind) for topic, kind in topics],
            args.joint_states_topic or DEFAULT_JOINT_STATES_TOPIC,
            None
            if args.base != "floating" and not args.imu_topic
            else args.imu_topic or DEFAULT_IMU_TOPIC,
            args.filter_half_width,
        )
    for topic, count in recording.uncovered.items():
        print(
            f"inertia-id fit-whole-body: warning: {topic!r} does not cover {count} stamps "
            f"(stopped or not started): their rows are dropped",
            file=sys.stderr,
        )
    code = common.report_input_findings(  # before differentiating in those units
        "fit-whole-body", check_time_units(recording.states.t, "joint state stamps"), args.json
    )
    if code:
        return code
    model, samples = whole_body_inputs(
        recording,
        args.urdf,
        args.base,
        bodies,
        args.filter_half_width,
        flip_wrench_sign=flips,
        fixed_frame=args.fixed_frame,
        fixed_tilt=fixed_tilt,
        imu_tilt=args.imu_tilt,
        estimate_contact_offsets=args.estimate_contact_offsets,
    )
    if held:
        from inertia_id_ros.formats.description import rows_moved_by

        moved = rows_moved_by(model, samples, list(held), args.efforts)
        if moved:
            raise InputError(
                f"{recording.source}: the rows {moved} depend on the motion of "
                f"held joint(s) {sorted(held)} (not in the log); log them, or fit "
                "a model whose rows they do not move (--base fixed, sensors "
                "beyond them)"
            )
    tilt_line = _tilt_line(recording, model, args) if model.base == "fixed" else None
    if args.holdout is not None and not 0.0 < args.holdout < 1.0:
        raise InputError(f"--holdout must be in (0, 1), got {args.holdout}")
    efforts = args.efforts and samples.efforts is not None
    if not model.channels(efforts):
        raise InputError(
            f"--base {model.base} with contact F/T sensors only"
            + ("" if efforts else " and no joint efforts")
            + ": no rows to fit (a fixed base has no base rows; give internal "
            "sensors or --efforts with recorded efforts)"
        )
    code = common.report_input_findings(
        "fit-whole-body",
        free_fall_finding(args.base, recording.ft_types, args.free_fall)
        + log_unit_findings(recording.states, model.model, list(model.joint_names)),
        args.json,
    )
    if code:
        return code
    volumes = volumes_holding(
        link_volumes(args.urdf, model.bodies), dict(zip(model.links, model.link_prior))
    )
    ellipsoids = ellipsoids_of(volumes, model.bodies) if args.bounding_ellipsoid else None
    holdout = None
    try:
        if args.holdout is None:
            fit = fit_whole_body(
                model,
                samples,
                args.method,
                prior_weight=args.prior_weight,
                with_efforts=efforts,
                weighting=args.weighting,
                bounding_ellipsoids=ellipsoids,
            )
        else:
            fit, holdout = holdout_comparison(
                model,
                samples,
                args.holdout,
                args.method,
                args.prior_weight,
                efforts,
                args.weighting,
                bounding_ellipsoids=ellipsoids,
            )
    except (ProblemError, SolverError) as e:
        print(f"inertia-id fit-whole-body: no estimate: {e}", file=sys.stderr)
        return common.EXIT_NO_ESTIMATE
    result = whole_body_json(model, fit, args.method, fit.solve_time, efforts)
    if holdout is not None:
        result["holdout"] = {"fraction": args.holdout, "rms": holdout}
    findings, checked = _findings_after_fit(model, samples, fit, efforts, volumes, args)
    result.update(checked)
    for body in result["bodies"]:
        if any(f.kind == "pinned_mass" and f.subject == body["name"] for f in findings):
            body["identifiability"] = PINNED
    code = common.report_findings("fit-whole-body", findings, result)
    common.write_json(args.json, result)
    lines = [
        f"fit-whole-body ({args.method}, {model.base} base): {fit.n_samples} samples, "
        f"{model.n_bodies} links, {len(model.sensors)} F/T sensors from "
        f"{args.data or args.bag or args.input}; "
        f"solve {fit.solve_time:.3f} s ({fit.solution.status}); "
        f"{fit.identifiability.rank} of {fit.identifiability.n_params} base parameters; "
        f"weighting {args.weighting}",
        *identifiability_lines(fit.identifiability.combinations),
        *([tilt_line] if tilt_line else []),
        *common.whole_body_table(result),
    ]
    inconsistent = sum(not body["fully_consistent"] for body in result["bodies"])
    lines.append(f"residual rms {fit.residual_rms:.4f}; inconsistent links: {inconsistent}")
    if fit.weights is not None:
        weighting = result["weighting"]
        lines.append(
            f"weights ({weighting['iterations']} fits; residual std per row, N or N m): "
            + ", ".join(
                f"{name} {w:.3g} ({weighting['sigma'][name]:.3g})"
                for name, w in weighting["weights"].items()
            )
        )
    if holdout is not None:
        lines.append(
            f"held-out last {100 * args.holdout:g} %: RMS error of the predicted wrenches "
            f"(force N / torque N m); the OLS fit leaves "
            f"{next(iter(holdout.values()))['ols_inconsistent_links']} links inconsistent"
        )
        columns = [
            k
            for k in ("fit", "urdf", "urdf_offsets", "ols")
            if k in next(iter(holdout.values()))["force"]
        ]
        titles = {"fit": args.method, "urdf": "URDF", "urdf_offsets": "URDF+offsets", "ols": "OLS"}
        urdf = "urdf_offsets" if "urdf_offsets" in columns else "urdf"  # offsets are nuisances
        lines.append(
            f"{'rows':<22}"
            + "".join(f"{titles[k]:>18}" for k in columns)
            + f"{'fit/' + titles[urdf]:>{max(10, len(titles[urdf]) + 6)}}"
            + f"{'fit/OLS':>9}"
        )
        for group, row in holdout.items():
            f, t = row["force"], row["torque"]
            lines.append(
                f"{group:<22}"
                + "".join(f"{f[k]:9.3f}/{t[k]:<8.3f}" for k in columns)
                + f"{f['fit'] / f[urdf]:{max(10, len(titles[urdf]) + 6)}.3f}"
                + f"{f['fit'] / f['ols']:9.3f}"
            )
    common.print_summary(lines, code, [args.json])
    return code


def _findings_after_fit(
    model, samples, fit, efforts: bool, volumes: dict, args: argparse.Namespace
) -> tuple[list, dict]:
    """``(findings, JSON)``: each sensor's wrenches against the URDF's (a sign), residuals per
    sensor against the unconstrained fit, masses pinned at zero, the links' bounding volumes;
    the JSON's ``"urdf_gains"`` and ``"residual_ratios"``."""
    from inertia_id_ros.offline.plausibility import (
        pinned_mass_findings,
        volume_findings,
        whole_body_gain_findings,
        whole_body_residual_findings,
    )

    findings, gains = whole_body_gain_findings(model, samples, efforts)
    ratio_findings, ratios = whole_body_residual_findings(
        model, samples, fit.x, args.prior_weight, efforts
    )
    findings += ratio_findings
    if args.method != "ols":
        prior = model.link_prior[[model.links.index(b) for b in model.bodies]]
        findings += pinned_mass_findings(model.bodies, fit.thetas[:, 0], prior[:, 0])
    for name, theta in zip(model.bodies, fit.thetas):
        if name in volumes:
            findings += volume_findings(name, theta, volumes[name])
    return findings, {"urdf_gains": gains, "residual_ratios": ratios}


def _roll_pitch(text: str) -> tuple[float, float]:
    """An argparse ``type``: ``--fixed-tilt ROLL,PITCH`` (rad)."""
    angles = common.comma_numbers(text)
    if len(angles) != 2:
        raise argparse.ArgumentTypeError(f"expected ROLL,PITCH in rad, got {text!r}")
    return angles[0], angles[1]


def _tilt_line(
    recording: WholeBodyRecording, model: WholeBodyModel, args: argparse.Namespace
) -> str:
    """The fixed frame and its tilt as used; with IMU data, the IMU's mean tilt beside it (a
    warning on stderr when ``--imu-tilt check`` finds them further apart than
    :data:`~inertia_id_ros.core.base_motion.TILT_CHECK_TOLERANCE`)."""
    import numpy as np

    from inertia_id_ros.core.base_motion import TILT_CHECK_TOLERANCE, tilt_difference
    from inertia_id_ros.formats.whole_body_log import imu_fixed_tilt

    frame = model.fixed_frame or "the URDF root"
    given = np.degrees(model.fixed_tilt)
    if not recording.imu or args.imu_tilt == "correct":
        source = "from the IMU" if recording.imu else "given"
        return f"fixed at {frame}, tilt roll {given[0]:.2f}° pitch {given[1]:.2f}° ({source})"
    measured = imu_fixed_tilt(recording, model, args.filter_half_width)
    roll, pitch = np.degrees(measured)
    apart = tilt_difference(model.fixed_tilt, measured)
    if apart > TILT_CHECK_TOLERANCE:
        print(
            f"inertia-id fit-whole-body: warning: the IMU tilts {frame} by roll {roll:.2f}° "
            f"pitch {pitch:.2f}°, {np.degrees(apart):.1f}° from --fixed-tilt (roll "
            f"{given[0]:.2f}° pitch {given[1]:.2f}°); --imu-tilt correct uses the IMU's",
            file=sys.stderr,
        )
    return (
        f"fixed at {frame}, tilt roll {given[0]:.2f}° pitch {given[1]:.2f}° (given; the IMU "
        f"measures roll {roll:.2f}° pitch {pitch:.2f}°, {np.degrees(apart):.2f}° apart)"
    )
