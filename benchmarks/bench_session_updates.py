"""The payload node's solver thread without DDS: its session's periodic updates, in one process.

The simulated Panda's joint states and wrenches (1 kHz each) go to the payload mode's session
(the node's defaults, ``window_sec`` 10 s) in batches of 100 ms, each followed by an update, as
the node does at 10 updates a second. After ``--warm`` s of samples (the window full), the
table gives, over the next ``--duration`` s: the CPU per update (``time.process_time``), the same
as a share of one core at real time, the solver's fits per update (the channel weights'
iteration), and, with ``--profile``, the functions that took the most cumulative time
(cProfile, whose overhead inflates the CPU figure; run without it for the timing).

Run: .venv/bin/python benchmarks/bench_session_updates.py [--duration 18] [--warm 12] [--profile]
BLAS is limited to one thread by default (--threads), as in the node.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

from inertia_id_ros.threads import add_threads_option, apply_threads_option


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=18.0, help="timed samples (s)")
    parser.add_argument("--warm", type=float, default=12.0, help="samples before timing (s)")
    parser.add_argument("--profile", action="store_true", help="print cProfile's top 25")
    add_threads_option(parser)
    return parser.parse_args()


def main() -> None:
    args = _parse()
    apply_threads_option(args.threads)
    import numpy as np

    from inertia_id_ros.core.robots import example_robot_urdf
    from inertia_id_ros.modes.parameters import mode_of, settings_from_parameters
    from inertia_id_ros.online import solving
    from inertia_id_ros.sim.payload import PayloadSimulator

    sim = PayloadSimulator.panda(seed=3)
    frame = "panda_link8"
    settings = settings_from_parameters(
        {"urdf_path": str(example_robot_urdf("panda")), "sensor_frame": frame}
    )
    session = mode_of("payload").build_session(settings)
    t = 100.0 + np.arange(int((args.warm + args.duration) * 1000)) / 1000.0
    q, dq, wrench = sim.measure(t, np.random.default_rng(2))
    names = list(sim.kinematics.joint_names)

    def feed(first: int, last: int) -> int:
        """Batches of 100 samples from ``first`` to ``last``, each then an update."""
        updates = 0
        for k in range(first, last, 100):
            batch = slice(k, min(k + 100, last))
            session.add_joint_states(t[batch], names, q[batch], dq[batch], None)
            session.add_wrenches(t[batch], wrench[batch], [frame] * (batch.stop - k))
            session.update(float(t[batch.stop - 1]))
            updates += 1
        return updates

    warm = int(args.warm * 1000)
    feed(0, warm)
    solves = 0
    solve = solving.solve_problem

    def counted(*a, **k):
        nonlocal solves
        solves += 1
        return solve(*a, **k)

    solving.solve_problem = counted  # every online solve goes through it: count them
    profile = cProfile.Profile() if args.profile else None
    started = time.process_time()
    if profile is not None:
        profile.enable()
    updates = feed(warm, t.size)
    if profile is not None:
        profile.disable()
    cpu = time.process_time() - started
    solving.solve_problem = solve
    print("| updates | CPU per update (ms) | share of one core at real time | fits per update |")
    print("|---|---|---|---|")
    print(
        f"| {updates} | {1e3 * cpu / updates:.2f} | {100 * cpu / args.duration:.1f} % | "
        f"{solves / updates:.2f} |"
    )
    if profile is not None:
        pstats.Stats(profile).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
