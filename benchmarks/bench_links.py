"""Benchmark of link identification on a 7-DoF arm: regressor cost and consistent solve time.

Data: the KUKA LWR4+ run 1 (``<repo>/../shared/data/kuka_lwr4/measurements_1.npz``, 5027 samples
at 200 Hz) if present, else 25 s of the simulated Panda at 200 Hz (URDF links, friction,
armature, 0.05 N·m noise). Model: 7 links (10 parameters each, URDF prior) plus viscous, Coulomb
(exact sign), offset and armature per joint: 98 parameters
(:class:`inertia_id_ros.chain.links.LinkModel`).

1. Regressor cost per sample (µs): pinocchio's ``computeJointTorqueRegressor`` alone (a Python
   loop over the samples, as any caller has to), ours (``LinkModel.joint_torque_regressor``: the
   same plus configuration handling and the drive columns) and ours plus the normal-equation update
   (``link_problem``: what a sliding window adds per sample).
2. Consistent solve time on sliding windows (``--window`` s, moved by ``--step`` s) whose normal
   equations are precomputed (sums of per-step blocks, as a sliding window keeps them), with the
   default prior weight: the fast LMI (cold, and warm-started from the previous window's
   solution as the node does), the cvxpy reference with the DPP model built once (Clarabel), and
   cvxpy building the model on every solve. Wall-clock time around ``solve``; median, p99, max,
   the ratio of medians to the fast cold solve, and the objective's relative excess over the best
   of the methods on the same window (agreement check).

Target: 7-DoF consistent solve <= 10 ms median (fast backend).

Run: .venv/bin/python benchmarks/bench_links.py [--data DIR] [--window 10] [--step 0.1]
[--cvxpy-windows 30] [--per-solve-windows 8]. BLAS runs on one thread (set before numpy is
imported): on these small matrices OpenBLAS's threads cost more than they save.
"""

from __future__ import annotations

import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"

import argparse  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402  (after the BLAS thread settings)
import pinocchio as pin  # noqa: E402

from inertia_id_ros.chain.links import (  # noqa: E402
    DEFAULT_PRIOR_WEIGHT,
    JointTorqueData,
    LinkModel,
    link_problem,
    regression_system,
)
from inertia_id_ros.core.robots import example_robot_urdf  # noqa: E402
from inertia_id_ros.sim.payload import PANDA_ARM_JOINTS, ExcitingTrajectory  # noqa: E402
from inertia_id_ros.solvers import Problem, Solution, solve  # noqa: E402
from inertia_id_ros.sim.torques import DriveTruth, JointTorqueSimulator  # noqa: E402

DEFAULT_DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "kuka_lwr4"
RATE = 200.0  # Hz, the KUKA recording's and the simulated Panda's
TARGET_MEDIAN_MS = 10.0


def load_case(data_dir: Path) -> tuple[str, LinkModel, JointTorqueData]:
    """(description, model, samples): the KUKA run 1 if present, else the simulated Panda."""
    run = data_dir / "measurements_1.npz"
    if run.is_file() and (data_dir / "kuka_lwr4.urdf").is_file():
        arrays = np.load(run)
        data = JointTorqueData(arrays["positions"], arrays["velocities"],
                               arrays["accelerations"], arrays["torques"])
        return (f"KUKA LWR4+ run 1 ({run})", LinkModel.from_urdf(data_dir / "kuka_lwr4.urdf"),
                data)
    model = LinkModel.from_urdf(example_robot_urdf("panda"), PANDA_ARM_JOINTS)
    rng = np.random.default_rng(0)
    drives = [DriveTruth(rng.uniform(0.2, 0.6), rng.uniform(0.3, 1.0), rng.normal(0.0, 0.3),
                         rng.uniform(0.1, 0.4)) for _ in range(7)]
    trajectory = ExcitingTrajectory.for_model(model.model, model.joint_names, seed=0)
    simulator = JointTorqueSimulator(model, trajectory, drives=drives, torque_noise_std=0.05)
    data = simulator.measure(np.arange(0.0, 25.0, 1.0 / RATE), rng)
    return f"simulated Panda (no {run}), 25 s at {RATE:g} Hz", model, data


def regressor_costs(model: LinkModel, data: JointTorqueData, repeats: int = 3
                    ) -> dict[str, float]:
    """Best-of-``repeats`` µs per sample of each regressor stage over all samples of ``data``."""
    q = model.configuration(data.positions)
    dq, ddq = data.velocities, data.accelerations
    pin_data = model.model.createData()

    def pinocchio_alone() -> None:
        for k in range(q.shape[0]):
            pin.computeJointTorqueRegressor(model.model, pin_data, q[k], dq[k], ddq[k])

    stages = {
        "pinocchio computeJointTorqueRegressor alone": pinocchio_alone,
        "ours: LinkModel.joint_torque_regressor": lambda: model.joint_torque_regressor(
            data.positions, dq, ddq),
        "ours + normal equations (link_problem)": lambda: link_problem(model, data),
    }
    costs = {}
    for label, stage in stages.items():
        best = np.inf
        for _ in range(repeats):
            started = time.perf_counter()
            stage()
            best = min(best, time.perf_counter() - started)
        costs[label] = 1e6 * best / data.n_samples
    return costs


