"""An effectively planar log of the simulated Panda arm: joints 2, 3 and 4 swing, the others sit
at home within their encoders' noise."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from inertia_id_ros.chain.links import JointTorqueData, LinkModel, predict_torques
from inertia_id_ros.sim.payload import PANDA_ARM_JOINTS, PANDA_HOME

ENCODER_STEP = 2e-4
"""The simulated encoders' resolution (rad)."""
STILL = ("panda_joint1", "panda_joint5", "panda_joint6", "panda_joint7")
"""The joints that do not move."""


def planar_log(urdf: str | Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(t (N,) s, recorded positions (N, 7) rad, torques (N, 7) N m)``: 12 s at 100 Hz; joints
    2, 3 and 4 along multisines, the :data:`STILL` ones at home; positions with 1e-4 rad of noise
    quantised to :data:`ENCODER_STEP`; the URDF's torques of the exact motion with 0.05 N m of
    noise."""
    panda = LinkModel.from_urdf(urdf, PANDA_ARM_JOINTS)
    rng = np.random.default_rng(4)
    t = np.arange(0.0, 12.0, 0.01)
    q, dq, ddq = (np.tile(PANDA_HOME, (t.size, 1)).astype(float), *np.zeros((2, t.size, 7)))
    for j in (1, 2, 3):
        for a, f, phase in zip(rng.uniform(0.1, 0.3, 3), (0.1, 0.23, 0.37), rng.uniform(0, 6, 3)):
            w = 2 * np.pi * f * (1 + 0.3 * j)
            q[:, j] += a * np.sin(w * t + phase)
            dq[:, j] += a * w * np.cos(w * t + phase)
            ddq[:, j] -= a * w * w * np.sin(w * t + phase)
    exact = JointTorqueData(q, dq, ddq, np.zeros_like(q), panda.joint_names)
    tau = predict_torques(panda, panda.prior, exact) + 0.05 * rng.normal(size=q.shape)
    recorded = np.round((q + rng.normal(scale=1e-4, size=q.shape)) / ENCODER_STEP) * ENCODER_STEP
    return t, recorded, tau
