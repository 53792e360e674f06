"""``inertia-id excite``: design an exciting motion (payload or links) into a trajectory NPZ
(:func:`inertia_id_ros.jobs.excite.design`), or check one (``--check``,
:func:`inertia_id_ros.jobs.excite.check`), against the robot's limits, a workspace, obstacles and
self-collision.

Exit codes: 0 the motion is written (or passes the check); 2 bad input; 3 refused: the motion
breaks a limit (stderr names it and by how much), nothing is written."""

from __future__ import annotations

import argparse
import sys

from inertia_id_ros.cli.common import (
    EXIT_IMPLAUSIBLE,
    add_command,
    add_seed_option,
    add_urdf_option,
    comma_names,
    comma_numbers,
    write_output,
)
from inertia_id_ros.errors import InputError
from inertia_id_ros.jobs.excite import DesignOptions, LimitOptions
from inertia_id_ros.options import DESIGN_TIME_LIMITS, TARGETS


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """The ``excite`` command on ``subparsers``."""
    excite = add_command(
        subparsers,
        "excite",
        run,
        help="design an exciting motion for identifying a payload or the links (rest to rest, "
        "within the limits), or check one; exit 3 when it breaks a limit",
        description="Design an exciting motion, or check one (--check), against the URDF's "
        "limits, a workspace, obstacles and self-collision. Exit codes: 0 written "
        "(or passed), 2 bad input, 3 refused (stderr names the limit and by how "
        "much; nothing is written).",
    )
    add_urdf_option(excite)
    _add_design_options(excite)
    _add_limit_options(excite)


def _add_design_options(excite: argparse.ArgumentParser) -> None:
    """The options of a design (:class:`~inertia_id_ros.jobs.excite.DesignOptions`) and
    ``--check``."""
    excite.add_argument(
        "--joints",
        type=comma_names,
        metavar="JOINT,...",
        help="joints to move, in URDF order (to design)",
    )
    excite.add_argument(
        "--target",
        choices=TARGETS,
        help="what the motion identifies: the payload beyond --sensor-frame, or "
        "the links (with joint friction and armature)",
    )
    excite.add_argument("--sensor-frame", help="URDF frame of the F/T sensor (--target payload)")
    excite.add_argument("--duration", type=float, metavar="SEC", help="seconds of motion")
    excite.add_argument(
        "--out",
        metavar="TRAJ.npz",
        help="trajectory to write (keys t, joint_names, q, dq, ddq; 100 Hz)",
    )
    excite.add_argument(
        "--check",
        metavar="TRAJ.npz",
        help="check this trajectory instead of designing one, against the limits below",
    )
    excite.add_argument(
        "--start",
        metavar="Q1,...",
        type=comma_numbers,
        help="start and end pose (rad; default: the middle of the limits)",
    )
    add_seed_option(excite, "the initial motion")
    excite.add_argument(
        "--from",
        dest="from_recording",
        metavar="RECORDING",
        help="recording (.npz/.csv) whose information the motion adds to",
    )
    excite.add_argument(
        "--coupling",
        metavar="FILE",
        help="YAML of a transmission's coupling, {joints: [...], matrix: [[...]]} (as a chain "
        "config's coupling): --target links identifies its coupled motors' rotor inertia and "
        "friction too",
    )
    defaults = ", ".join(f"{seconds:g} {target}" for target, seconds in DESIGN_TIME_LIMITS.items())
    excite.add_argument(
        "--time-limit",
        type=float,
        default=DesignOptions.time_limit,
        metavar="SEC",
        help=f"optimisation time (default: {defaults})",
    )


def _add_limit_options(excite: argparse.ArgumentParser) -> None:
    """The limits group (:class:`~inertia_id_ros.jobs.excite.LimitOptions`)."""
    limits = excite.add_argument_group(
        "limits",
        "What the motion keeps besides the URDF's position and velocity limits. A "
        "design or --check that breaks one is refused (exit 3).",
    )
    limits.add_argument(
        "--max-acceleration",
        type=float,
        default=LimitOptions.max_acceleration,
        metavar="A",
        help=f"acceleration limit of every joint (rad/s²; {LimitOptions.max_acceleration:g})",
    )
    limits.add_argument(
        "--torque-limits",
        action="store_true",
        help="also keep the URDF links' torques within the effort limits",
    )
    limits.add_argument(
        "--workspace",
        metavar="FILE",
        help="YAML of Cartesian limits of frames (boxes, half-spaces, spheres) "
        "the motion must keep",
    )
    limits.add_argument(
        "--srdf",
        help="SRDF of the robot: keep the self-collision distance of "
        "the pairs it leaves (URDF collision geometry) >= "
        "--collision-margin",
    )
    limits.add_argument(
        "--environment",
        metavar="FILE",
        help="YAML of obstacles (boxes, half-spaces, spheres) the links keep "
        ">= --collision-margin from",
    )
    limits.add_argument(
        "--collision-margin",
        type=float,
        default=LimitOptions.collision_margin,
        metavar="M",
        help="smallest distance between links (--srdf) and to "
        f"obstacles (m; {LimitOptions.collision_margin:g})",
    )


def run(args: argparse.Namespace) -> int:
    """Design the motion and write it (or check one); the exit code."""
    from inertia_id_ros.jobs.excite import check, design

    limits = LimitOptions(
        max_acceleration=args.max_acceleration,
        torque_limits=args.torque_limits,
        workspace=args.workspace,
        srdf=args.srdf,
        environment=args.environment,
        collision_margin=args.collision_margin,
    )
    if args.check is not None:
        if any(
            getattr(args, name) is not None for name in ("target", "duration", "out", "coupling")
        ):  # a coupling shapes what a design identifies; a check is of limits only
            raise InputError("--check takes no --target, --duration, --out or --coupling")
        checked = check(args.urdf, args.check, limits)
        if checked.summary:
            print("\n".join(checked.summary))
        return _refused(checked.verdict) if checked.refused else 0
    missing = [
        option
        for option, value in (
            ("--joints", args.joints),
            ("--target", args.target),
            ("--duration", args.duration),
            ("--out", args.out),
        )
        if value is None
    ]
    if missing:
        raise InputError(f"designing a motion needs {', '.join(missing)} (or --check TRAJ.npz)")
    options = DesignOptions(
        tuple(args.joints),
        args.target,
        args.duration,
        sensor_frame=args.sensor_frame,
        start=None if args.start is None else tuple(args.start),
        seed=args.seed,
        prior_recording=args.from_recording,
        time_limit=args.time_limit,
        limits=limits,
        coupling=args.coupling,
    )
    result = design(args.urdf, options, progress=print)
    if result.refused:
        return _refused(f"{result.verdict}; nothing written")
    trajectory = result.design.trajectory
    write_output(args.out, trajectory.save_npz)
    print("\n".join(result.summary))
    print(
        f"wrote {args.out}: {trajectory.t.size} samples of {trajectory.n_joints} joints over "
        f"{trajectory.duration:g} s ({(trajectory.t.size - 1) / trajectory.duration:g} Hz)"
    )
    return 0


def _refused(message: str) -> int:
    """Report a refusal on stderr; :data:`EXIT_IMPLAUSIBLE`."""
    print(f"inertia-id excite: refused: {message}", file=sys.stderr)
    return EXIT_IMPLAUSIBLE
