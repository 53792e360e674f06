"""Benchmark of inertia_id_ros.solvers: solve time and error vs truth, per method.

Problems (synthetic, pinocchio):
  payload  10 + 6 parameters: rows [pin.bodyRegressor(v, a_g), 1_6], 100 samples (600 rows),
           a CAD-like prior (used by cad_prior; weight 0);
  panda    70 parameters: the Panda's joint-torque regressor (fingers locked), 60 samples,
           with a prior (truth +20 % noise, weight 10) as an estimator would use.
Cases: "inactive" (the least-squares estimate is already consistent: payload with tiny noise;
panda with noise-free data and prior = truth) and "active" (heavy noise / a 20 % off prior: it
is not, the LMI constraint binds); each instance uses a different noise seed. The table states
the fraction of instances whose OLS estimate is inconsistent.
"warm" re-solves after 3 new samples, warm-started from the previous solution (the node's case).
"lmi fast" is the default: the semismooth Newton method, the interior point as its fallback;
"lmi fast IP" forces the interior point (``use_active_set=False``).

Run: .venv/bin/python benchmarks/bench_solvers.py [--instances N] [--threads K]
BLAS is limited to one thread by default (--threads): on small matrices OpenBLAS's threads
cost far more than they save, especially on a shared machine.
"""

from __future__ import annotations

import argparse
import glob
import sys

from inertia_id_ros.threads import add_threads_option, apply_threads_option


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--instances",
        type=int,
        default=40,
        help="problem instances per case for the fast methods (default 40)",
    )
    parser.add_argument(
        "--slow-instances",
        type=int,
        default=8,
        help="instances for cvxpy per-solve, manifold, pointmass, cad_prior",
    )
    add_threads_option(parser)
    return parser.parse_args()


ARGS = _parse()
apply_threads_option(ARGS.threads)

import numpy as np  # noqa: E402  (after the BLAS thread settings)
import pinocchio as pin  # noqa: E402

from inertia_id_ros.core.inertia import theta_from_inertia  # noqa: E402
from inertia_id_ros.solvers import Problem, solve  # noqa: E402

PAYLOAD_THETA = theta_from_inertia(1.3, np.array([0.02, -0.01, 0.05]), np.diag([4e-3, 5e-3, 3e-3]))
PAYLOAD_OFFSET = np.array([0.5, -0.3, 1.0, 0.02, 0.01, -0.03])


def payload_rows(n: int, rng: np.random.Generator) -> np.ndarray:
    rows = []
    for _ in range(n):
        v, a = rng.normal(size=6), 3.0 * rng.normal(size=6)
        direction = rng.normal(size=3)
        a[:3] += 9.81 * direction / np.linalg.norm(direction)
        rows.append(np.hstack([pin.bodyRegressor(pin.Motion(v), pin.Motion(a)), np.eye(6)]))
    return np.vstack(rows)


def panda_model() -> pin.Model:
    paths = [
        p
        for entry in sys.path
        for p in glob.glob(
            f"{entry}/cmeel.prefix/share/example-robot-data/robots/panda_description/urdf/panda.urdf"
        )
    ]
    model = pin.buildModelFromUrdf(paths[0])
    fingers = [model.getJointId(name) for name in model.names if "finger" in name]
    return pin.buildReducedModel(model, fingers, pin.neutral(model))


def panda_rows(model: pin.Model, n: int, rng: np.random.Generator) -> np.ndarray:
    data = model.createData()
    rows = []
    for _ in range(n):
        q = rng.uniform(model.lowerPositionLimit, model.upperPositionLimit)
        rows.append(
            pin.computeJointTorqueRegressor(
                model, data, q, rng.normal(size=model.nv), 2.0 * rng.normal(size=model.nv)
            ).copy()
        )
    return np.vstack(rows)


def make_instances(
    kind: str, noise: float, count: int, model: pin.Model | None, prior_noise: float = 0.2
):
    """``count`` triples ``(problem, updated problem, truth)``."""
    instances = []
    for seed in range(count):
        rng = np.random.default_rng(seed)
        if kind == "payload":
            truth = np.concatenate([PAYLOAD_THETA, PAYLOAD_OFFSET])
            Y, Y_new = payload_rows(100, rng), payload_rows(3, rng)
            # a CAD-like prior (20 % off, no offset) for cad_prior; not in the objective
            options = dict(n_bodies=1, prior=np.concatenate([1.2 * PAYLOAD_THETA, np.zeros(6)]))
        else:
            truth = np.concatenate(
                [model.inertias[j].toDynamicParameters() for j in range(1, model.njoints)]
            )
            prior = truth * (
                1.0 + prior_noise * np.random.default_rng(1000 + seed).normal(size=truth.size)
            )
            Y, Y_new = panda_rows(model, 60, rng), panda_rows(model, 3, rng)
            options = dict(n_bodies=7, prior=prior, prior_weight=10.0)
        y = Y @ truth + noise * rng.normal(size=Y.shape[0])
        y_new = Y_new @ truth + noise * rng.normal(size=Y_new.shape[0])
        problem = Problem.from_regressor(Y, y, **options)
        instances.append((problem, problem.add_rows(Y_new, y_new), truth))
    return instances


