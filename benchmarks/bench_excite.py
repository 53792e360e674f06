"""Benchmark of exciting-motion design: designed motion vs the best of random Fourier motions.

Cases (example-robot-data, ``--max-acceleration 3.0``, start at the middle of the limits):
UR5 payload beyond ``tool0`` (6 joints, 15 s), Panda payload beyond ``panda_link8`` (7 joints,
15 s), Panda links (7 joints, 30 s). For each, side by side in one run:

1. the design (:func:`inertia_id_ros.motion.design.design_excitation`): wall-clock time and the
   largest excess over every limit (position with margin, velocity, acceleration) on the output
   samples and on the quintic interpolation at 1 kHz (<= 1e-6 required); with the self-collision
   constraint (example-robot-data's SRDF, convex hulls, margin 10 mm; ``--no-collision`` drops
   it), the smallest distance of the design and of the best random motion (which ignores it);
2. the reference: the best of 30 random 5-harmonic rest-to-rest Fourier motions (seeds 0..29,
   :func:`inertia_id_ros.motion.design.random_fourier_motion`), each joint scaled as far as the
   same limits allow, same start and duration; both scored by the same evaluator on their 100 Hz
   samples: payload, the largest predicted standard error of the 6 inertia parameters (noise
   0.1 N and 0.005 N·m per sample at 100 Hz); links, the predicted held-out joint-torque RMS
   error of the identified base parameters (0.1 N·m per sample at 100 Hz; judged by the
   identification itself in ``bench_links_design_outcome.py``). Ratio designed / best random
   (<= 0.5 required);
3. payloads only: the demo's payload (1.5 kg box,
   :func:`inertia_id_ros.sim.payload.default_payload_theta`) identified by the ``lmi`` method
   from simulated F/T data at 1 kHz along the designed motion (the demo's noise: 0.1 N,
   0.005 N·m, joint positions 1e-5 rad, velocities 5e-4 rad/s; F/T offset estimated), errors of
   mass (%), COM (mm) and inertia about the COM (relative Frobenius norm, %); same for the best
   random motion.

Targets: design <= 60 s (payload), <= 300 s (links) on the 2-core machine.

Run: .venv/bin/python benchmarks/bench_excite.py [--cases ur5_payload,panda_payload,panda_links]
[--random 30].
BLAS threads as ``inertia-id`` sets them (:func:`inertia_id_ros.threads.limit_threads`).
"""

from __future__ import annotations

from inertia_id_ros.threads import limit_threads

limit_threads()

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402  (after the BLAS thread settings)

from inertia_id_ros.core.inertia import inertia_from_theta  # noqa: E402
from inertia_id_ros.core.regressors import payload_regressor_batch  # noqa: E402
from inertia_id_ros.core.robots import (  # noqa: E402
    example_robot_data_dir,
    example_robot_urdf,
    load_model,
)
from inertia_id_ros.motion.collision import CollisionChecker  # noqa: E402
from inertia_id_ros.motion.design import DesignResult, design_excitation  # noqa: E402
from inertia_id_ros.motion.fourier import random_fourier_motion  # noqa: E402
from inertia_id_ros.motion.objectives import ObjectiveSettings  # noqa: E402
from inertia_id_ros.motion.trajectory import ExcitationTrajectory  # noqa: E402
from inertia_id_ros.sim.payload import (  # noqa: E402
    DEFAULT_WRENCH_NOISE_STD,
    PANDA_ARM_JOINTS,
    PANDA_FLANGE,
    UR5_ARM_JOINTS,
    PayloadSimulator,
    default_payload_theta,
)
from inertia_id_ros.solvers import Problem, solve  # noqa: E402

CASES = {  # name: (robot, joints, target, sensor frame, duration s, design time target s)
    "ur5_payload": ("ur5", UR5_ARM_JOINTS, "payload", "tool0", 15.0, 60.0),
    "panda_payload": ("panda", PANDA_ARM_JOINTS, "payload", PANDA_FLANGE, 15.0, 60.0),
    "panda_links": ("panda", PANDA_ARM_JOINTS, "links", None, 30.0, 300.0),
}
SRDFS = {"ur5": "ur_description/srdf/ur5.srdf", "panda": "panda_description/srdf/panda.srdf"}
MAX_ACCELERATION = 3.0
SIM_RATE = 1000.0  # Hz, the demo simulator's


def worst_violation(result: DesignResult, trajectory: ExcitationTrajectory) -> float:
    """Largest excess over any limit on the samples and on the 1 kHz interpolation."""
    limits = result.limits
    excess = max(limits.violations(trajectory).values())
    t = np.linspace(0.0, trajectory.duration, int(trajectory.duration * 1000.0) + 1)
    q, dq, ddq = trajectory.sample(t)
    dense = ExcitationTrajectory(t, trajectory.joint_names, q, dq, ddq)
    return max(excess, max(limits.violations(dense).values()))


