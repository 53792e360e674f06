"""Benchmark: a simulated fleet identified on Dask, its drift detected (issue 34's acceptance).

Data (:mod:`inertia_id_ros.fleet.simulate`): ``--robots`` arms (Panda and UR5, F/T robots and
joint-torque robots alternating) x ``--runs`` nightly runs of ``--duration`` s at 100 Hz;
``--drifting`` of them drift from a run in the second half (an F/T robot's force offset along z
by 0.008 N a run, a torque robot's joint's viscous friction by 0.01 N m s/rad a run); every third
swaps tools halfway; ``--faults`` runs of steady robots are corrupt, truncated or in degrees.

1. Throughput: the same ``--subset`` runs (the first runs of every robot) identified with 1, then
   2 local worker processes, runs per second from the first task submitted; the ratio.
2. Detection: the whole fleet on 2 workers into SQLite (the coordinating process's resident
   memory sampled every 100 runs), then ``fleet drift``: each drifting robot flagged with its
   parameter, the run where the planted drift passes 3 standard errors of a run (``crossing``)
   and the run of the alarm (``delay`` = alarm - crossing, target <= 3); alarms on robots without
   drift (target 0); the false-alarm rate per drift-free history (measured: alarms on steady
   robots' histories over the histories tested; Monte Carlo: the test on unit-normal histories).
3. The per-run cost by mode, and a 100-robot fleet's night projected onto clusters.

Run: .venv/bin/python benchmarks/bench_fleet.py [--robots 50] [--runs 20] [--drifting 10]
     [--faults 6] [--subset 120] [--repeats 1] [--throughput-only]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import psutil
import yaml

from inertia_id_ros.fleet.drift import DriftOptions, detect_drift, false_alarm_rate
from inertia_id_ros.fleet.engine import EngineOptions, FleetProgress, run_fleet
from inertia_id_ros.fleet.manifest import read_manifest
from inertia_id_ros.fleet.simulate import FleetPlan, plan_fleet, simulate_fleet
from inertia_id_ros.fleet.store import open_store
from inertia_id_ros.fleet.tasks import OK


def subset_manifest(manifest: Path, runs: int) -> Path:
    """A manifest of the first runs of every robot, ``runs`` in all (about)."""
    document = yaml.safe_load(manifest.read_text())
    per_robot = max(1, runs // len(document["robots"]))
    for robot in document["robots"]:
        robot["runs"] = robot["runs"][:per_robot]
    path = manifest.with_name("subset.yaml")
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def throughput(manifest: Path, folder: Path, repeats: int) -> dict[int, tuple[int, float, float]]:
    """``{workers: (runs, seconds, run seconds)}`` for 1 and 2 local workers on ``manifest``,
    alternated ``repeats`` times (summed): the runs, the wall time from the first task submitted,
    the sum of the runs' own times (more than the wall time: runs in parallel)."""
    found = {1: (0, 0.0, 0.0), 2: (0, 0.0, 0.0)}
    coordinator = psutil.Process()
    for repeat in range(repeats):
        for workers in (1, 2):
            cpu = sum(coordinator.cpu_times()[:2])
            with open_store(str(folder / f"throughput{workers}-{repeat}.sqlite")) as store:
                done = run_fleet(read_manifest(manifest), store, EngineOptions(workers=workers))
            cpu = sum(coordinator.cpu_times()[:2]) - cpu
            runs, wall, own = found[workers]
            found[workers] = (
                runs + done.progress.done,
                wall + done.progress.elapsed,
                own + done.run_seconds,
            )
            print(
                f"  {workers} worker(s): {done.progress.done} runs in {done.progress.elapsed:.1f} "
                f"s, load {os.getloadavg()[0]:.1f}, coordinator CPU {cpu:.1f} s (its cluster's "
                "start and stop included)",
                file=sys.stderr,
            )
    return found


def identify_all(manifest: Path, store_path: Path) -> list[tuple[int, float]]:
    """Identify the fleet on 2 workers; ``(runs done, coordinator RSS MB)`` every 100 runs."""
    process = psutil.Process()
    memory: list[tuple[int, float]] = []

    def sample(progress: FleetProgress) -> None:
        if progress.done % 100 == 0:
            memory.append((progress.done, process.memory_info().rss / 2**20))
            print(f"  {progress.line()}", file=sys.stderr)

    with open_store(str(store_path)) as store:
        run_fleet(read_manifest(manifest), store, EngineOptions(workers=2), sample)
    return memory


