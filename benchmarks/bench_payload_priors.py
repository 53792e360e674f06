"""Benchmark: point masses and CAD priors on simulated payloads, against lmi and OLS.

Data: the simulated Panda carrying the default payload (1.5 kg box, ``sim/payload.py``) with the
demo's noise (F/T 0.1 N / 0.005 N m, encoders 1e-5 rad / 5e-4 rad/s), 20 s at 1 kHz, through the
payload estimator as fit-payload runs it (joint states differentiated, F/T offset estimated):
  rich  the default exciting trajectory (10 s period, 80 % of the velocity limits);
  poor  a slow one (30 s period, 10 % of the velocity limits): the inertia is barely excited.
Methods: ``ols``, ``lmi``, ``pointmass`` (adaptive placement, the default), ``pointmass grid``
(the former placement: a fixed 4^3 grid in a 50 cm cube at the sensor origin), ``cad_prior`` with
a CAD prior off by 20 % (mass +-20 %, COM moved by 20 % of its distance from the sensor origin in
a random direction, inertia about the COM scaled by +-20 %; seeded): the default
(``prior_std=0.2``), other assumed uncertainties, the least-squares-set form
(``prior_std=None``), and the default with a prior 50 % off (worse than it assumes).
Errors (mean over seeds): mass (%), COM (mm), inertia about the COM (relative Frobenius norm, %);
time: median solve time (ms, cold: no warm start); "limited": seeds where pointmass reports that
its points limit the fit. Then pointmass warm-started on a sliding window (the node's case).

Run: .venv/bin/python benchmarks/bench_payload_priors.py [--seeds N] [--threads K]
"""

from __future__ import annotations

import argparse

from inertia_id_ros.threads import add_threads_option, apply_threads_option


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="simulated data sets per case (5)")
    add_threads_option(parser)
    return parser.parse_args()


ARGS = _parse()
apply_threads_option(ARGS.threads)

import numpy as np  # noqa: E402  (after the BLAS thread settings)

from inertia_id_ros.core.inertia import inertia_from_theta, theta_from_inertia  # noqa: E402
from inertia_id_ros.core.kinematics import SensorKinematics  # noqa: E402
from inertia_id_ros.core.robots import example_robot_urdf, load_model  # noqa: E402
from inertia_id_ros.online.payload_estimator import EstimatorConfig, PayloadEstimator  # noqa: E402
from inertia_id_ros.sim.payload import (  # noqa: E402
    PANDA_ARM_JOINTS,
    PANDA_FLANGE,
    ExcitingTrajectory,
    PayloadSimulator,
)

DURATION_SEC = 20.0
RATE_HZ = 1000.0
PRIOR_ERROR = 0.2
CASES = {"rich": {}, "poor": dict(period=30.0, velocity_fraction=0.1)}
METHODS = [
    ("ols", "ols", {}, PRIOR_ERROR),
    ("lmi", "lmi", {}, PRIOR_ERROR),
    ("pointmass", "pointmass", {}, PRIOR_ERROR),
    (
        "pointmass grid",
        "pointmass",
        dict(boxes=[(-0.25 * np.ones(3), 0.25 * np.ones(3))], points_per_axis=4),
        PRIOR_ERROR,
    ),
    ("cad_prior (20 % off)", "cad_prior", {}, PRIOR_ERROR),
    ("  prior_std 0.1", "cad_prior", dict(prior_std=0.1), PRIOR_ERROR),
    ("  prior_std 0.4", "cad_prior", dict(prior_std=0.4), PRIOR_ERROR),
    ("  LS-set form", "cad_prior", dict(prior_std=None), PRIOR_ERROR),
    ("cad_prior (50 % off)", "cad_prior", {}, 0.5),
]
"""(label, method, options, how far off the prior is)."""