def window_problems(model: LinkModel, data: JointTorqueData, window: float,
                    step: float) -> list[Problem]:
    """Problems of the sliding windows: normal equations summed over per-step blocks."""
    block = max(1, round(step * RATE))
    blocks_per_window = max(1, round(window / step))
    n_blocks = data.n_samples // block
    base = link_problem(model, data.subset(slice(0, block)))
    blocks = []
    for b in range(n_blocks):
        Y, y = regression_system(model, data.subset(slice(b * block, (b + 1) * block)))
        blocks.append((Y.T @ Y, Y.T @ y, float(y @ y), y.size))
    gram = np.cumsum([np.zeros_like(blocks[0][0])] + [b[0] for b in blocks], axis=0)
    moment = np.cumsum([np.zeros_like(blocks[0][1])] + [b[1] for b in blocks], axis=0)
    yty = np.cumsum([0.0] + [b[2] for b in blocks])
    rows = np.cumsum([0] + [b[3] for b in blocks])
    problems = []
    for start in range(n_blocks - blocks_per_window + 1):
        end = start + blocks_per_window
        n_rows = int(rows[end] - rows[start])
        problems.append(base.replace(gram=gram[end] - gram[start],
                                     moment=moment[end] - moment[start],
                                     yty=float(yty[end] - yty[start]), n_rows=n_rows,
                                     prior_weight=DEFAULT_PRIOR_WEIGHT * n_rows))
    return problems


def time_solves(problems: list[Problem], warm: bool = False,
                **options: object) -> tuple[np.ndarray, list[Solution]]:
    """Wall-clock seconds of ``solve(problem, "lmi", **options)`` for each problem, and the
    solutions (``warm``: each warm-started from the previous window's)."""
    times, solutions = [], []
    previous: Solution | None = None
    for problem in problems:
        started = time.perf_counter()
        solution = solve(problem, "lmi", initvals=previous if warm else None, **options)
        times.append(time.perf_counter() - started)
        solutions.append(solution)
        previous = solution
    return np.array(times), solutions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR,
                        help="directory of the KUKA LWR4+ recordings")
    parser.add_argument("--window", type=float, default=10.0, help="window length (s)")
    parser.add_argument("--step", type=float, default=0.1, help="window step (s)")
    parser.add_argument("--cvxpy-windows", type=int, default=30,
                        help="windows solved by cvxpy with the DPP model built once")
    parser.add_argument("--per-solve-windows", type=int, default=8,
                        help="windows solved by cvxpy building the model per solve")
    args = parser.parse_args()

    description, model, data = load_case(args.data)
    print(f"data: {description}: {data.n_samples} samples, {model.n_joints} joints, "
          f"{model.n_parameters} parameters; BLAS threads: 1")

    print("\n== regressor cost per sample (best of 3 passes over all samples)")
    costs = regressor_costs(model, data)
    reference = costs["pinocchio computeJointTorqueRegressor alone"]
    print(f"{'stage':46s} {'µs/sample':>10s} {'x pinocchio':>12s}")
    for label, cost in costs.items():
        print(f"{label:46s} {cost:10.1f} {cost / reference:12.2f}")

    problems = window_problems(model, data, args.window, args.step)
    print(f"\n== consistent solve (lmi), {len(problems)} windows of {args.window:g} s "
          f"({problems[0].n_rows} torque rows) moved by {args.step:g} s, normal equations "
          f"precomputed, prior weight {DEFAULT_PRIOR_WEIGHT:g} per sample")
    cvxpy_subset = problems[:: max(1, len(problems) // args.cvxpy_windows)][:args.cvxpy_windows]
    per_solve_subset = cvxpy_subset[:args.per_solve_windows]
    solve(problems[0], "lmi", backend="cvxpy")  # build and cache the DPP model (not timed)
    runs = {
        "lmi fast, cold": (problems, time_solves(problems)),
        "lmi fast, warm (previous window)": (problems, time_solves(problems, warm=True)),
        "lmi cvxpy, DPP model built once": (cvxpy_subset,
                                            time_solves(cvxpy_subset, backend="cvxpy")),
        "lmi cvxpy, model built per solve": (per_solve_subset,
                                             time_solves(per_solve_subset,
                                                         backend="cvxpy_per_solve")),
    }
    fast_times, fast_solutions = runs["lmi fast, cold"][1]
    fast_median = np.median(fast_times)
    objectives: dict[int, float] = {}  # best objective per window (by identity of the problem)
    for subset, (_, solutions) in runs.values():
        for problem, solution in zip(subset, solutions):
            value = problem.objective(solution.x)
            objectives[id(problem)] = min(objectives.get(id(problem), np.inf), value)
    active = np.mean([s.info.get("active", True) for s in fast_solutions])
    print(f"LMI constraint active (unconstrained optimum inconsistent) in {100 * active:.0f} % "
          "of the windows")
    print(f"{'method':34s} {'n':>4s} {'median ms':>10s} {'p99 ms':>8s} {'max ms':>8s} "
          f"{'x fast':>7s} {'objective excess':>17s} {'consistent':>10s}")
    for label, (subset, (times, solutions)) in runs.items():
        excess = max((p.objective(s.x) - objectives[id(p)]) / abs(objectives[id(p)])
                     for p, s in zip(subset, solutions))
        consistent = np.mean([s.fully_consistent for s in solutions])
        print(f"{label:34s} {len(times):4d} {1e3 * np.median(times):10.2f} "
              f"{1e3 * np.percentile(times, 99):8.2f} {1e3 * times.max():8.2f} "
              f"{np.median(times) / fast_median:7.1f} {excess:17.1e} {consistent:10.2f}")
    met = 1e3 * fast_median <= TARGET_MEDIAN_MS
    print(f"\ntarget: {model.n_joints}-DoF consistent solve <= {TARGET_MEDIAN_MS:g} ms median: "
          f"{'met' if met else 'NOT met'} ({1e3 * fast_median:.2f} ms, fast backend, cold)")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