def identify(
    model, sensor_frame: str, joints, trajectory: ExcitationTrajectory, seed: int
) -> tuple[float, float, float]:
    """(mass error %, COM error mm, inertia error %) of the lmi fit to simulated F/T data."""
    truth = default_payload_theta()
    simulator = PayloadSimulator(model, sensor_frame, truth, trajectory.sample, joints)
    t = np.arange(0.0, trajectory.duration, 1.0 / SIM_RATE)
    rng = np.random.default_rng(seed)
    q, dq, wrench = simulator.measure(t, rng)
    _, _, ddq = trajectory.sample(t)
    V, A = simulator.kinematics.compute_batch(q, dq, ddq)
    Y = payload_regressor_batch(V, A)
    weights = np.tile(1.0 / DEFAULT_WRENCH_NOISE_STD**2, t.size)
    problem = Problem.from_regressor(
        Y.reshape(-1, 16), wrench.reshape(-1), n_bodies=1, weights=weights
    )
    theta = np.asarray(solve(problem, method="lmi").x)[:10]
    m, c, inertia = inertia_from_theta(theta)
    m0, c0, inertia0 = inertia_from_theta(truth)
    return (
        100.0 * abs(m - m0) / m0,
        1e3 * float(np.linalg.norm(c - c0)),
        100.0 * float(np.linalg.norm(inertia - inertia0) / np.linalg.norm(inertia0)),
    )


def run_case(name: str, n_random: int, with_collision: bool) -> dict[str, object]:
    robot, joints, target, frame, duration, time_target = CASES[name]
    model = load_model(example_robot_urdf(robot))
    collision = (
        CollisionChecker(example_robot_urdf(robot), example_robot_data_dir() / SRDFS[robot])
        if with_collision
        else None
    )
    began = time.perf_counter()
    result = design_excitation(
        model,
        joints,
        target,
        duration,
        settings=ObjectiveSettings(sensor_frame=frame),
        max_acceleration=MAX_ACCELERATION,
        seed=0,
        collision=collision,
    )
    design_time = time.perf_counter() - began
    start = result.trajectory.q[0]
    evaluator = result.evaluator
    randoms = [
        random_fourier_motion(result.limits, start, duration, 5, seed) for seed in range(n_random)
    ]
    scores = [evaluator.criterion_of(motion) for motion in randoms]
    best = int(np.argmin(scores))
    designed = evaluator.criterion_of(result.trajectory)
    row: dict[str, object] = {
        "case": name,
        "objective": (
            "max inertia std (kg m^2)" if target == "payload" else "pred. torque RMS (N m)"
        ),
        "designed": designed,
        "best_random": scores[best],
        "ratio": designed / scores[best],
        "violation": worst_violation(result, result.trajectory),
        "random_violation": worst_violation(result, randoms[best]),
        "design_s": design_time,
        "time_target_s": time_target,
        "iterations": result.stats.iterations,
        "clearance_mm": 1e3 * result.clearance.distance if result.clearance else float("nan"),
        "random_clearance_mm": (
            1e3 * collision.clearance(randoms[best]).distance if collision else float("nan")
        ),
    }
    if target == "payload":
        row["fit_designed"] = identify(model, frame, joints, result.trajectory, seed=1)
        row["fit_random"] = identify(model, frame, joints, randoms[best], seed=1)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--random", type=int, default=30, help="random motions (30)")
    parser.add_argument(
        "--no-collision",
        action="store_true",
        help="design without the self-collision constraint (SRDF pairs)",
    )
    args = parser.parse_args()
    rows = [run_case(name, args.random, not args.no_collision) for name in args.cases.split(",")]
    print(
        f"\n{'case':<15}{'objective':<26}{'designed':>11}{'best rand':>11}{'ratio':>7}"
        f"{'max excess':>12}{'clear mm':>9}{'rand mm':>9}{'design s':>10}{'target s':>9}"
        f"{'iters':>7}"
    )
    for r in rows:
        print(
            f"{r['case']:<15}{r['objective']:<26}{r['designed']:>11.4g}{r['best_random']:>11.4g}"
            f"{r['ratio']:>7.3f}{r['violation']:>12.2e}{r['clearance_mm']:>9.1f}"
            f"{r['random_clearance_mm']:>9.1f}{r['design_s']:>10.1f}"
            f"{r['time_target_s']:>9.0f}{r['iterations']:>7}"
        )
    payload_rows = [r for r in rows if "fit_designed" in r]
    if payload_rows:
        print(f"\nidentified payload (lmi, simulated F/T at {SIM_RATE:g} Hz, demo noise):")
        print(f"{'case':<15}{'motion':<13}{'mass %':>8}{'COM mm':>8}{'inertia %':>10}")
        for r in payload_rows:
            for motion in ("designed", "random"):
                m, c, i = r[f"fit_{motion}"]
                print(f"{r['case']:<15}{motion:<13}{m:>8.3f}{c:>8.2f}{i:>10.2f}")
    print(
        "\nrequired: ratio <= 0.5, max excess <= 1e-6, design time <= target; payload within "
        "mass 1 %, COM 3 mm, inertia 10 %"
    )


if __name__ == "__main__":
    main()