def detection(plan: FleetPlan, store_path: Path) -> tuple[list[list[str]], int, int, int]:
    """Rows per drifting robot, alarms on steady robots, histories tested on them, misses."""
    with open_store(str(store_path)) as store:
        alarms = detect_drift(store)
        rows, missed = [], 0
        for robot in plan.robots:
            if robot.drift is None:
                continue
            history = {h.name: h for h in store.histories(robot.name)}[robot.drift]
            runs = [int(Path(r).stem) for r in history.runs]
            crossing = next(
                (k for k, s in zip(runs, history.stds) if robot.drift_at(k) > 3 * s), None
            )
            mine = [a for a in alarms if a.robot == robot.name]
            right = [a for a in mine if a.parameter == robot.drift]
            detected = int(Path(right[0].detected_run).stem) if right else None
            delay = None if detected is None or crossing is None else detected - crossing
            missed += delay is None or delay > 3 or len(mine) != len(right)
            rows.append(
                [
                    robot.name,
                    robot.drift,
                    str(robot.drift_from),
                    str(crossing),
                    str(detected),
                    str(delay),
                    ", ".join(a.parameter for a in mine if a not in right) or "-",
                ]
            )
        steady = {r.name for r in plan.robots if r.drift is None}
        false = sum(a.robot in steady for a in alarms)
        tested = sum(
            1
            for name in steady
            for h in store.histories(name)
            if np.all(np.isfinite(h.stds)) and len(h.values) > DriftOptions().reference_runs
        )
    return rows, false, tested, missed


def costs(store_path: Path) -> dict[str, float]:
    """Mean seconds per identified run, by mode."""
    with open_store(str(store_path)) as store:
        runs = [r for r in store.runs() if r.status == OK]
    return {
        mode: float(np.mean([r.elapsed for r in runs if r.mode == mode]))
        for mode in sorted({r.mode for r in runs})
    }


def table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows)]
    for row in (header, ["-" * w for w in widths], *rows):
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", type=int, default=50)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--drifting", type=int, default=10)
    parser.add_argument("--faults", type=int, default=6)
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--subset", type=int, default=120)
    parser.add_argument("--repeats", type=int, default=1, help="throughput runs, alternated")
    parser.add_argument("--throughput-only", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        plan = plan_fleet(args.robots, args.runs, args.drifting, args.faults, seed=0)
        plan = FleetPlan(plan.robots, plan.runs, duration=args.duration)
        start = time.perf_counter()
        manifest = simulate_fleet(folder / "fleet", plan)
        print(
            f"simulated {args.robots} x {args.runs} runs in {time.perf_counter() - start:.0f} s",
            file=sys.stderr,
        )
        load = os.getloadavg()[0]
        speed = throughput(subset_manifest(manifest, args.subset), folder, args.repeats)
        rates = {w: n / s for w, (n, s, _) in speed.items()}
        print(
            f"\nThroughput ({speed[1][0]} runs on each; load average before: {load:.1f} "
            f"on {os.cpu_count()} CPUs):"
        )
        table(
            ["workers", "runs/s", "ratio", "run s / wall s"],
            [
                [str(w), f"{r:.2f}", f"{r / rates[1]:.2f}", f"{speed[w][2] / speed[w][1]:.2f}"]
                for w, r in rates.items()
            ],
        )
        if args.throughput_only:
            return 0
        store_path = folder / "fleet.sqlite"
        memory = identify_all(manifest, store_path)
        rows, false, tested, missed = detection(plan, store_path)
        cost = costs(store_path)
    print(f"\nCoordinator's resident memory over {memory[-1][0] if memory else 0} runs (MB):")
    table(["runs", "RSS MB"], [[str(n), f"{m:.0f}"] for n, m in memory])
    print(f"\nDetection ({args.robots} robots x {args.runs} runs, {args.drifting} drifting):")
    table(
        ["robot", "parameter", "drift from", "crossing 3 SE", "alarm", "delay", "other alarms"],
        rows,
    )
    monte_carlo = false_alarm_rate(runs=args.runs)
    print(
        f"\nmissed or late (> 3 runs) or wrong parameter: {missed}; alarms on robots without "
        f"drift: {false} over {tested} histories tested; Monte Carlo false-alarm rate per "
        f"drift-free {args.runs}-run history: {monte_carlo:.1e}"
    )
    print(
        "\nPer-run cost (s, one worker process): "
        + ", ".join(f"{mode} {c:.2f}" for mode, c in cost.items())
    )
    mean = float(np.mean(list(cost.values())))
    print(
        f"100 robots, one run a night each (mean {mean:.2f} s a run), projected: "
        + ", ".join(f"{w} workers {100 * mean / w:.0f} s" for w in (1, 2, 8, 32, 100))
        + f"; a month's history (3,000 runs) on 32 workers {3000 * mean / 32:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
