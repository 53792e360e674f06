"""``inertia-id record-sim``: a bag of the simulated Panda (joint states, wrenches, URDF) to
replay, written directly (no DDS)."""

from __future__ import annotations

import argparse

from inertia_id_ros.cli.common import write_json
from inertia_id_ros.errors import InputError
from inertia_id_ros.options import DEFAULT_JOINT_STATES_TOPIC, DEFAULT_WRENCH_TOPIC


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """The ``record-sim`` command on ``subparsers``."""
    record = subparsers.add_parser(
        "record-sim", help="write a ROS 2 bag of the simulated Panda (no DDS) to replay")
    record.add_argument("out", help="bag to create (a rosbag2 directory; must not exist)")
    record.add_argument("--duration", type=float, default=20.0, help="seconds of motion (20)")
    record.add_argument("--rate", type=float, default=1000.0, metavar="HZ",
                        help="joint-state and wrench rate (1000)")
    record.add_argument("--seed", type=int, default=0, help="seed of trajectory and noise (0)")
    record.add_argument("--storage", default="mcap", choices=("mcap", "sqlite3"),
                        help="bag storage (mcap)")
    record.add_argument("--grasp-at", type=float, metavar="SEC",
                        help="switch to another payload (a 2.3 kg box) SEC s into the motion")
    record.add_argument("--truth-json", metavar="OUT",
                        help="write the simulated (final) payload as a result JSON to OUT")
    record.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Write the bag (and the truth); the exit code."""
    from inertia_id_ros.io.export import body_json
    from inertia_id_ros.io.replay import record_simulation
    from inertia_id_ros.sim.payload import grasped_payload_theta

    try:
        sim = record_simulation(args.out, args.duration, args.rate, args.seed, args.storage,
                                payload_change_at=args.grasp_at,
                                changed_payload=(None if args.grasp_at is None
                                                 else grasped_payload_theta()))
    except ValueError as e:
        raise InputError(str(e)) from None
    final = sim.true_theta if args.grasp_at is None else grasped_payload_theta()
    if args.truth_json:
        write_json(args.truth_json, {
            "method": "truth", "bodies": [body_json("payload", sim.sensor_frame, final)],
            "sensor_offset": sim.true_offset.tolist()})
    n = int(round(args.duration * args.rate))
    print(f"wrote {args.out} ({args.storage}): {args.duration:g} s of the simulated Panda at "
          f"{args.rate:g} Hz, {n} joint states on {DEFAULT_JOINT_STATES_TOPIC}, {n} wrenches on "
          f"{DEFAULT_WRENCH_TOPIC} in {sim.sensor_frame!r}, the URDF on /robot_description; "
          f"payload {sim.true_theta[0]:g} kg"
          + ("" if args.grasp_at is None else
             f", {final[0]:g} kg from {args.grasp_at:g} s on (a grasp)")
          + (f"; truth (the final payload) in {args.truth_json}" if args.truth_json else ""))
    return 0
