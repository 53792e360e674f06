"""``inertia-id excite``: design an exciting motion (payload or links) into a trajectory NPZ
(:mod:`inertia_id_ros.motion.design`), or check one (``--check``), against the robot's limits,
a workspace (:mod:`inertia_id_ros.motion.workspace`), obstacles and self-collision
(:mod:`inertia_id_ros.motion.collision`).

Exit codes: 0 the motion is written (or passes the check); 2 bad input; 3 refused: the motion
breaks a limit (stderr names it and by how much), nothing is written."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from inertia_id_ros.cli.common import (
    EXIT_IMPLAUSIBLE,
    add_command,
    add_seed_option,
    add_urdf_option,
    comma_names,
    comma_numbers,
    load_urdf_model,
    write_output,
)
from inertia_id_ros.errors import InputError
from inertia_id_ros.options import DEFAULT_COLLISION_MARGIN, DEFAULT_MAX_ACCELERATION, TARGETS

if TYPE_CHECKING:
    import pinocchio as pin

    from inertia_id_ros.motion.collision import CollisionChecker
    from inertia_id_ros.motion.trajectory import ExcitationTrajectory
    from inertia_id_ros.motion.workspace import WorkspaceChecker


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
        "--time-limit",
        type=float,
        metavar="SEC",
        help="optimisation time (default: 40 payload, 240 links)",
    )
    limits = excite.add_argument_group(
        "limits",
        "What the motion keeps besides the URDF's position and velocity limits. A "
        "design or --check that breaks one is refused (exit 3).",
    )
    limits.add_argument(
        "--max-acceleration",
        type=float,
        default=DEFAULT_MAX_ACCELERATION,
        metavar="A",
        help=f"acceleration limit of every joint (rad/s²; {DEFAULT_MAX_ACCELERATION:g})",
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
        default=DEFAULT_COLLISION_MARGIN,
        metavar="M",
        help="smallest distance between links (--srdf) and to "
        f"obstacles (m; {DEFAULT_COLLISION_MARGIN:g})",
    )


def _refused(message: str) -> int:
    """Report a refusal on stderr; :data:`EXIT_IMPLAUSIBLE`."""
    print(f"inertia-id excite: refused: {message}", file=sys.stderr)
    return EXIT_IMPLAUSIBLE


def _safety(
    args: argparse.Namespace, model: pin.Model
) -> tuple[WorkspaceChecker | None, CollisionChecker | None]:
    """The workspace and collision checkers of ``--workspace``, ``--environment``, ``--srdf``."""
    from inertia_id_ros.motion.collision import CollisionChecker, load_environment
    from inertia_id_ros.motion.workspace import Workspace, WorkspaceChecker

    workspace = (
        None
        if args.workspace is None
        else WorkspaceChecker(model, Workspace.load_yaml(args.workspace))
    )
    obstacles = () if args.environment is None else load_environment(args.environment)
    collision = (
        None
        if args.srdf is None and not obstacles
        else CollisionChecker(args.urdf, args.srdf, obstacles=obstacles)
    )
    return workspace, collision


def _violations(
    trajectory: ExcitationTrajectory,
    workspace: WorkspaceChecker | None,
    collision: CollisionChecker | None,
    margin: float,
) -> list[str]:
    """What ``trajectory`` breaks of the workspace and collision margin, in words."""
    from inertia_id_ros.motion.collision import DEFAULT_CHECK_RATE_HZ

    broken = []
    if workspace is not None:
        violation = workspace.check(trajectory)
        if violation is not None:
            broken.append(str(violation))
    if collision is not None:
        clearance = collision.clearance(trajectory)
        shortfall = clearance.shortfall(margin)
        if shortfall:
            broken.append(shortfall)
        else:
            c = clearance
            print(
                f"collision: smallest distance {1e3 * c.distance:.1f} mm ({c.pair[0]} and "
                f"{c.pair[1]} at {c.time:.2f} s; convex hulls checked at "
                f"{DEFAULT_CHECK_RATE_HZ:g} Hz)"
            )
    return broken


def _check(args: argparse.Namespace) -> int:
    """``--check``: the trajectory file against the limits; the exit code."""
    from inertia_id_ros.motion.design import motion_limits, torque_excess
    from inertia_id_ros.motion.trajectory import ExcitationTrajectory

    if any(getattr(args, name) is not None for name in ("target", "duration", "out")):
        raise InputError("--check takes no --target, --duration or --out")
    trajectory = ExcitationTrajectory.load_npz(args.check)
    model = load_urdf_model(args.urdf)
    limits = motion_limits(
        model,
        trajectory.joint_names,
        position_margin=0.0,
        max_acceleration=args.max_acceleration,
        torque_limits=args.torque_limits,
    )
    units = {"position": "rad", "velocity": "rad/s", "acceleration": "rad/s²"}
    broken = [
        f"the URDF's {name} limit by {excess:.4g} {units[name]}"
        if name != "acceleration"
        else f"--max-acceleration by {excess:.4g} {units[name]}"
        for name, excess in limits.violations(trajectory).items()
        if excess > 0.0
    ]
    torque = torque_excess(model, trajectory, limits)  # 0 without --torque-limits
    if torque > 1.0:
        broken.append(
            f"the URDF's effort limit by {100.0 * (torque - 1.0):.1f} % (the URDF links' torques)"
        )
    broken += _violations(trajectory, *_safety(args, model), args.collision_margin)
    if broken:
        return _refused(f"{args.check} exceeds " + "; ".join(broken))
    print(
        f"{args.check}: {trajectory.duration:g} s of {trajectory.n_joints} joints within the "
        "limits checked"
    )
    return 0


def run(args: argparse.Namespace) -> int:
    """Design the motion and write it (or check one); the exit code."""
    if args.check is not None:
        return _check(args)
    import numpy as np

    from inertia_id_ros.motion.design import design_excitation, motion_limits
    from inertia_id_ros.offline.information import recording_information

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
    joints = args.joints
    if (args.target == "payload") != (args.sensor_frame is not None):
        raise InputError("--sensor-frame is needed with --target payload and only then")
    start = None if args.start is None else np.array(args.start)
    model = load_urdf_model(args.urdf)
    workspace, collision = _safety(args, model)
    limits = motion_limits(
        model, joints, max_acceleration=args.max_acceleration, torque_limits=args.torque_limits
    )
    print(f"limits used (position margin {limits.position_margin:g} rad):")
    print("\n".join("  " + line for line in limits.table()))
    prior = (
        None
        if args.from_recording is None
        else recording_information(
            args.from_recording, model, joints, args.target, sensor_frame=args.sensor_frame
        )
    )
    result = design_excitation(
        model,
        joints,
        args.target,
        args.duration,
        sensor_frame=args.sensor_frame,
        start=start,
        max_acceleration=args.max_acceleration,
        seed=args.seed,
        prior_information=prior,
        progress=print,
        time_limit=args.time_limit,
        torque_limits=args.torque_limits,
        collision=collision,
        collision_margin=args.collision_margin,
    )
    trajectory = result.trajectory
    broken = _violations(trajectory, workspace, collision, args.collision_margin)
    if broken:
        return _refused(f"the designed motion exceeds {'; '.join(broken)}; nothing written")
    write_output(args.out, trajectory.save_npz)
    print(
        f"achieved: {result.objective_name} {result.objective:.4g} (random start "
        f"{result.stats.initial_objective:.4g}"
        + (f", prior: the information in {args.from_recording}" if prior is not None else "")
        + f"), design time {result.stats.seconds:.1f} s"
    )
    print(
        f"wrote {args.out}: {trajectory.t.size} samples of {len(joints)} joints over "
        f"{trajectory.duration:g} s ({(trajectory.t.size - 1) / trajectory.duration:g} Hz)"
    )
    return 0
