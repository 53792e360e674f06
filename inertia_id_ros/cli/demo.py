"""``inertia-id demo``: the live demo (simulator, node and client over DDS); see
:mod:`inertia_id_ros.ros.demo`."""

from __future__ import annotations

import argparse
import math
import sys
from contextlib import nullcontext

from inertia_id_ros.cli.common import add_command, add_seed_option
from inertia_id_ros.errors import ExcitationRefused, InputError, StartupError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """The ``demo`` command on ``subparsers``."""
    demo = add_command(
        subparsers, "demo", run, help="live demo: simulated Panda, node and client over DDS"
    )
    demo.add_argument(
        "--duration", type=float, default=0.0, help="seconds of motion (30; --excite: 15)"
    )
    demo.add_argument("--method", default="lmi", help="identification method (lmi)")
    add_seed_option(demo, "trajectory and noise")
    demo.add_argument(
        "--secure",
        action="store_true",
        help="run every process under DDS-Security (a new keystore in a temporary "
        "directory; the client as the operator enclave)",
    )
    wizard = demo.add_argument_group(
        "load-identification wizard",
        "The robot at rest, one ~/excite call: ramp in, motion, ramp out, identify on the "
        "motion's samples.",
    )
    wizard.add_argument("--excite", action="store_true", help="run the wizard")
    wizard.add_argument(
        "--trajectory",
        default="",
        metavar="TRAJ.npz",
        help="a trajectory from 'inertia-id excite' instead of a motion designed on the spot",
    )
    wizard.add_argument(
        "--speed-scale",
        type=float,
        default=1.0,
        metavar="S",
        help="fraction of the motion's speed, (0, 1] (1)",
    )


def run(args: argparse.Namespace) -> int:
    """Run the demo; its exit code."""
    from inertia_id_ros.motion.run import check_speed_scale

    if not args.excite and (args.trajectory or args.speed_scale != 1.0):
        raise InputError("--trajectory and --speed-scale apply to --excite")
    if not (math.isfinite(args.duration) and args.duration >= 0.0):
        raise InputError(f"--duration must be >= 0 s (0: the default), got {args.duration}")
    try:
        check_speed_scale(args.speed_scale)
    except ExcitationRefused as e:
        raise InputError(f"--speed-scale: {e}") from None
    from inertia_id_ros.ros.demo import run_demo, run_excite_demo  # ROS only where needed
    from inertia_id_ros.ros.keystore import temporary_keystore

    with temporary_keystore() if args.secure else nullcontext() as keystore:
        try:
            if args.excite:
                return run_excite_demo(
                    duration=args.duration or 15.0,
                    speed_scale=args.speed_scale,
                    trajectory_file=args.trajectory,
                    method=args.method,
                    seed=args.seed,
                    keystore=keystore,
                )
            return run_demo(
                motion_sec=args.duration or 30.0,
                method=args.method,
                seed=args.seed,
                keystore=keystore,
            )
        except StartupError as error:
            print(f"inertia-id demo: {error}", file=sys.stderr)
            return 1
