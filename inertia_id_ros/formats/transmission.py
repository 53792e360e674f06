"""Motor-side joint signals through a transmission: gear ratios per joint, a coupling between
joints (a coupled wrist: one motor turns with two joints) and the joints' zero offsets.

The convention, in one place (:class:`Transmission`): with ``G = diag(gear_ratio) · coupling``
(n, n) the motor-to-joint matrix (motor positions per joint positions),

- positions: ``q_motor = G (q_joint + zero_offset)``, so ``q_joint = G⁻¹ q_motor − zero_offset``
  (``zero_offset``: the joint angle, rad or m, the motors read at the URDF's zero);
- velocities and accelerations: ``q̇_joint = G⁻¹ q̇_motor``, ``q̈_joint = G⁻¹ q̈_motor``;
- efforts: the power is the same on both sides, ``τ_motorᵀ q̇_motor = τ_jointᵀ q̇_joint``, so
  ``τ_joint = Gᵀ τ_motor`` (``τ_motor``: the motor torques, a current times its torque
  constant).

An input description gives it per joint group (``transmission: {gear_ratio, coupling,
zero_offset}``: docs/how-to/real-logs.md); the fits take joint-side signals, and a link model
that needs the matrix (a coupled motor's rotor inertia and friction) takes :attr:`matrix`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from inertia_id_ros.errors import DataError


@dataclass(frozen=True)
class TransmissionSpec:
    """A transmission as a description gives it, keyed by the group's log joint names (or the
    URDF names they map to): ``gear_ratio`` (one for all, or per joint; default 1),
    ``coupling`` ((n, n) rows and columns in the group's ``names`` order; default identity)
    and ``zero_offset`` (rad or m, joint side; one for all or per joint; default 0)."""

    gear_ratio: Mapping[str, float] | float = 1.0
    coupling: tuple[tuple[float, ...], ...] | None = None
    zero_offset: Mapping[str, float] | float = 0.0

    def of(self, names: Sequence[tuple[str, str]], where: str) -> Transmission:
        """The :class:`Transmission` of the joints ``names`` ((log name, URDF name) pairs in
        the group's order); ``where`` names the key in errors."""
        n = len(names)

        def per_joint(value: Mapping[str, float] | float, default: float) -> np.ndarray:
            if not isinstance(value, Mapping):
                return np.full(n, float(value))
            return np.array(
                [float(value.get(log, value.get(urdf, default))) for log, urdf in names]
            )

        coupling = np.eye(n) if self.coupling is None else np.array(self.coupling, dtype=float)
        if coupling.shape != (n, n):
            raise DataError(
                f"{where}.coupling must be {n} rows of {n} (the group's joints "
                f"{', '.join(log for log, _ in names)}), got shape {coupling.shape}"
            )
        matrix = np.diag(per_joint(self.gear_ratio, 1.0)) @ coupling
        if abs(np.linalg.det(matrix)) < 1e-12 * max(1.0, float(np.abs(matrix).max())) ** n:
            raise DataError(f"{where}: diag(gear_ratio) · coupling is singular: {matrix.tolist()}")
        return Transmission(matrix, per_joint(self.zero_offset, 0.0))


@dataclass(frozen=True)
class Transmission:
    """``matrix`` G (n, n): motor positions per joint positions; ``zero_offset`` (n,) rad or m
    (module docstring). Signals are (N, n), columns in the joints' order."""

    matrix: np.ndarray
    zero_offset: np.ndarray

    def positions(self, motor: np.ndarray) -> np.ndarray:
        """Joint positions of the motor positions: ``G⁻¹ q_motor − zero_offset``."""
        return self.rates(motor) - self.zero_offset

    def rates(self, motor: np.ndarray) -> np.ndarray:
        """Joint velocities (or accelerations) of the motors': ``G⁻¹ q̇_motor``."""
        return np.linalg.solve(self.matrix, np.asarray(motor, dtype=float).T).T

    def efforts(self, motor: np.ndarray) -> np.ndarray:
        """Joint torques of the motor torques: ``Gᵀ τ_motor``."""
        return np.asarray(motor, dtype=float) @ self.matrix
