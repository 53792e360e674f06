"""Benchmark of the whole-body consistent solve: lmi (fast) vs point-mass QP (OSQP) vs cvxpy.

Problem: iCub (example-robot-data ``icub_description/robots/icub.urdf``) with a free-flyer base,
39 URDF links with mass (390 inertial parameters), 7 wrenches (the left sole in contact, the six
F/T sensors internal with offsets: 36 more parameters). The truth is the URDF with masses, COMs
and inertias off by up to ±30 % / 2 cm / ±40 %; the URDF is the prior. Rows from
:class:`~inertia_id_ros.core.whole_body_model.WholeBodyModel` at smooth random joint and base
motion, 200 Hz; the measurements are the true rows plus noise (0.5 N, 0.02 N m). Every problem is
scaled first (:mod:`inertia_id_ros.chain.whole_body_fit`).

- point-mass: :data:`~inertia_id_ros.chain.whole_body_fit.POINTMASS_OPTIONS` (27 points per
  link placed once, OSQP tolerance 1e-5);
- "cold": no warm start (cvxpy: the model compiled in the same call);
- "warm": the window moved by ``--shift`` of its samples, warm-started from the previous
  solution (cvxpy: the cached compiled model; Clarabel has no warm start; OSQP: the previous
  solver object, updated);
- "unscaled": the same problem without the scaling (FloBaRoID: unscaled SDPs fail at this size);
- breakdown: copies of the robot's problem side by side (block diagonal) or a subset of its links
  give 10 ... 156 bodies; a method breaks down at the first size where a cold solve fails, is
  not certified (solver status), takes over ``--limit`` s, or (lmi, cvxpy) misses the best
  objective by over 1e-6 relative (the point-mass grid approximates: its objective is higher).

Run: .venv/bin/python benchmarks/bench_whole_body.py [--seconds 10] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time

from inertia_id_ros.threads import limit_threads


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="window length (s, 200 Hz)")
    parser.add_argument(
        "--shift",
        type=float,
        default=0.05,
        help="fraction of the window that moves between warm solves (0.05)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="timing repeats (median)")
    parser.add_argument(
        "--limit",
        type=float,
        default=10.0,
        help="a cold solve slower than this (s) counts as broken down",
    )
    parser.add_argument(
        "--sizes", default="10,20,39,78,156", help="body counts of the breakdown table"
    )
    return parser.parse_args()


ARGS = _parse()
limit_threads()

import numpy as np  # noqa: E402
import scipy.linalg  # noqa: E402

from inertia_id_ros.chain.whole_body_fit import (  # noqa: E402
    DEFAULT_PRIOR_WEIGHT,
    POINTMASS_OPTIONS,
    NormalEquations,
    parameter_scales,
    scale_problem,
)
from inertia_id_ros.core.base_motion import BaseMotion  # noqa: E402
from inertia_id_ros.core.inertia import inertia_from_theta, theta_from_inertia  # noqa: E402
from inertia_id_ros.core.robots import example_robot_urdf  # noqa: E402
from inertia_id_ros.core.whole_body_model import (  # noqa: E402
    FTSensor,
    WholeBodyModel,
    WholeBodySamples,
)
from inertia_id_ros.solvers import Problem, solve  # noqa: E402
from inertia_id_ros.solvers.lmi import _MODEL_CACHE  # noqa: E402

RATE = 200.0
FT = (
    "l_arm_ft_sensor",
    "r_arm_ft_sensor",
    "l_leg_ft_sensor",
    "r_leg_ft_sensor",
    "l_foot_ft_sensor",
    "r_foot_ft_sensor",
)
NOISE = np.array([0.5] * 3 + [0.02] * 3)
METHODS = {
    "lmi": ("lmi", {}),
    "pointmass (OSQP)": ("pointmass", POINTMASS_OPTIONS),
    "cvxpy (Clarabel)": ("lmi", {"backend": "cvxpy"}),
}


def _sines(t: np.ndarray, width: int, scale: float, rng: np.random.Generator):
    w = rng.uniform(0.3, 2.0, (3, width))
    phase = rng.uniform(0, 2 * np.pi, (3, width))
    arg = t[:, None, None] * w + phase
    return (
        scale * np.sin(arg).sum(1),
        scale * (w * np.cos(arg)).sum(1),
        -scale * (w**2 * np.sin(arg)).sum(1),
    )


def _truth(model: WholeBodyModel, rng: np.random.Generator) -> np.ndarray:
    thetas = []
    for theta in model.link_prior:
        mass, com, inertia = inertia_from_theta(theta)
        thetas.append(
            theta_from_inertia(
                mass * (1 + rng.uniform(-0.3, 0.3)),
                com + rng.uniform(-0.02, 0.02, 3),
                inertia * (1 + rng.uniform(-0.4, 0.4)),
            )
        )
    offsets = rng.normal(0, 2.0, 6 * len(model.offset_sensors))
    return np.concatenate([np.ravel(thetas), offsets])


def equations(
    model: WholeBodyModel, x_true: np.ndarray, t: np.ndarray, rng: np.random.Generator
) -> NormalEquations:
    """Normal equations of the true rows plus noise at smooth motion sampled at ``t``."""
    n = t.size
    q, dq, ddq = _sines(t, len(model.joint_names), 0.25, rng)
    omega, alpha = _sines(t, 3, 0.3, rng)[1:]
    acc = _sines(t, 3, 1.0, rng)[2] + np.array([0.0, 0.0, 9.81])
    samples = WholeBodySamples(
        q, dq, ddq, BaseMotion(omega, alpha, acc), np.zeros((n, len(model.sensors), 6))
    )
    p = model.n_params
    gram, moment, yty, rows = np.zeros((p, p)), np.zeros(p), 0.0, 0
    for (channels, cols), (Yg, _) in zip(model.row_groups(), model.group_rows(samples)):
        Yg = Yg.reshape(-1, cols.size)
        b = Yg @ x_true[cols] + rng.normal(0, 1, (n, channels.size)).ravel() * np.tile(
            NOISE[: channels.size], n
        )
        gram[np.ix_(cols, cols)] += Yg.T @ Yg
        moment[cols] += Yg.T @ b
        yty += float(b @ b)
        rows += b.size
    return NormalEquations(gram, moment, yty, rows)


def block_diagonal(
    parts: list[NormalEquations], n_bodies: list[int]
) -> tuple[NormalEquations, np.ndarray]:
    """Robots side by side: bodies first (all copies), then the offsets; the permutation."""
    sizes = [e.gram.shape[0] for e in parts]
    starts = np.cumsum([0] + sizes)
    body_idx = np.concatenate([starts[k] + np.arange(10 * n) for k, n in enumerate(n_bodies)])
    extra_idx = np.concatenate(
        [np.arange(starts[k] + 10 * n, starts[k + 1]) for k, n in enumerate(n_bodies)]
    )
    order = np.concatenate([body_idx, extra_idx])
    gram = scipy.linalg.block_diag(*[e.gram for e in parts])[np.ix_(order, order)]
    moment = np.concatenate([e.moment for e in parts])[order]
    return NormalEquations(
        gram, moment, sum(e.yty for e in parts), sum(e.n_rows for e in parts)
    ), order


def timed(problem: Problem, method: str, options: dict, initvals=None, cold_cvxpy=True):
    if cold_cvxpy and options.get("backend") == "cvxpy":
        _MODEL_CACHE.clear()
    started = time.perf_counter()
    try:
        solution = solve(problem, method, initvals, **options)
    except Exception as e:  # noqa: BLE001 (a benchmark reports every failure)
        return None, time.perf_counter() - started, f"{type(e).__name__}: {e}"[:60]
    return solution, time.perf_counter() - started, solution.status


def median_time(problem, method, options, repeats, initvals=None, cold_cvxpy=True):
    results = [timed(problem, method, options, initvals, cold_cvxpy) for _ in range(repeats)]
    return results[-1][0], float(np.median([r[1] for r in results])), results[-1][2]


def main() -> None:
    rng = np.random.default_rng(0)
    urdf = example_robot_urdf("icub")
    sensors = [FTSensor("l_sole", "contact")] + [FTSensor(f, "internal") for f in FT]
    model = WholeBodyModel.from_urdf(urdf, ft_sensors=sensors, imu_frame="imu_frame")
    x_true = _truth(model, rng)
    n = int(ARGS.seconds * RATE)
    shift = max(int(ARGS.shift * n), 1)
    t = np.arange(n + shift) / RATE
    started = time.perf_counter()
    first = equations(model, x_true, t[:n], np.random.default_rng(1))
    second = equations(model, x_true, t[shift:], np.random.default_rng(1))
    rows_time = time.perf_counter() - started
    scales = parameter_scales(model, first.gram, first.n_rows)
    problem, _ = scale_problem(first, scales, model.n_bodies, model.prior, DEFAULT_PRIOR_WEIGHT)
    moved, _ = scale_problem(second, scales, model.n_bodies, model.prior, DEFAULT_PRIOR_WEIGHT)
    print(
        f"iCub: {model.n_bodies} links with mass, {len(sensors)} wrenches, "
        f"{model.n_params} parameters; window {ARGS.seconds:g} s at {RATE:g} Hz "
        f"({first.n_rows} rows; rows + normal equations of both windows {rows_time:.1f} s); "
        f"warm: window moved by {shift} samples"
    )
    print(
        f"{'method':<20}{'cold (s)':>10}{'warm (s)':>10}{'status':>26}{'objective':>14}"
        f"{'min λ(J)':>11}"
    )
    reference = None
    for name, (method, options) in METHODS.items():
        cold, cold_time, status = median_time(problem, method, options, ARGS.repeats)
        warm_start = solve(problem, method, None, **options) if cold is not None else None
        warm, warm_time, _ = median_time(
            moved, method, options, ARGS.repeats, warm_start, cold_cvxpy=False
        )
        if name.startswith("cvxpy"):
            reference = cold
        objective = f"{cold.objective:.8g}" if cold is not None else "-"
        eig = f"{cold.min_eigs.min():.1e}" if cold is not None else "-"
        print(f"{name:<20}{cold_time:10.3f}{warm_time:10.3f}{status:>26}{objective:>14}{eig:>11}")
    # unscaled: the same problem in SI units (prior weight equivalent)
    unscaled = Problem(
        gram=first.gram,
        moment=first.moment,
        yty=first.yty,
        n_rows=first.n_rows,
        n_bodies=model.n_bodies,
        prior=model.prior,
        prior_weight=problem.prior_weight
        * float(np.mean(np.diag(first.gram * np.outer(scales, scales))))
        / scales**2,
    )
    print("unscaled (SI units), objective mapped to the scaled problem's:")
    for name, (method, options) in (
        ("lmi", METHODS["lmi"]),
        ("cvxpy (Clarabel)", METHODS["cvxpy (Clarabel)"]),
    ):
        solution, elapsed, status = timed(unscaled, method, options)
        mapped = problem.objective(solution.x / scales) if solution is not None else np.nan
        print(f"{name:<20}{elapsed:10.3f}{'':>10}{status:>26}{mapped:14.8g}")
    print(f"reference objective (scaled, cvxpy): {reference.objective:.8g}" if reference else "")
    breakdown(model, x_true, t[:n])


def breakdown(model: WholeBodyModel, x_true: np.ndarray, t: np.ndarray) -> None:
    sizes = [int(s) for s in ARGS.sizes.split(",")]
    print(
        f"\nbreakdown: cold solve time (s) by number of bodies; marks: u = not certified "
        f"(solver status), i = inconsistent, o = objective off the best by > 1e-6, "
        f"t = over {ARGS.limit:g} s (larger sizes skipped)"
    )
    print(f"{'bodies':>7}{'params':>8}" + "".join(f"{name:>20}" for name in METHODS))
    broken = {name: None for name in METHODS}
    too_slow = set()
    cache: list[NormalEquations] = []
    for size in sizes:
        copies = int(np.ceil(size / model.n_bodies))
        while len(cache) < copies:
            cache.append(equations(model, x_true, t, np.random.default_rng(10 + len(cache))))
        n_bodies = [model.n_bodies] * copies
        merged, order = block_diagonal(cache[:copies], n_bodies)
        prior = np.concatenate([model.prior] * copies)[order]
        scales = np.concatenate(
            [parameter_scales(model, e.gram, e.n_rows) for e in cache[:copies]]
        )[order]
        keep = np.arange(merged.gram.shape[0])
        if size < model.n_bodies * copies:  # the first `size` links and all offsets
            keep = np.concatenate(
                [np.arange(10 * size), np.arange(10 * sum(n_bodies), merged.gram.shape[0])]
            )
        sub = NormalEquations(
            merged.gram[np.ix_(keep, keep)], merged.moment[keep], merged.yty, merged.n_rows
        )
        problem, _ = scale_problem(sub, scales[keep], size, prior[keep], DEFAULT_PRIOR_WEIGHT)
        results = {
            name: None if name in too_slow else timed(problem, method, options)
            for name, (method, options) in METHODS.items()
        }
        best = min(
            (r[0].objective for r in results.values() if r and r[0] is not None), default=np.nan
        )
        cells = []
        for name in METHODS:
            result = results[name]
            if result is None:
                cells.append(f"{'-':>20}")
                continue
            solution, elapsed, status = result
            exact = not name.startswith("pointmass")  # the grid approximates: no objective test
            marks = "" if solution is not None else "u"
            if solution is not None:
                marks += "u" if not solution.found else ""
                marks += "i" if not solution.fully_consistent else ""
                marks += "o" if exact and solution.objective > best * (1 + 1e-6) + 1e-12 else ""
            if elapsed > ARGS.limit:
                marks += "t"
                too_slow.add(name)
            if marks and broken[name] is None:
                broken[name] = size
            cells.append(f"{elapsed:17.3f} {marks:<2}")
        print(f"{size:7d}{problem.n_params:8d}" + "".join(cells))
    print(
        "first breakdown: "
        + ", ".join(
            f"{name} {'none up to ' + str(sizes[-1]) if size is None else size} bodies"
            for name, size in broken.items()
        )
    )


if __name__ == "__main__":
    main()
