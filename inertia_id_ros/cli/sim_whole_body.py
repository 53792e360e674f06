"""``inertia-id sim-whole-body``: an NPZ of a simulated floating-base robot (iCub, Go1; iCub
suspended, on a stand or balancing on one sole) with its truth
(:mod:`inertia_id_ros.sim.whole_body_simulator`), or a ROS 2 bag of it to replay (``--bag``)."""

from __future__ import annotations

import argparse

from inertia_id_ros.cli.common import (
    add_command,
    add_seed_option,
    add_storage_option,
    text_writer,
    write_output,
)
from inertia_id_ros.errors import InputError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """The ``sim-whole-body`` command on ``subparsers``."""
    whole = add_command(
        subparsers,
        "sim-whole-body",
        run,
        help="write an NPZ of a simulated floating-base robot (joints, IMU, F/T sensors; truth "
        "included)",
    )
    whole.add_argument("out", nargs="?", help="NPZ file to write")
    whole.add_argument(
        "--bag",
        metavar="OUT",
        help="also (or only) write a ROS 2 bag (a new directory) with the "
        "simulator node's topics, to replay (inertia-id replay "
        "--params-file config/<robot>_whole_body.yaml)",
    )
    add_storage_option(whole, "--bag: storage")
    whole.add_argument(
        "--robot",
        default="icub",
        choices=("icub", "go1", "icub_suspended", "icub_fixed", "icub_stance"),
        help="icub: on one sole, six internal F/T sensors; go1: four foot "
        "contacts; icub_suspended: hanging from a crane F/T sensor (icub); "
        "icub_fixed: on a stand (fit with --base fixed); icub_stance: on "
        "its left sole on a tilted floor, leg F/T sensors only, the ground's "
        "wrench not measured (fit with --base fixed --fixed-frame l_sole)",
    )
    whole.add_argument("--duration", type=float, default=60.0, help="seconds of motion (60)")
    whole.add_argument("--rate", type=float, default=200.0, metavar="HZ", help="sample rate (200)")
    add_seed_option(whole, "truth, motion and noise")
    whole.add_argument("--with-ddq", action="store_true", help="also write the true ddq")
    whole.add_argument("--with-effort", action="store_true", help="also write joint efforts")
    whole.add_argument(
        "--ft-drift",
        action="append",
        metavar="FRAME",
        help="NPZ: the F/T sensor at FRAME reads through a drifted factory calibration (gains "
        "0.6-0.9, the first named sensor's fx 2.65, cross-coupling 3 %%, offsets up to 300 N; "
        "the truth in true_ft_calibration*); repeat per sensor",
    )
    whole.add_argument("--truth-urdf", metavar="OUT", help="write the true robot's URDF to OUT")
    whole.add_argument(
        "--urdf-out",
        metavar="OUT",
        help="write the robot's URDF (the one the fits take: the true robot's differs) to OUT",
    )


def run(args: argparse.Namespace) -> int:
    """Write the NPZ and/or the bag; the exit code."""
    from inertia_id_ros.sim.whole_body_robots import ROBOTS
    from inertia_id_ros.sim.whole_body_simulator import write_recording

    if not (args.duration > 0 and args.rate > 0):
        raise InputError(f"--duration and --rate must be > 0, got {args.duration}, {args.rate}")
    if args.out is None and args.bag is None:
        raise InputError("give the NPZ to write, --bag OUT, or both")
    sim = ROBOTS[args.robot](seed=args.seed)
    written = []
    if args.out is not None:
        data = write_recording(
            args.out,
            sim,
            args.duration,
            args.rate,
            args.with_ddq,
            args.with_effort,
            drift=tuple(args.ft_drift or ()),
        )
        written.append(f"{args.out} ({data['true_theta'].shape[0]} true links)")
    if args.bag is not None:
        from inertia_id_ros.sim.recorders import record_whole_body

        try:
            topics = record_whole_body(
                args.bag,
                sim,
                args.duration,
                args.rate,
                args.seed,
                args.storage,
                with_effort=args.with_effort,
            )
        except ValueError as e:
            raise InputError(str(e)) from None
        written.append(
            f"{args.bag} ({args.storage}: /joint_states, /imu, "
            f"{', '.join(topics)}, /robot_description)"
        )
    for path, xml in ((args.truth_urdf, sim.true_xml), (args.urdf_out, sim.cad_xml)):
        if path and xml is not None:
            write_output(path, text_writer(xml))
    print(
        f"wrote {' and '.join(written)}: {args.duration:g} s of the simulated {args.robot} at "
        f"{args.rate:g} Hz, {len(sim.joint_names)} joints, F/T sensors "
        f"{', '.join(f'{f} ({k})' for f, k in sim.ft_sensors)}, IMU at {sim.imu_frame}"
    )
    return 0