def off_prior(theta: np.ndarray, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """A CAD prior ``fraction`` off: mass and inertia about the COM scaled by ``1 +- fraction``,
    COM moved by ``fraction`` of its distance from the origin in a random direction."""
    mass, com, inertia = inertia_from_theta(theta)
    direction = rng.normal(size=3)
    signs = rng.choice([-1.0, 1.0], size=2)
    return theta_from_inertia(
        mass * (1 + signs[0] * fraction),
        com + fraction * np.linalg.norm(com) * direction / np.linalg.norm(direction),
        inertia * (1 + signs[1] * fraction),
    )


def errors(theta: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """(mass %, COM mm, inertia %)."""
    mass, com, inertia = inertia_from_theta(theta)
    true_mass, true_com, true_inertia = inertia_from_theta(truth)
    return np.array(
        [
            100 * abs(mass - true_mass) / true_mass,
            1e3 * np.linalg.norm(com - true_com),
            100 * np.linalg.norm(inertia - true_inertia) / np.linalg.norm(true_inertia),
        ]
    )


def simulate(model, case: str, seed: int):
    """(simulator, t, q, dq, wrench) of one data set."""
    trajectory = ExcitingTrajectory.for_model(model, PANDA_ARM_JOINTS, seed=seed, **CASES[case])
    sim = PayloadSimulator.panda(trajectory=trajectory, seed=seed)
    t = np.arange(int(DURATION_SEC * RATE_HZ)) / RATE_HZ
    q, dq, wrench = sim.measure(t, np.random.default_rng(1000 + seed))
    return sim, t, q, dq, wrench


def feed(
    model, sim, t, q, dq, wrench, prior, warm_start: bool, until: float = np.inf
) -> PayloadEstimator:
    estimator = PayloadEstimator(
        SensorKinematics(model, PANDA_FLANGE),
        EstimatorConfig(
            window_sec=DURATION_SEC + 1.0,
            window_capacity=t.size,
            prior=prior,
            warm_start=warm_start,
        ),
    )
    add(estimator, sim, t, q, dq, wrench, t < until)
    return estimator


def add(estimator, sim, t, q, dq, wrench, mask) -> None:
    estimator.add_joint_states(t[mask], list(sim.joint_names), q[mask], dq[mask])
    estimator.add_wrenches(t[mask], wrench[mask])
    estimator.process()


def run_case(model, case: str, seeds: int) -> dict[str, dict]:
    results = {label: dict(errors=[], times=[], limited=0) for label, _, _, _ in METHODS}
    results["prior (20 % off)"] = dict(errors=[], times=[], limited=0)
    for seed in range(seeds):
        sim, *data = simulate(model, case, seed)
        estimators = {}
        for fraction in sorted({fraction for _, _, _, fraction in METHODS}):
            prior = off_prior(sim.true_theta, fraction, np.random.default_rng(seed))
            estimators[fraction] = feed(model, sim, *data, prior=prior, warm_start=False)
            if fraction == PRIOR_ERROR:
                results["prior (20 % off)"]["errors"].append(errors(prior, sim.true_theta))
        for label, method, options, fraction in METHODS:
            estimator = estimators[fraction]
            estimator.configure_solver(method, options)
            estimate = estimator.solve(require_consistent=False)
            results[label]["errors"].append(errors(estimate.theta, sim.true_theta))
            results[label]["times"].append(estimate.solve_time)
            results[label]["limited"] += "approximation limits" in estimate.message
    return results


def print_case(case: str, results: dict[str, dict], seeds: int) -> dict[str, np.ndarray]:
    print(
        f"\n== {case} excitation: {seeds} seeds, {DURATION_SEC:g} s at {RATE_HZ:g} Hz "
        f"(errors: mean over seeds)"
    )
    print(
        f"{'method':24s} {'mass err %':>10s} {'COM err mm':>10s} {'inertia err %':>13s} "
        f"{'median ms':>9s} {'limited':>7s}"
    )
    means = {}
    for label, r in results.items():
        mean = np.mean(r["errors"], axis=0)
        means[label] = mean
        time = f"{1e3 * np.median(r['times']):9.2f}" if r["times"] else f"{'-':>9s}"
        limited = f"{r['limited']:7d}" if label.startswith("pointmass") else f"{'-':>7s}"
        print(f"{label:24s} {mean[0]:10.3f} {mean[1]:10.3f} {mean[2]:13.2f} {time} {limited}")
    return means


def warm_start_timing(model, seeds: int) -> None:
    """pointmass on the window at 18 s (cold), then at 20 s warm-started from it."""
    cold, warm = [], []
    for seed in range(seeds):
        sim, t, q, dq, wrench = simulate(model, "rich", seed)
        estimator = feed(model, sim, t, q, dq, wrench, prior=None, warm_start=True, until=18.0)
        estimator.configure_solver("pointmass", {})
        cold.append(estimator.solve().solve_time)
        add(estimator, sim, t, q, dq, wrench, t >= 18.0)
        warm.append(estimator.solve().solve_time)
    print(
        f"\npointmass on a sliding window (rich): cold {1e3 * np.median(cold):.2f} ms, "
        f"warm-started after 2 s more data {1e3 * np.median(warm):.2f} ms (medians)"
    )


def main() -> None:
    model = load_model(example_robot_urdf("panda"))
    print(f"BLAS threads: {ARGS.threads}; times are the estimate's solve_time")
    means = {
        case: print_case(case, run_case(model, case, ARGS.seeds), ARGS.seeds) for case in CASES
    }
    print("\nacceptance (inertia error, percentage points):")
    for case in CASES:
        m = means[case]
        print(
            f"  {case}: pointmass - lmi = {m['pointmass'][2] - m['lmi'][2]:+.2f} "
            f"(within 5: {'yes' if m['pointmass'][2] - m['lmi'][2] <= 5 else 'NO'}); "
            f"cad_prior - lmi = {m['cad_prior (20 % off)'][2] - m['lmi'][2]:+.2f} "
            f"(cad_prior at least as good: "
            f"{'yes' if m['cad_prior (20 % off)'][2] <= m['lmi'][2] else 'NO'})"
        )
    warm_start_timing(model, ARGS.seeds)


if __name__ == "__main__":
    main()
