"""Benchmark: a wrist F/T calibration fitted jointly with an unknown payload of weighed mass.

The question behind ``calibrate-ft``'s joint mode (issue 32): with a wrist sensor whose factory
calibration drifted (:func:`inertia_id_ros.sim.ft_errors.draw_drift`: gains, cross-coupling,
offsets) and a payload known only by its weighed mass, can the sensor's calibration ``C`` and
the payload's COM and inertia be fitted together? Alternating least squares, each step exact:
the payload's consistent fit (``lmi``, with the sensor's offset) on the readings through the
current ``C``, scaled to the weighed mass (the scale ambiguity ``C theta`` removed), then ``C``
fitted to that payload's wrench (:func:`~inertia_id_ros.chain.ft_calibration.fit_ft_calibration`,
ridge toward the factory's, λ by cross-validation), until the payload changes by < 1e-7.

The simulated Panda, 60 s at 100 Hz, the default payload (1.5 kg); per seed: iterations, time,
the recovered force and torque gains against the truth, the worst entry of ``C``, the payload's
COM (mm) and inertia (relative Frobenius) errors.

Run: .venv/bin/python benchmarks/calibration_wrist_joint.py [--kind full|gains] [--seeds N]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from inertia_id_ros.chain.ft_calibration import fit_ft_calibration, smooth_readings
from inertia_id_ros.core.inertia import inertia_from_theta
from inertia_id_ros.core.kinematics import SensorKinematics
from inertia_id_ros.core.robots import example_robot_urdf, load_model
from inertia_id_ros.formats.data import JointStates, PayloadRecording, Wrenches, with_derivatives
from inertia_id_ros.modes.payload import payload_rows
from inertia_id_ros.sim.ft_errors import draw_drift
from inertia_id_ros.sim.payload import PayloadSimulator
from inertia_id_ros.solvers import Problem, solve

FRAME, RATE, DURATION, HALF_WIDTH = "panda_link8", 100.0, 60.0, 0.05


def joint_fit(
    readings: np.ndarray, rows: np.ndarray, mass: float, kind: str
) -> tuple[np.ndarray, np.ndarray, int]:
    """``(C (6, 6), theta (10,), iterations)`` of the alternating fit (module docstring)."""
    stacked = rows.reshape(-1, rows.shape[-1])
    gram = stacked.T @ stacked
    matrix, offset, previous = np.eye(6), np.zeros(6), None
    for iteration in range(1, 301):
        calibrated = (readings @ matrix.T + offset).ravel()
        problem = Problem(
            gram=gram,
            moment=stacked.T @ calibrated,
            yty=float(calibrated @ calibrated),
            n_rows=calibrated.size,
            n_bodies=1,
        )
        x = solve(problem, "lmi").x
        theta = x[:10] * (mass / x[0])
        calibration = fit_ft_calibration(readings, rows[:, :, :10] @ theta, kind=kind)
        matrix, offset = calibration.matrix, calibration.offset
        if previous is not None and np.linalg.norm(theta - previous) <= 1e-7 * np.linalg.norm(
            theta
        ):
            break
        previous = theta
    return matrix, theta, iteration


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=("full", "gains"), default="full")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    kinematics = SensorKinematics(load_model(str(example_robot_urdf("panda"))), FRAME)
    print(f"kind {args.kind}: gains fx fy fz tx ty tz recovered / true")
    for seed in range(args.seeds):
        sim = PayloadSimulator.panda(seed=seed)
        rng = np.random.default_rng(seed)
        t = np.arange(0.0, DURATION, 1.0 / RATE)
        q, dq = sim.measure_joints(t, rng)
        drift = draw_drift([FRAME], rng)[0]
        logged = sim.measure_wrench(t, rng) @ drift.gain.T + drift.offset
        states = with_derivatives(JointStates(t, tuple(sim.joint_names), q, dq), HALF_WIDTH)
        recording = PayloadRecording(states, Wrenches(t, logged, FRAME), "simulated")
        _, rows, wrench = payload_rows(kinematics, recording)
        readings = smooth_readings(wrench, 1.0 / RATE, HALF_WIDTH)
        started = time.perf_counter()
        matrix, theta, iterations = joint_fit(readings, rows, float(sim.true_theta[0]), args.kind)
        elapsed = time.perf_counter() - started
        truth = np.linalg.inv(drift.gain)
        _, com, inertia = inertia_from_theta(theta)
        _, true_com, true_inertia = inertia_from_theta(sim.true_theta)
        print(
            f"seed {seed}: {iterations} iterations, {elapsed:.1f} s; gains "
            + " ".join(f"{a:.2f}/{b:.2f}" for a, b in zip(np.diag(matrix), np.diag(truth)))
            + f"; worst |C - C_true| {np.abs(matrix - truth).max():.2f}; COM "
            f"{1e3 * np.linalg.norm(com - true_com):.1f} mm; inertia "
            f"{100 * np.linalg.norm(inertia - true_inertia) / np.linalg.norm(true_inertia):.0f} %"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
