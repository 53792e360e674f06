"""Benchmark: the links design with and without a coupled motor in its objective.

The Panda's wrist (joints 5-7, 4 s, 3 rad/s²) whose motor 7 turns with joint 6 too (the coupling
``[[1, 0], [0.5, 1]]`` over joints 6 and 7). Per seed, the design considering the motor
(``ObjectiveSettings(coupling=...)``) and today's design without it, each ending on its own
(time limit 60 s), both scored by the coupled objective: its criterion (the predicted held-out
torque RMS error, N·m) and the motor's share of it, ``sqrt(trace(G_ref C))`` over the motor's
three base columns (N·m).

Run: .venv/bin/python benchmarks/excite_coupled.py [--seeds 8]
"""

from __future__ import annotations

import argparse

import numpy as np

from inertia_id_ros.chain.motors import MOTOR_TERMS, MotorCoupling
from inertia_id_ros.core.robots import example_robot_urdf, load_model
from inertia_id_ros.motion.design import design_excitation
from inertia_id_ros.motion.objectives import LinksObjective, ObjectiveSettings
from inertia_id_ros.motion.trajectory import ExcitationTrajectory

JOINTS = ("panda_joint5", "panda_joint6", "panda_joint7")
WRIST = MotorCoupling(JOINTS[1:], np.array([[1.0, 0.0], [0.5, 1.0]]))


def motor_share(objective: LinksObjective, trajectory: ExcitationTrajectory) -> float:
    """N·m: the part of the criterion the motor's terms' uncertainty makes."""
    names = objective.links.parameter_names
    base = [
        list(objective.columns).index(names.index(f"{WRIST.joint_names[1]}_motor.{t}"))
        for t in MOTOR_TERMS
    ]
    covariance = np.linalg.inv(objective.reduce(objective.trajectory_information(trajectory)))
    block = np.ix_(base, base)
    return float(np.sqrt(np.sum(objective.reference_gram[block] * covariance[block])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=8)
    args = parser.parse_args()
    panda = load_model(example_robot_urdf("panda"))
    common = dict(max_acceleration=3.0, time_limit=60.0)
    ratios = []
    print("seed | criterion with / without | motor's share with / without (N·m)")
    for seed in range(args.seeds):
        settings = ObjectiveSettings(coupling=WRIST)
        aware = design_excitation(
            panda, JOINTS, "links", 4.0, settings=settings, seed=seed, **common
        )
        unaware = design_excitation(panda, JOINTS, "links", 4.0, seed=seed, **common)
        objective = aware.evaluator
        assert isinstance(objective, LinksObjective)
        criteria = aware.objective, objective.criterion_of(unaware.trajectory)
        shares = (
            motor_share(objective, aware.trajectory),
            motor_share(objective, unaware.trajectory),
        )
        ratios.append((criteria[0] / criteria[1], shares[0] / shares[1]))
        print(f"{seed} | {criteria[0]:.4f} / {criteria[1]:.4f} | {shares[0]:.4f} / {shares[1]:.4f}")
    mean = np.mean(ratios, axis=0)
    worse = np.sum(np.array(ratios) > 1.0, axis=0)
    print(
        f"mean ratio with / without: criterion {mean[0]:.2f} (larger for {worse[0]} seeds), "
        f"motor's share {mean[1]:.2f} (larger for {worse[1]} seeds)"
    )


if __name__ == "__main__":
    main()
