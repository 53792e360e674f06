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
   default prior weight. The fast backend's two algorithms: the semismooth Newton method (the
   default; :mod:`inertia_id_ros.solvers._lmi_active_set`) and the interior point
   (``use_active_set=False``; the path these problems took before the Newton method took
   non-negative extras, and still its fallback), each cold and warm-started from the previous
   window's solution as the node does; the cvxpy reference with the DPP model built once
   (Clarabel), and cvxpy building the model on every solve. The methods are interleaved window
   by window (the order rotating), so load from other processes hits them alike. Wall-clock time
   around ``solve``; median, p99, max, the ratio of medians to the Newton method's cold solve,
   the objective's relative excess over the best of the methods on the same window (agreement
   check), the share of fully consistent results and the smallest ``lambda_min(J)`` of any body.

Target: 7-DoF (98 parameters) consistent solve <= 5 ms cold median (fast backend).

Run: .venv/bin/python benchmarks/bench_links.py [--data DIR] [--window 10] [--step 0.1]
[--cvxpy-windows 30] [--per-solve-windows 8]. BLAS threads are left to the environment (the
header prints ``OPENBLAS_NUM_THREADS``); compare a run with ``OPENBLAS_NUM_THREADS=1``.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin

from inertia_id_ros.chain.link_fit import link_problem
from inertia_id_ros.chain.links import JointTorqueData, LinkModel, regression_system
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.options import DEFAULT_PRIOR_WEIGHT
from inertia_id_ros.sim.payload import PANDA_ARM_JOINTS, ExcitingTrajectory
from inertia_id_ros.sim.torques import DriveTruth, JointTorqueSimulator
from inertia_id_ros.solvers import Problem, Solution, solve

DEFAULT_DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "kuka_lwr4"
RATE = 200.0  # Hz, the KUKA recording's and the simulated Panda's
TARGET_MEDIAN_MS = 5.0


def load_case(data_dir: Path) -> tuple[str, LinkModel, JointTorqueData]:
    """(description, model, samples): the KUKA run 1 if present, else the simulated Panda."""
    run = data_dir / "measurements_1.npz"
    if run.is_file() and (data_dir / "kuka_lwr4.urdf").is_file():
        arrays = np.load(run)
        data = JointTorqueData(
            arrays["positions"], arrays["velocities"], arrays["accelerations"], arrays["torques"]
        )
        return (f"KUKA LWR4+ run 1 ({run})", LinkModel.from_urdf(data_dir / "kuka_lwr4.urdf"), data)
    model = LinkModel.from_urdf(example_robot_urdf("panda"), PANDA_ARM_JOINTS)
    rng = np.random.default_rng(0)
    drives = [
        DriveTruth(
            rng.uniform(0.2, 0.6),
            rng.uniform(0.3, 1.0),
            rng.normal(0.0, 0.3),
            rng.uniform(0.1, 0.4),
        )
        for _ in range(7)
    ]
    trajectory = ExcitingTrajectory.for_model(model.model, model.joint_names, seed=0)
    simulator = JointTorqueSimulator(model, trajectory, drives=drives, torque_noise_std=0.05)
    data = simulator.measure(np.arange(0.0, 25.0, 1.0 / RATE), rng)
    return f"simulated Panda (no {run}), 25 s at {RATE:g} Hz", model, data


def regressor_costs(model: LinkModel, data: JointTorqueData, repeats: int = 3) -> dict[str, float]:
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
            data.positions, dq, ddq
        ),
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


def window_problems(
    model: LinkModel, data: JointTorqueData, window: float, step: float
) -> list[Problem]:
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
        problems.append(
            base.replace(
                gram=gram[end] - gram[start],
                moment=moment[end] - moment[start],
                yty=float(yty[end] - yty[start]),
                n_rows=n_rows,
                prior_weight=DEFAULT_PRIOR_WEIGHT * n_rows,
            )
        )
    return problems


