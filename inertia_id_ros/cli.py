"""``inertia-id``: the command line.

Subcommands:
- ``demo``: the live demo (simulator, node and client over DDS); see :mod:`inertia_id_ros.ros.demo`.
"""

from __future__ import annotations

import argparse
import sys


def _demo(args: argparse.Namespace) -> int:
    from inertia_id_ros.ros.demo import run_demo  # ROS only where needed

    return run_demo(motion_sec=args.duration, method=args.method, seed=args.seed)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``inertia-id``."""
    parser = argparse.ArgumentParser(prog="inertia-id", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="live demo: simulated Panda, node and client over DDS")
    demo.add_argument("--duration", type=float, default=30.0, help="seconds of motion (30)")
    demo.add_argument("--method", default="lmi", help="identification method (lmi)")
    demo.add_argument("--seed", type=int, default=0, help="seed of trajectory and noise (0)")
    demo.set_defaults(run=_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code (2 on bad input)."""
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