FAST = [
    ("ols", "ols", {}),
    ("lmi fast", "lmi", {}),
    ("lmi cvxpy (DPP once)", "lmi", dict(backend="cvxpy")),
]
SLOW = [
    ("lmi cvxpy per solve", "lmi", dict(backend="cvxpy_per_solve")),
    ("manifold", "manifold", {}),
    ("pointmass", "pointmass", {}),
    ("cad_prior", "cad_prior", {}),
]


def run_case(kind: str, case: str, instances, slow_count: int) -> dict[str, dict]:
    results = {}
    for label, method, options in FAST + SLOW:
        subset = instances if (label, method, options) in FAST else instances[:slow_count]
        options = (
            dict(options, points_per_axis=3)
            if method == "pointmass" and kind == "panda"
            else options
        )
        times, errors, consistent, iterations, algorithms = [], [], [], [], []
        solve(subset[0][0], method, **options)  # warm-up: imports, cvxpy compilation
        for problem, _, truth in subset:
            solution = solve(problem, method, **options)
            times.append(solution.solve_time)
            algorithms.append(solution.info.get("algorithm"))
            nb = 10 * problem.n_bodies
            errors.append(np.linalg.norm(solution.x[:nb] - truth[:nb]) / np.linalg.norm(truth[:nb]))
            consistent.append(solution.fully_consistent)
            iterations.append(solution.iterations)
        results[label] = dict(
            times=np.array(times),
            error=float(np.median(errors)),
            consistent=float(np.mean(consistent)),
            iterations=float(np.median(iterations)),
            n=len(subset),
            algorithms=algorithms,
        )
    # warm start (sliding window): previous solution -> 3 new samples
    for label, method, options in (
        ("lmi fast, warm", "lmi", {}),
        ("lmi fast IP, cold", "lmi", dict(use_active_set=False)),
        ("lmi fast IP, warm", "lmi", dict(use_active_set=False)),
    ):
        times, iterations = [], []
        for problem, updated, _ in instances:
            previous = solve(problem, method, **options) if "warm" in label else None
            solution = solve(updated, method, initvals=previous, **options)
            times.append(solution.solve_time)
            iterations.append(solution.iterations)
        results[label] = dict(
            times=np.array(times),
            error=float("nan"),
            consistent=float("nan"),
            iterations=float(np.median(iterations)),
            n=len(instances),
        )
    inconsistent = np.mean([not solve(p, "ols").fully_consistent for p, _, _ in instances])
    results["_ols_inconsistent"] = float(inconsistent)
    return results


def print_table(kind: str, case: str, results: dict[str, dict]) -> None:
    print(
        f"\n== {kind}, constraint {case}"
        + (
            f" (OLS inconsistent in {100 * results.pop('_ols_inconsistent'):.0f} % of instances)"
            if "_ols_inconsistent" in results
            else ""
        )
    )
    print(
        f"{'method':26s} {'n':>3s} {'median ms':>10s} {'p99 ms':>9s} {'iters':>6s} "
        f"{'body err':>9s} {'consistent':>10s}"
    )
    for label, r in results.items():
        print(
            f"{label:26s} {r['n']:3d} {1e3 * np.median(r['times']):10.3f} "
            f"{1e3 * np.percentile(r['times'], 99):9.3f} {r['iterations']:6.0f} "
            f"{r['error']:9.2e} {r['consistent']:10.2f}"
        )
    fast = np.median(results["lmi fast"]["times"])
    print(
        f"lmi fast is {np.median(results['lmi cvxpy (DPP once)']['times']) / fast:.1f}x faster "
        f"than cvxpy DPP-built-once and "
        f"{np.median(results['lmi cvxpy per solve']['times']) / fast:.1f}x faster than cvxpy "
        f"built per solve (medians); median {1e3 * fast:.3f} ms cold, "
        f"{1e3 * np.median(results['lmi fast, warm']['times']):.3f} ms warm; "
        f"{results['lmi fast']['algorithms'].count('active_set')} of "
        f"{sum(a is not None for a in results['lmi fast']['algorithms'])} constrained solves "
        f"certified by the Newton method"
    )


def main() -> None:
    model = panda_model()
    print(
        f"BLAS threads: {ARGS.threads}; instances: {ARGS.instances} "
        f"(slow methods: {ARGS.slow_instances}); times are Solution.solve_time"
    )
    for kind, cases in (
        ("payload", (("inactive", 0.002, 0.2), ("active", 3.0, 0.2))),
        ("panda", (("inactive", 0.0, 0.0), ("active", 1.0, 0.2))),
    ):
        for case, noise, prior_noise in cases:
            instances = make_instances(kind, noise, ARGS.instances, model, prior_noise)
            print_table(kind, case, run_case(kind, case, instances, ARGS.slow_instances))


if __name__ == "__main__":
    main()
