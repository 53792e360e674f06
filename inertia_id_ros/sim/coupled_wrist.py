"""A 7-joint arm with a coupled wrist, logged motor side: the Panda whose motor 7 turns with
joint 6 as well as joint 7 (``G`` rows 6 and 7: ``[[n6, 0], [c n7, n7]]``), as a real arm's
drives log it (motor positions and velocities, currents) with the input description that reads
it (its ``transmission``), for ``fit-links`` with and without the coupled motor's terms
(``benchmarks/coupled_wrist.py``, ``test/unit/jobs/test_fit_links_coupled.py``).

The truth is written out, independently of the link model's regressor: RNEA of the true links
plus each joint's drive (:class:`~inertia_id_ros.sim.torques.JointTorqueSimulator`), plus motor
7's own torque ``I q̈_m + Fv q̇_m + Fc tanh(q̇_m / (n7 w))`` (``q_m = G[7] q``, motor side) through
``Gᵀ``. Joints 1 to 6 carry their motors' reflected inertia ``n² I`` as their armature (an
uncoupled motor is a joint drive's term), joint 7 only its joint-side friction.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from inertia_id_ros.chain.friction import DriveParameters, JointDrive
from inertia_id_ros.chain.links import JointTorqueData, LinkModel, link_channels
from inertia_id_ros.chain.motors import MOTOR_TERMS
from inertia_id_ros.core.covariance import parameter_covariance
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.sim.payload import PANDA_ARM_JOINTS, ExcitingTrajectory
from inertia_id_ros.sim.torques import (
    DEFAULT_ARM_TORQUE_NOISE_STD,
    JointTorqueSimulator,
    perturbed_links,
)

GEAR_RATIOS = (160.0, 160.0, 120.0, 120.0, 100.0, 80.0, 80.0)
"""Motor turns per joint turn of the seven motors."""
WRIST_COUPLING = 0.5
"""``c``: motor 7 turns by ``n7 (c q6 + q7)``."""
ROTOR_INERTIAS = (3e-5, 3e-5, 2e-5, 2e-5, 1.5e-5, 1e-5, 2e-5)
"""kg·m², about each motor's axis."""
MOTOR7 = {"rotor_inertia": 2e-5, "viscous": 1.5e-4, "coulomb": 0.008}
"""Motor 7's true terms, motor side: kg·m², N·m·s/rad, N·m."""
COULOMB_VELOCITY = 0.02
"""rad/s, joint side: every Coulomb sign's width (``n7`` times that for motor 7)."""
TORQUE_CONSTANTS = (0.12, 0.12, 0.1, 0.1, 0.08, 0.06, 0.06)
"""N·m/A of each motor."""
MOTORS = tuple(f"m{k}" for k in range(1, 8))
"""The motors' names in the log, in joint order."""


def transmission_matrix() -> np.ndarray:
    """``G`` (7, 7) motor rad per joint rad: ``diag(GEAR_RATIOS)`` with motor 7 coupled."""
    coupling = np.eye(7)
    coupling[6, 5] = WRIST_COUPLING
    return np.diag(GEAR_RATIOS) @ coupling


@dataclass(frozen=True)
class CoupledWristLog:
    """The written log: ``description`` (YAML, motor side, with the transmission), ``joint_npz``
    (the same log converted to joint side, canonical keys: a fit without the transmission),
    ``truth`` (exact joint states with the noisy joint torques, (N, 7)), ``t`` (N,) s,
    ``held_out_from`` (s: the fits use the samples before it) and ``simulator`` (the links and
    joint drives' truth)."""

    description: Path
    joint_npz: Path
    t: np.ndarray
    truth: JointTorqueData
    held_out_from: float
    simulator: JointTorqueSimulator


def motor7_estimate(
    model: LinkModel, x: np.ndarray, data: JointTorqueData
) -> tuple[dict[str, float], dict[str, float]]:
    """Motor 7's terms in ``model``'s estimate ``x`` fitted to ``data`` and their standard errors
    (:func:`~inertia_id_ros.core.covariance.parameter_covariance`), both motor side."""
    (motor,) = model.motors
    index = [model.parameter_names.index(f"{motor.name}.{term}") for term in MOTOR_TERMS]
    covariance = parameter_covariance(link_channels(model, data), x, model.n_joints)
    std = np.sqrt(np.diag(covariance.matrix)[index])
    return (
        motor.motor_side(dict(zip(MOTOR_TERMS, x[index]))),
        motor.motor_side(dict(zip(MOTOR_TERMS, std))),
    )


