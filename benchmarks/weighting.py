"""Unweighted vs per-channel weighted least squares (Gautier), payload and links, with truth.

Run: ``OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/weighting.py [--seeds N]``

Payload: the simulated Panda with the demo's payload and F/T noise (0.1 N, 0.005 N·m: the force
rows are 20 times noisier than the torque rows), 20 s at 250 Hz, the node's estimator
(``weighting`` of :class:`~inertia_id_ros.online.payload_estimator.EstimatorConfig`); errors of
mass, COM and inertia about the COM (relative Frobenius), mean over seeds. Links: the simulated
1 kHz Panda arm (:func:`~inertia_id_ros.sim.torques.panda_arm_recording`, torque noise 0.04-0.15
N·m per joint),
60/40 split, filter and prior weight by cross-validation; held-out torque RMS and the error
against the noise-free torques ("model").
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from inertia_id_ros.chain.differentiation import derive_torque_data
from inertia_id_ros.chain.identify import identify_links
from inertia_id_ros.chain.links import predict_torques, torque_error
from inertia_id_ros.core.inertia import inertia_from_theta
from inertia_id_ros.online.payload_estimator import EstimatorConfig, PayloadEstimator
from inertia_id_ros.sim.payload import PayloadSimulator
from inertia_id_ros.sim.torques import panda_arm_recording

T0 = 1.7e9


def payload(seeds: int) -> None:
    sim = PayloadSimulator.panda()
    t = np.arange(0.0, 20.0, 1.0 / 250.0)
    mass, com, inertia = inertia_from_theta(sim.true_theta)
    print(
        f"payload: {sim.true_theta[0]:.2f} kg at the Panda's flange, 20 s at 250 Hz, F/T noise "
        f"{sim.wrench_noise_std[0]:g} N / {sim.wrench_noise_std[3]:g} N·m, {seeds} seeds"
    )
    print(f"{'weighting':<10}{'mass err %':>12}{'COM err mm':>12}{'inertia err %':>15}")
    for weighting in ("none", "channel"):
        errors = []
        for seed in range(seeds):
            rng = np.random.default_rng(seed)
            q, dq, wrench = sim.measure(t, rng)
            estimator = PayloadEstimator(
                sim.kinematics,
                EstimatorConfig(window_sec=30.0, weighting=weighting, window_capacity=t.size),
            )
            estimator.add_joint_states(T0 + t, sim.joint_names, q, dq)
            estimator.add_wrenches(T0 + t, wrench)
            estimator.process()
            estimate = estimator.solve()
            m, c, i = inertia_from_theta(estimate.theta)
            errors.append(
                (
                    100 * abs(m - mass) / mass,
                    1e3 * np.linalg.norm(c - com),
                    100 * np.linalg.norm(i - inertia) / np.linalg.norm(inertia),
                )
            )
        e = np.mean(errors, axis=0)
        print(f"{weighting:<10}{e[0]:12.4f}{e[1]:12.3f}{e[2]:15.2f}", flush=True)


def links(seeds: int) -> None:
    print("\nlinks: simulated Panda arm at 1 kHz, fit on the first 60 %, held out the last 40 %")
    print(f"{'weighting':<10}{'seed':>5}{'held-out':>10}{'model':>9}{'prior w':>10}  sigma (N·m)")
    for seed in range(seeds):
        rec = panda_arm_recording(seed=seed)
        model = rec.simulator.links
        split = int(0.6 * rec.t.size)
        train, test = slice(0, split), slice(split, None)
        for weighting in ("none", "channel"):
            ident = identify_links(
                model,
                rec.t[train],
                rec.q[train],
                rec.dq[train],
                None,
                rec.effort[train],
                weighting=weighting,
            )
            held_out = derive_torque_data(
                rec.t[test], rec.q[test], rec.dq[test], rec.effort[test], ident.differentiation
            )
            t_test, half = rec.t[test], ident.differentiation.half_width
            rows = split + np.flatnonzero(
                (t_test >= t_test[0] + half) & (t_test <= t_test[-1] - half)
            )
            predicted = predict_torques(ident.model, ident.fit.x, rec.truth.subset(rows))
            model_error = float(
                np.sqrt(np.mean((predicted - rec.simulator.true_torques(rec.t[rows])) ** 2))
            )
            error = torque_error(ident.model, ident.fit.x, held_out).overall
            sigma = (
                ""
                if ident.fit.channel_weights is None
                else " ".join(f"{s:.3f}" for s in ident.fit.channel_weights.sigma)
            )
            print(
                f"{weighting:<10}{seed:5d}{error:10.4f}{model_error:9.4f}"
                f"{ident.fit.prior_weight:10.1e}  {sigma}",
                flush=True,
            )
    print(
        "  (true torque noise: "
        + " ".join(f"{s:.3f}" for s in rec.simulator.torque_noise_std)
        + ")"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    start = time.perf_counter()
    payload(args.seeds)
    links(max(1, args.seeds // 3))
    print(f"({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
