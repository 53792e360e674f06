"""``inertia-id traversaro``: Traversaro et al. 2016's Table I reproduced in simulation
(:mod:`inertia_id_ros.sim.traversaro2016`)."""

from __future__ import annotations

import argparse

from inertia_id_ros.cli.common import add_command, add_seed_option
from inertia_id_ros.errors import InputError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """The ``traversaro`` command on ``subparsers``."""
    traversaro = add_command(
        subparsers,
        "traversaro",
        run,
        help="Traversaro et al. 2016 Table I in simulation (iCub arm, OLS vs manifold vs LMI)",
    )
    add_seed_option(traversaro, "paths and noise")
    traversaro.add_argument(
        "--trials",
        type=int,
        default=1,
        help="also count inconsistent estimates over this many seeds (1)",
    )
    traversaro.add_argument(
        "--noise-scale",
        type=float,
        default=1.0,
        help="F/T noise as a multiple of the simulator's default (1)",
    )


def run(args: argparse.Namespace) -> int:
    """Print the table (and the trials' summary); the exit code."""
    from inertia_id_ros.sim import traversaro2016
    from inertia_id_ros.sim.payload import DEFAULT_WRENCH_NOISE_STD

    if args.trials < 1 or not args.noise_scale >= 0:
        raise InputError("--trials must be >= 1 and --noise-scale >= 0")
    noise = args.noise_scale * DEFAULT_WRENCH_NOISE_STD
    print(traversaro2016.format_table(traversaro2016.run(seed=args.seed, wrench_noise_std=noise)))
    if args.trials > 1:
        summary = traversaro2016.run_trials(args.seed, args.trials, wrench_noise_std=noise)
        print("\n" + traversaro2016.format_trials(summary))
    return 0
