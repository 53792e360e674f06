"""Joint drives: friction, torque offset, armature and effort scaling of one joint.

The torque a 1-DoF joint's drive adds to the rigid-body joint torque (revolute: N·m, rad, rad/s,
rad/s²; prismatic: N, m, m/s, m/s²)::

    tau_drive = viscous * dq + coulomb * s(dq) + offset + armature * ddq

with the Coulomb sign ``s(dq) = tanh(dq / coulomb_velocity)`` (smooth; ``coulomb_velocity`` in rad/s
or m/s) and the exact ``sign(dq)`` when ``coulomb_velocity == 0``. The armature is the reflected
inertia of the rotor, ``gear_ratio**2 * rotor_inertia`` (as on the MIT Cheetah leg; gyroscopic
rotor terms are neglected). Each term is either estimated (a regressor column and a parameter) or,
for the armature, known from the configured rotor inertia and gear ratio; the other terms are zero
when not estimated. A measured effort is turned into a joint torque with
``tau = effort_raw * effort_scale`` (e.g. motor current (A) x torque constant (N·m/A) x gear ratio).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

DRIVE_TERMS = ("viscous", "coulomb", "offset", "armature")
"""Per-joint drive parameters, in the order they appear in a parameter vector."""

DRIVE_TERM_UNITS = {"viscous": "N·m·s/rad", "coulomb": "N·m", "offset": "N·m", "armature": "kg·m²"}
"""Units of the drive parameters of a revolute joint (prismatic: N·s/m, N, N, kg)."""

NONNEGATIVE_DRIVE_TERMS = frozenset({"viscous", "coulomb", "armature"})
"""Drive parameters that are physically non-negative (a fit constrains them to ``>= 0``)."""


def smooth_sign(velocity: np.ndarray, coulomb_velocity: float) -> np.ndarray:
    """Coulomb sign ``tanh(velocity / coulomb_velocity)``; ``sign(velocity)`` if it is 0."""
    v = np.asarray(velocity, dtype=float)
    if coulomb_velocity < 0.0:
        raise ValueError(f"coulomb_velocity must be >= 0, got {coulomb_velocity!r}")
    if coulomb_velocity == 0.0:
        return np.sign(v)
    return np.tanh(v / coulomb_velocity)


def smooth_sign_slope(velocity: np.ndarray, coulomb_velocity: float) -> np.ndarray:
    """Derivative of :func:`smooth_sign` w.r.t. the velocity (per rad/s), same shape as
    ``velocity``: ``(1 - tanh²(velocity / coulomb_velocity)) / coulomb_velocity``; zero for the
    exact sign (its derivative almost everywhere)."""
    v = np.asarray(velocity, dtype=float)
    if coulomb_velocity == 0.0:
        return np.zeros_like(v)
    return (1.0 - smooth_sign(v, coulomb_velocity) ** 2) / coulomb_velocity


@dataclass(frozen=True)
class DriveParameters:
    """The values of one joint's drive terms (revolute units; see the module docstring): viscous
    (N·m·s/rad), Coulomb (N·m), offset (N·m), armature (kg·m²) and the Coulomb sign's width
    ``coulomb_velocity`` (rad/s, 0: exact sign). Simulation truth and estimates alike."""

    viscous: float = 0.0
    coulomb: float = 0.0
    offset: float = 0.0
    armature: float = 0.0
    coulomb_velocity: float = 0.0

    def torque(self, velocity: np.ndarray, acceleration: np.ndarray) -> np.ndarray:
        """``viscous dq + coulomb s(dq) + offset + armature ddq`` (N·m), same shape as ``dq``."""
        dq = np.asarray(velocity, dtype=float)
        return (
            self.viscous * dq
            + self.coulomb * smooth_sign(dq, self.coulomb_velocity)
            + self.offset
            + self.armature * np.asarray(acceleration, dtype=float)
        )


@dataclass(frozen=True)
class JointDrive:
    """The drive of one 1-DoF joint: which terms are estimated (see the module docstring for
    the identity) and what is known about it."""

    viscous: bool = True
    """Estimate the viscous coefficient (N·m·s/rad)."""
    coulomb: bool = True
    """Estimate the Coulomb torque (N·m)."""
    offset: bool = True
    """Estimate the constant torque offset (N·m)."""
    armature: bool = True
    """Estimate the armature (kg·m²); else ``gear_ratio**2 * rotor_inertia`` is known and its
    torque ``armature * ddq`` is subtracted."""
    coulomb_velocity: float = 0.0
    """Width of the smooth Coulomb sign (rad/s); 0: the exact sign."""
    rotor_inertia: float = 0.0
    """The rotor's inertia about its axis (kg·m²): with ``gear_ratio``, the reflected inertia
    ``gear_ratio**2 * rotor_inertia``, the armature's prior when the armature is estimated."""
    gear_ratio: float = 1.0
    """Motor turns per joint turn."""
    effort_scale: float = 1.0
    """Measured joint torque = raw effort x ``effort_scale``."""

    def __post_init__(self) -> None:
        if not self.coulomb_velocity >= 0.0:
            raise ValueError(f"coulomb_velocity must be >= 0 rad/s, got {self.coulomb_velocity!r}")
        if not self.rotor_inertia >= 0.0:
            raise ValueError(f"rotor_inertia must be >= 0 kg·m², got {self.rotor_inertia!r}")
        if not (np.isfinite(self.effort_scale) and self.effort_scale != 0.0):
            raise ValueError(f"effort_scale must be finite and nonzero, got {self.effort_scale!r}")

    @property
    def reflected_inertia(self) -> float:
        """``gear_ratio**2 * rotor_inertia`` (kg·m²), the rotor's inertia seen at the joint."""
        return self.gear_ratio**2 * self.rotor_inertia

    @property
    def terms(self) -> tuple[str, ...]:
        """The estimated terms, in :data:`DRIVE_TERMS` order."""
        return tuple(t for t in DRIVE_TERMS if getattr(self, t))

    def regressor(self, velocity: np.ndarray, acceleration: np.ndarray) -> np.ndarray:
        """(N, len(terms)) columns ``[dq, s(dq), 1, ddq]`` of the estimated terms; (N,) inputs."""
        dq = np.asarray(velocity, dtype=float)
        columns = {
            "viscous": dq,
            "coulomb": smooth_sign(dq, self.coulomb_velocity),
            "offset": np.ones_like(dq),
            "armature": np.asarray(acceleration, dtype=float),
        }
        out = np.empty(dq.shape + (len(self.terms),))
        for k, term in enumerate(self.terms):
            out[..., k] = columns[term]
        return out

    def prior(self) -> np.ndarray:
        """(len(terms),) prior of the estimated terms: zero friction and offset, the reflected
        inertia for the armature."""
        return np.array([self.reflected_inertia if t == "armature" else 0.0 for t in self.terms])

    def known_torque(self, acceleration: np.ndarray) -> np.ndarray:
        """Torque of the terms that are known, not estimated: ``reflected_inertia * ddq`` when
        the armature is not estimated, else zero. Same shape as ``acceleration``."""
        ddq = np.asarray(acceleration, dtype=float)
        return np.zeros_like(ddq) if self.armature else self.reflected_inertia * ddq

    def parameters(self, estimated: Mapping[str, float]) -> DriveParameters:
        """All the drive's values from the estimated ones ``{term: value}`` (:attr:`terms`):
        a term not estimated is zero, except the armature, then the known reflected inertia."""
        missing = [t for t in self.terms if t not in estimated]
        if missing:
            raise ValueError(f"values of the estimated terms {missing} are missing")
        values = {t: float(estimated[t]) for t in self.terms}
        values.setdefault("armature", self.reflected_inertia)
        return DriveParameters(**values, coulomb_velocity=self.coulomb_velocity)
