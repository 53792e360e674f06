"""The simulated Panda arm's truth for the offline fits' tests: links off the URDF's, drives."""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from inertia_id_ros.core.robots import example_robot_urdf, load_model, reduce_model
from inertia_id_ros.sim.payload import PANDA_ARM_JOINTS

DRIVE_TRUTH = {"viscous": np.linspace(0.2, 0.5, 7), "coulomb": np.linspace(0.8, 0.3, 7),
               "offset": np.linspace(-0.2, 0.2, 7), "armature": np.full(7, 0.1)}
"""Per joint of the arm: viscous (N m s/rad), Coulomb (N m), offset (N m), armature (kg m²)."""


def panda_truth_model() -> pin.Model:
    """The Panda arm (fingers locked at zero) with links 10-20 % off the URDF's."""
    model = reduce_model(load_model(example_robot_urdf("panda")), PANDA_ARM_JOINTS)
    rng = np.random.default_rng(7)
    for j in range(1, model.njoints):
        inertia = model.inertias[j]
        model.inertias[j] = pin.Inertia(inertia.mass * rng.uniform(0.8, 1.2),
                                        inertia.lever + rng.normal(0.0, 0.01, 3),
                                        inertia.inertia * rng.uniform(0.8, 1.2))
    return model