def motor7_torque(dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
    """(N, 7) joint torques (N·m) of motor 7's own torque through ``Gᵀ`` (written out)."""
    G = transmission_matrix()
    dq_m, ddq_m = dq @ G[6], ddq @ G[6]
    tau_m = (
        MOTOR7["rotor_inertia"] * ddq_m
        + MOTOR7["viscous"] * dq_m
        + MOTOR7["coulomb"] * np.tanh(dq_m / (GEAR_RATIOS[6] * COULOMB_VELOCITY))
    )
    return np.outer(tau_m, G[6])


def write_coupled_wrist_log(
    folder: str | Path,
    duration: float = 50.0,
    held_out: float = 10.0,
    rate: float = 500.0,
    seed: int = 0,
) -> CoupledWristLog:
    """``drives.npz`` and ``drives.yaml`` (motor side) and ``joints.npz`` (joint side) in
    ``folder``: ``duration`` s at ``rate`` Hz of one non-repeating exciting motion (up to
    1.25 Hz, half the velocity limits), links perturbed from the URDF, joint friction per joint
    (viscous U(0.1, 0.4) N·m·s/rad, Coulomb U(0.2, 0.6) N·m, offset N(0, 0.1²) N·m), the last
    ``held_out`` s held out; encoder noise 1e-3 rad and velocity noise 0.05 rad/s motor side,
    the Panda's torque noise joint side (``seed``)."""
    folder = Path(folder)
    rng = np.random.default_rng(seed)
    links = LinkModel.from_urdf(
        example_robot_urdf("panda"),
        PANDA_ARM_JOINTS,
        drives=JointDrive(coulomb_velocity=COULOMB_VELOCITY),
    )
    trajectory = ExcitingTrajectory.for_model(
        links.model,
        links.joint_names,
        period=duration,
        n_harmonics=int(1.25 * duration),
        seed=seed,
        velocity_fraction=0.5,
    )
    armatures = np.array(GEAR_RATIOS) ** 2 * np.array(ROTOR_INERTIAS)
    armatures[6] = 0.0  # motor 7's inertia is its own term
    drives = [
        DriveParameters(v, c, o, a, COULOMB_VELOCITY)
        for v, c, o, a in zip(
            rng.uniform(0.1, 0.4, 7), rng.uniform(0.2, 0.6, 7), rng.normal(0.0, 0.1, 7), armatures
        )
    ]
    simulator = JointTorqueSimulator(
        links,
        trajectory,
        perturbed_links(links.link_parameters(links.prior), rng),
        drives,
        torque_noise_std=DEFAULT_ARM_TORQUE_NOISE_STD,
    )
    t = np.arange(0.0, duration, 1.0 / rate)
    measured = simulator.measure(t, rng)
    tau = measured.efforts + motor7_torque(measured.velocities, measured.accelerations)
    truth = JointTorqueData(
        measured.positions, measured.velocities, measured.accelerations, tau, PANDA_ARM_JOINTS
    )
    G = transmission_matrix()
    q_motor = truth.positions @ G.T + rng.normal(0.0, 1e-3, tau.shape)
    dq_motor = truth.velocities @ G.T + rng.normal(0.0, 0.05, tau.shape)
    current = np.linalg.solve(G.T, tau.T).T / np.array(TORQUE_CONSTANTS)  # tau = Gᵀ tau_motor
    np.savez(folder / "drives.npz", q_motor=q_motor, dq_motor=dq_motor, current=current)
    np.savez(
        folder / "joints.npz",
        t=t,
        joint_names=np.array(PANDA_ARM_JOINTS),
        q=np.linalg.solve(G, q_motor.T).T,
        dq=np.linalg.solve(G, dq_motor.T).T,
        effort=(current * np.array(TORQUE_CONSTANTS)) @ G,
    )
    description = _description(rate, duration - held_out)
    path = folder / "drives.yaml"
    path.write_text(yaml.safe_dump(description, sort_keys=False))
    return CoupledWristLog(path, folder / "joints.npz", t, truth, duration - held_out, simulator)


def _description(rate: float, held_out_from: float) -> dict:
    """The input description of ``drives.npz`` (motor side, ``rate`` Hz): its transmission, the
    samples from ``held_out_from`` s held out."""
    G = transmission_matrix()
    ratios = dict(zip(MOTORS, GEAR_RATIOS))
    return {
        "streams": {"drives": {"file": "drives.npz", "rate": rate}},
        "joints": {
            "names": dict(zip(MOTORS, PANDA_ARM_JOINTS)),
            "position": {"key": "q_motor", "unit": "rad"},
            "velocity": {"key": "dq_motor"},
            "effort": {
                "key": "current",
                "unit": "A",
                "torque_constant": dict(zip(MOTORS, TORQUE_CONSTANTS)),
            },
            "transmission": {"gear_ratio": ratios, "coupling": (G / np.c_[GEAR_RATIOS]).tolist()},
        },
        "held_out_from": held_out_from,
    }