@dataclass
class Method:
    """One timed way of solving: ``options`` for ``solve(problem, "lmi", ...)``, warm-started
    from its own previous solution if ``warm``, on the windows whose index is in ``windows``."""

    label: str
    options: dict[str, Any]
    windows: set[int]
    warm: bool = False
    times: list[float] = field(default_factory=list)
    solutions: list[tuple[Problem, Solution]] = field(default_factory=list)

    def run(self, index: int, problem: Problem) -> None:
        """Solve window ``index`` (if it is one of this method's) and record the wall time."""
        if index not in self.windows:
            return
        previous = self.solutions[-1][1] if self.warm and self.solutions else None
        started = time.perf_counter()
        solution = solve(problem, "lmi", initvals=previous, **self.options)
        self.times.append(time.perf_counter() - started)
        self.solutions.append((problem, solution))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA_DIR, help="directory of the KUKA LWR4+ recordings"
    )
    parser.add_argument("--window", type=float, default=10.0, help="window length (s)")
    parser.add_argument("--step", type=float, default=0.1, help="window step (s)")
    parser.add_argument(
        "--cvxpy-windows",
        type=int,
        default=30,
        help="windows solved by cvxpy with the DPP model built once",
    )
    parser.add_argument(
        "--per-solve-windows",
        type=int,
        default=8,
        help="windows solved by cvxpy building the model per solve",
    )
    args = parser.parse_args()

    description, model, data = load_case(args.data)
    print(
        f"data: {description}: {data.n_samples} samples, {model.n_joints} joints, "
        f"{model.n_parameters} parameters; "
        f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}, "
        f"{os.cpu_count()} CPUs"
    )

    print("\n== regressor cost per sample (best of 3 passes over all samples)")
    costs = regressor_costs(model, data)
    reference = costs["pinocchio computeJointTorqueRegressor alone"]
    print(f"{'stage':46s} {'µs/sample':>10s} {'x pinocchio':>12s}")
    for label, cost in costs.items():
        print(f"{label:46s} {cost:10.1f} {cost / reference:12.2f}")

    problems = window_problems(model, data, args.window, args.step)
    print(
        f"\n== consistent solve (lmi), {len(problems)} windows of {args.window:g} s "
        f"({problems[0].n_rows} torque rows) moved by {args.step:g} s, normal equations "
        f"precomputed, prior weight {DEFAULT_PRIOR_WEIGHT:g} per sample; methods interleaved"
    )
    every = set(range(len(problems)))
    cvxpy_windows = sorted(every)[:: max(1, len(problems) // args.cvxpy_windows)]
    cvxpy_windows = cvxpy_windows[: args.cvxpy_windows]
    interior_point = {"use_active_set": False}
    methods = [
        Method("fast Newton, cold (new)", {}, every),
        Method("fast Newton, warm (new)", {}, every, warm=True),
        Method("fast interior point, cold (old)", interior_point, every),
        Method("fast interior point, warm (old)", interior_point, every, warm=True),
        Method("cvxpy Clarabel, DPP built once", {"backend": "cvxpy"}, set(cvxpy_windows)),
        Method(
            "cvxpy Clarabel, built per solve",
            {"backend": "cvxpy_per_solve"},
            set(cvxpy_windows[: args.per_solve_windows]),
        ),
    ]
    solve(problems[0], "lmi", backend="cvxpy")  # build and cache the DPP model (not timed)
    for index, problem in enumerate(problems):
        shift = index % len(methods)
        for method in methods[shift:] + methods[:shift]:
            method.run(index, problem)

    best: dict[int, float] = {}  # best objective per window (by identity of the problem)
    for method in methods:
        for problem, solution in method.solutions:
            best[id(problem)] = min(best.get(id(problem), np.inf), problem.objective(solution.x))
    medians = {method.label: np.median(method.times) for method in methods}
    new_cold = medians["fast Newton, cold (new)"]
    active = np.mean([s.info["active"] for _, s in methods[0].solutions])
    print(
        f"LMI constraint active (unconstrained optimum inconsistent) in {100 * active:.0f} % "
        "of the windows"
    )
    print(
        f"{'method':32s} {'n':>4s} {'median ms':>10s} {'p99 ms':>7s} {'max ms':>7s} "
        f"{'/ new cold':>10s} {'Newton':>6s} {'obj. excess':>11s} {'consistent':>10s} "
        f"{'min eig J':>10s}"
    )
    for method in methods:
        times = 1e3 * np.array(method.times)
        solutions = [s for _, s in method.solutions]
        excess = max(
            (p.objective(s.x) - best[id(p)]) / abs(best[id(p)]) for p, s in method.solutions
        )
        newton = np.mean([s.info.get("algorithm") == "active_set" for s in solutions])
        consistent = np.mean([s.fully_consistent for s in solutions])
        lowest = min(s.min_eigs.min() for s in solutions)
        print(
            f"{method.label:32s} {times.size:4d} {np.median(times):10.2f} "
            f"{np.percentile(times, 99):7.2f} {times.max():7.2f} "
            f"{medians[method.label] / new_cold:10.2f} {newton:6.2f} {excess:11.1e} "
            f"{consistent:10.2f} {lowest:10.2e}"
        )
    cold_ratio = medians["fast interior point, cold (old)"] / new_cold
    warm_ratio = medians["fast interior point, warm (old)"] / medians["fast Newton, warm (new)"]
    print(
        f"\nold / new (interior point / Newton), ratio of medians in this run: cold "
        f"{cold_ratio:.2f}, warm {warm_ratio:.2f}; cvxpy DPP / new cold "
        f"{medians['cvxpy Clarabel, DPP built once'] / new_cold:.1f}"
    )
    met = 1e3 * new_cold <= TARGET_MEDIAN_MS
    print(
        f"target: {model.n_joints}-DoF ({model.n_parameters} parameters) consistent solve "
        f"<= {TARGET_MEDIAN_MS:g} ms cold median: {'met' if met else 'NOT met'} "
        f"({1e3 * new_cold:.2f} ms, fast backend, Newton, cold)"
    )
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
