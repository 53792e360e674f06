"""Start-up time of ``inertia-id``: ``--help``, a command's ``--help`` and an argument error,
this checkout against an older commit (by default 40759c3, the single-module cli.py).

The older commit's ``inertia_id_ros`` is extracted with ``git archive`` into a temporary
directory. Each run is a fresh interpreter (this one, ``sys.executable``) started in that
temporary directory with ``PYTHONPATH`` set to the version's tree, running what the console
script runs: ``from inertia_id_ros.cli import main; sys.exit(main(argv))``. The two versions
alternate run by run, so that the load of a shared machine falls on both alike; the table gives
the median wall time of each (interpreter start-up included), their ratio and the 0.3 s target.

Run: .venv/bin/python benchmarks/bench_cli_startup.py [--runs N] [--old REV]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
TARGET_S = 0.3
"""Target wall time (s) of ``--help`` and argument errors (issue 22)."""
CASES = ((("--help",), 0), (("fit-links", "--help"), 0), (("fit-links", "--no-such-option"), 2))
"""The command lines timed and their expected exit codes."""
RUN_MAIN = "import sys; from inertia_id_ros.cli import main; sys.exit(main(sys.argv[1:]))"


def extract_package(revision: str, directory: Path) -> None:
    """``inertia_id_ros`` as of ``revision`` into ``directory``."""
    archive = subprocess.run(
        ["git", "archive", revision, "inertia_id_ros"],
        cwd=REPOSITORY,
        capture_output=True,
        check=True,
    ).stdout
    with tempfile.TemporaryFile() as file:
        file.write(archive)
        file.seek(0)
        with tarfile.open(fileobj=file) as tar:
            tar.extractall(directory, filter="data")


def time_run(tree: Path, argv: tuple[str, ...], expected_code: int, cwd: Path) -> float:
    """Wall time (s) of one ``inertia-id argv`` from the package in ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-c", RUN_MAIN, *argv], cwd=cwd, env=env, capture_output=True, text=True
    )
    elapsed = time.perf_counter() - started
    if completed.returncode != expected_code:
        raise RuntimeError(
            f"{tree}: inertia-id {' '.join(argv)} exited {completed.returncode}, "
            f"expected {expected_code}: {completed.stderr}"
        )
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="runs per version and case (15)")
    parser.add_argument("--old", default="40759c3", help="the commit to compare with (40759c3)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        old_tree = Path(temporary) / "old"
        extract_package(args.old, old_tree)
        trees = {"old": old_tree, "new": REPOSITORY}
        print(
            f"{args.runs} runs per version and case, alternating; {os.cpu_count()} CPUs, "
            f"load average {os.getloadavg()[0]:.2f}; old: {args.old}, new: the checkout"
        )
        print(f"{'inertia-id ...':<32}{'old (s)':>9}{'new (s)':>9}{'old/new':>9}{'target':>15}")
        for argv, expected_code in CASES:
            times: dict[str, list[float]] = {name: [] for name in trees}
            for _ in range(args.runs):
                for name, tree in trees.items():
                    times[name].append(time_run(tree, argv, expected_code, Path(temporary)))
            old, new = (statistics.median(times[name]) for name in trees)
            verdict = "met" if new <= TARGET_S else "MISSED"
            print(
                f"{' '.join(argv):<32}{old:9.3f}{new:9.3f}{old / new:8.1f}x"
                f"{f'{verdict} ({TARGET_S:g} s)':>15}"
            )


if __name__ == "__main__":
    main()
