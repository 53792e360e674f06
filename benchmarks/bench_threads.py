"""BLAS/OpenMP threads of the CLI: the default (one thread, :mod:`inertia_id_ros.threads`) against
other settings, with the machine quiet and under a load of busy processes.

Each setting runs ``inertia-id fit-whole-body`` (lmi and pointmass) on 60 s of the simulated iCub
(``inertia-id sim-whole-body --robot icub``), in turn with the others (A B C A B C ...), so a drift
in the machine's speed reaches all settings alike. The figure is the solve time the command prints
(``solve X s``); the table gives its median per setting and the ratio of the default to the best
setting. "threads = cores" is what users got before the CLI chose its threads (the libraries'
default). Environment variables of the calling shell that set threads are removed for every run.

Run: ``.venv/bin/python benchmarks/bench_threads.py [--load 2] [--repeats 5]``
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.threads import LIBRARY_VARIABLES, THREADS_VARIABLE

CLI = [str(Path(sys.executable).parent / "inertia-id")]
"""The console script as users run it."""
SOLVE = re.compile(r"solve (\d+\.\d+) s")


def settings() -> dict[str, dict[str, str]]:
    """Setting name -> environment variables added for the run."""
    cores = len(os.sched_getaffinity(0))
    return {
        "default": {},
        "threads = 1": {THREADS_VARIABLE: "1"},
        f"threads = cores ({cores})": {THREADS_VARIABLE: str(cores)},
    }


def clean_environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in (*LIBRARY_VARIABLES, THREADS_VARIABLE)}


def solve_seconds(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(solve time the command prints, wall time) of one run, s."""
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr}")
    return float(SOLVE.search(done.stdout).group(1)), wall


def busy_processes(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--load", type=int, default=2, help="busy processes beside the runs (2)")
    parser.add_argument("--repeats", type=int, default=5, help="runs per setting (5)")
    parser.add_argument("--methods", default="lmi,pointmass", help="fit-whole-body methods")
    args = parser.parse_args()
    env = clean_environment()
    urdf = str(example_robot_urdf("icub"))
    with tempfile.TemporaryDirectory() as folder:
        data = str(Path(folder) / "icub.npz")
        subprocess.run(
            [*CLI, "sim-whole-body", data, "--robot", "icub", "--duration", "60"],
            env=env,
            check=True,
            capture_output=True,
        )
        load = busy_processes(args.load)
        try:
            print(
                f"{len(os.sched_getaffinity(0))} cores, {args.load} busy processes, "
                f"{args.repeats} runs per setting; fit-whole-body on 60 s of the iCub"
            )
            print(
                f"{'method':<10}{'setting':<22}{'solve median (min-max), s':>28}"
                f"{'wall median, s':>16}"
            )
            for method in args.methods.split(","):
                argv = [*CLI, "fit-whole-body", "--urdf", urdf, "--data", data, "--method", method]
                times: dict[str, list[tuple[float, float]]] = {name: [] for name in settings()}
                for _ in range(args.repeats):
                    for name, extra in settings().items():
                        times[name].append(solve_seconds(argv, {**env, **extra}))
                medians = {
                    name: statistics.median(s for s, _ in runs) for name, runs in times.items()
                }
                for name, runs in times.items():
                    solves = [s for s, _ in runs]
                    print(
                        f"{method:<10}{name:<22}{medians[name]:>12.3f} "
                        f"({min(solves):.3f}-{max(solves):.3f})"
                        f"{statistics.median(w for _, w in runs):>16.2f}"
                    )
                best = min(medians.values())
                print(
                    f"{method:<10}{'default / best':<22}{medians['default'] / best:>12.2f}"
                    f"   (target <= 1.2)"
                )
        finally:
            for process in load:
                process.kill()


if __name__ == "__main__":
    main()
