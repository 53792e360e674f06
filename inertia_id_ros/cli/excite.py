"""``inertia-id excite``: design an exciting motion (payload or links) into a trajectory NPZ
(:mod:`inertia_id_ros.motion.design`)."""

from __future__ import annotations

import argparse

from inertia_id_ros.cli.common import load_urdf_model, write_output
from inertia_id_ros.errors import FrameNotFound, InputError, JointNotFound, ProblemError
from inertia_id_ros.options import DEFAULT_COLLISION_MARGIN, DEFAULT_MAX_ACCELERATION, TARGETS


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """The ``excite`` command on ``subparsers``."""
    excite = subparsers.add_parser(
        "excite",
        help="design an exciting motion for identifying a payload or the links (rest to rest, "
             "within the limits)")
    excite.add_argument("--urdf", required=True, help="URDF file of the robot")
    excite.add_argument("--joints", required=True,
                        help="comma-separated joints to move, in URDF order")
    excite.add_argument("--target", required=True, choices=TARGETS,
                        help="what the motion identifies: the payload beyond --sensor-frame, or "
                             "the links (with joint friction and armature)")
    excite.add_argument("--sensor-frame", help="URDF frame of the F/T sensor (--target payload)")
    excite.add_argument("--duration", type=float, required=True, metavar="SEC",
                        help="seconds of motion")
    excite.add_argument("--out", required=True, metavar="TRAJ.npz",
                        help="trajectory to write (keys t, joint_names, q, dq, ddq; 100 Hz)")
    excite.add_argument("--start", metavar="Q1,...",
                        help="start and end pose (rad; default: the middle of the limits)")
    excite.add_argument("--max-acceleration", type=float, default=DEFAULT_MAX_ACCELERATION,
                        metavar="A", help="acceleration limit of every joint "
                                          f"(rad/s²; {DEFAULT_MAX_ACCELERATION:g})")
    excite.add_argument("--seed", type=int, default=0, help="seed of the initial motion (0)")
    excite.add_argument("--from", dest="from_recording", metavar="RECORDING",
                        help="recording (.npz/.csv) whose information the motion adds to")
    excite.add_argument("--torque-limits", action="store_true",
                        help="also keep the URDF links' torques within the effort limits")
    excite.add_argument("--srdf", help="SRDF of the robot: keep the self-collision distance of "
                                       "the pairs it leaves (URDF collision geometry) >= "
                                       "--collision-margin")
    excite.add_argument("--collision-margin", type=float, default=DEFAULT_COLLISION_MARGIN,
                        metavar="M", help="smallest self-collision distance with --srdf "
                                          f"(m; {DEFAULT_COLLISION_MARGIN:g})")
    excite.add_argument("--time-limit", type=float, metavar="SEC",
                        help="optimisation time (default: 40 payload, 240 links)")
    excite.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Design the motion and write it; the exit code."""
    import numpy as np

    from inertia_id_ros.io.information import recording_information
    from inertia_id_ros.motion.collision import DEFAULT_CHECK_RATE_HZ, CollisionChecker
    from inertia_id_ros.motion.design import design_excitation, motion_limits

    joints = [name.strip() for name in args.joints.split(",") if name.strip()]
    if not joints or len(set(joints)) != len(joints):
        raise InputError(f"--joints must list distinct joints, got {args.joints!r}")
    if (args.target == "payload") != (args.sensor_frame is not None):
        raise InputError("--sensor-frame is needed with --target payload and only then")
    try:
        start = (None if args.start is None
                 else np.array([float(v) for v in args.start.split(",")]))
    except ValueError:
        raise InputError(f"--start must be comma-separated numbers (rad), got {args.start!r}") \
            from None
    model = load_urdf_model(args.urdf)
    try:
        limits = motion_limits(model, joints, max_acceleration=args.max_acceleration,
                               torque_limits=args.torque_limits)
        collision = (None if args.srdf is None
                     else CollisionChecker(args.urdf, args.srdf))
        print(f"limits used (position margin {limits.position_margin:g} rad):")
        print("\n".join("  " + line for line in limits.table()))
        prior = None if args.from_recording is None else recording_information(
            args.from_recording, model, joints, args.target, sensor_frame=args.sensor_frame)
        result = design_excitation(model, joints, args.target, args.duration,
                                   sensor_frame=args.sensor_frame, start=start,
                                   max_acceleration=args.max_acceleration, seed=args.seed,
                                   prior_information=prior, progress=print,
                                   time_limit=args.time_limit, torque_limits=args.torque_limits,
                                   collision=collision, collision_margin=args.collision_margin)
    except (ProblemError, JointNotFound, FrameNotFound) as e:
        raise InputError(str(e)) from None
    trajectory = result.trajectory
    if result.clearance is not None:
        c = result.clearance
        print(f"self-collision: smallest distance {1e3 * c.distance:.1f} mm ({c.pair[0]} and "
              f"{c.pair[1]} at {c.time:.2f} s; convex hulls checked at "
              f"{DEFAULT_CHECK_RATE_HZ:g} Hz)")
    write_output(args.out, trajectory.save_npz)
    print(f"achieved: {result.objective_name} {result.objective:.4g} (random start "
          f"{result.stats.initial_objective:.4g}"
          + (f", prior: the information in {args.from_recording}" if prior is not None else "")
          + f"), design time {result.stats.seconds:.1f} s")
    print(f"wrote {args.out}: {trajectory.t.size} samples of {len(joints)} joints over "
          f"{trajectory.duration:g} s ({(trajectory.t.size - 1) / trajectory.duration:g} Hz)")
    return 0
