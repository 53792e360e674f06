"""The simulated Panda arm's truth for the offline fits' tests: links off the URDF's, drives."""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from inertia_id_ros.core.robots import example_robot_urdf, load_model, reduce_model
from inertia_id_ros.sim.payload import PANDA_ARM_JOINTS, PANDA_HOME

DRIVE_TRUTH = {
    "viscous": np.linspace(0.2, 0.5, 7),
    "coulomb": np.linspace(0.8, 0.3, 7),
    "offset": np.linspace(-0.2, 0.2, 7),
    "armature": np.full(7, 0.1),
}
"""Per joint of the arm: viscous (N m s/rad), Coulomb (N m), offset (N m), armature (kg m²)."""


def panda_truth_model() -> pin.Model:
    """The Panda arm (fingers locked at zero) with links 10-20 % off the URDF's."""
    model = reduce_model(load_model(example_robot_urdf("panda")), PANDA_ARM_JOINTS)
    rng = np.random.default_rng(7)
    for j in range(1, model.njoints):
        inertia = model.inertias[j]
        model.inertias[j] = pin.Inertia(
            inertia.mass * rng.uniform(0.8, 1.2),
            inertia.lever + rng.normal(0.0, 0.01, 3),
            inertia.inertia * rng.uniform(0.8, 1.2),
        )
    return model


def one_path_chirp(t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every joint along one path: a chirp 0.05 -> 0.5 Hz over 20 s around the home pose
    (joint positions correlated 1.0), as vendor logs often are."""
    f0, rate = 0.05, 0.45 / 20.0
    phase = 2 * np.pi * (f0 * t + 0.5 * rate * t**2)
    omega = 2 * np.pi * (f0 + rate * t)
    s, ds = np.sin(phase), np.cos(phase) * omega
    dds = -np.sin(phase) * omega**2 + np.cos(phase) * 2 * np.pi * rate
    amplitude = np.array([0.5, 0.3, 0.4, 0.4, 0.5, 0.4, 0.6])
    return (PANDA_HOME + np.outer(s, amplitude), np.outer(ds, amplitude), np.outer(dds, amplitude))
