"""Motors that turn with several joints (a coupled wrist): their rotor inertia and friction.

With ``G`` (n, n) a transmission's motor-to-joint matrix (motor rad per joint rad, row ``m``: the
motor of joint ``m``; :mod:`inertia_id_ros.formats.transmission`), motor ``m`` turns by
``q_m = G[m] q`` and its own torque, in its own coordinate (N·m, rad, rad/s, rad/s²)::

    tau_m = rotor_inertia * ddq_m + viscous * dq_m + coulomb * s(dq_m)

reaches the joints as ``tau_joint = G[m]ᵀ tau_m`` (the same power on both sides). ``s`` is the
joints' smooth sign (:func:`~inertia_id_ros.chain.friction.smooth_sign`), ``|G[m, m]| v`` wide
(motor rad/s; ``v`` the Coulomb width of the motor's own joint, so the same width seen from it).

The fit's parameters are these terms seen at the motor's own joint, as a joint drive's
(:data:`MOTOR_TERMS`: armature ``G[m, m]² rotor_inertia``, viscous ``G[m, m]² viscous``,
Coulomb ``|G[m, m]| coulomb``, in joint units), on the motor's coordinate in joint units
``u = q_m / G[m, m] = d q`` with ``d = G[m] / G[m, m]``: ``tau_joint = dᵀ (armature ü +
viscous u̇ + coulomb s(u̇))`` (``s`` ``v`` wide), the same torque. Motor side, a rotor's
inertia is some 10⁴ times smaller than what it adds at the joint, and a fit with such columns
beside the links' would be solved to a precision that does not resolve them.

A motor turning with its own joint alone adds only to that joint's drive terms
(:mod:`inertia_id_ros.chain.friction`: armature ``G[m, m]² rotor_inertia``, viscous
``G[m, m]² viscous``, Coulomb ``|G[m, m]| coulomb``), so only the motors whose row of ``G``
couples several joints get terms of their own (:func:`coupled_motors`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from inertia_id_ros.chain.friction import JointDrive, smooth_sign, smooth_sign_slope

MOTOR_TERMS = ("armature", "viscous", "coulomb")
"""A coupled motor's parameters, seen at its own joint (revolute: kg·m², N·m·s/rad, N·m), in
the order they appear in a parameter vector; all ``>= 0``."""

MOTOR_SIDE_TERMS = ("rotor_inertia", "viscous", "coulomb")
"""The same terms in the motor's own coordinate (kg·m², N·m·s/rad, N·m motor side)."""


@dataclass(frozen=True)
class MotorCoupling:
    """The motor-to-joint matrix ``matrix`` G (n, n) of the joints ``joint_names`` (rows: the
    motors, row ``m`` the motor of ``joint_names[m]``; columns: the joints)."""

    joint_names: tuple[str, ...]
    matrix: np.ndarray = field(repr=False)

    def __post_init__(self) -> None:
        names = tuple(self.joint_names)
        matrix = np.asarray(self.matrix, dtype=float)
        if matrix.shape != (len(names), len(names)) or len(set(names)) != len(names):
            raise ValueError(
                f"a coupling needs one row and column per distinct joint: joints {names}, "
                f"matrix of shape {matrix.shape}"
            )
        object.__setattr__(self, "joint_names", names)
        object.__setattr__(self, "matrix", matrix)

    @classmethod
    def combined(cls, parts: Iterable[MotorCoupling]) -> MotorCoupling | None:
        """The block-diagonal coupling of ``parts`` (one per joint group); ``None`` if none."""
        parts = list(parts)
        if not parts:
            return None
        names = tuple(name for part in parts for name in part.joint_names)
        matrix, start = np.zeros((len(names), len(names))), 0
        for part in parts:
            stop = start + len(part.joint_names)
            matrix[start:stop, start:stop] = part.matrix
            start = stop
        return cls(names, matrix)

    @property
    def coupled(self) -> tuple[str, ...]:
        """The joints whose motor turns with other joints too (a row with several nonzeros)."""
        return tuple(
            name for name, row in zip(self.joint_names, self.matrix) if np.count_nonzero(row) > 1
        )

    def turning_outside(self, joints: Iterable[str]) -> tuple[str, ...]:
        """The :attr:`coupled` joints whose motor turns with a joint not in ``joints``."""
        inside = set(joints)
        return tuple(name for name in self.coupled if not set(self.support(name)) <= inside)

    def restricted(self, joints: Iterable[str]) -> MotorCoupling:
        """The coupling among ``joints`` only: a motor turning with a joint not among them
        keeps its own joint's entry alone (it is no coupled motor of theirs)."""
        inside = [name for name in self.joint_names if name in set(joints)]
        outside = set(self.turning_outside(inside))
        index = [self.joint_names.index(name) for name in inside]
        matrix = self.matrix[np.ix_(index, index)].copy()
        for k, name in enumerate(inside):
            if name in outside:
                matrix[k] = np.where(np.arange(len(inside)) == k, matrix[k], 0.0)
        return MotorCoupling(tuple(inside), matrix)

    def support(self, joint: str) -> tuple[str, ...]:
        """The joints the motor of ``joint`` turns with (its row's nonzero entries)."""
        row = self.matrix[self.joint_names.index(joint)]
        return tuple(name for name, g in zip(self.joint_names, row) if g != 0.0)

    def as_json(self) -> dict[str, Any]:
        """``{"joints": [...], "matrix": [[...]]}``, as :meth:`from_json` reads it."""
        return {"joints": list(self.joint_names), "matrix": self.matrix.tolist()}

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> MotorCoupling:
        """The coupling of :meth:`as_json`; ``ValueError``/``KeyError`` when malformed."""
        return cls(tuple(str(name) for name in value["joints"]), np.array(value["matrix"], float))


@dataclass(frozen=True)
class CoupledMotor:
    """Motor of ``joint`` turning with several joints of a chain: ``row`` (n,) its ``G[m]`` over
    the chain's joints (motor rad per joint rad), ``gear`` its ``G[m, m]`` (motor rad per rad
    of ``joint``), ``width`` the Coulomb width ``v`` of ``joint`` (rad/s). Inputs are (N, n)
    joint velocities and accelerations in the chain's order."""

    joint: str
    row: np.ndarray = field(repr=False)
    gear: float
    width: float

    @property
    def name(self) -> str:
        """The motor's name in parameter names: ``<joint>_motor``."""
        return f"{self.joint}_motor"

    @property
    def coulomb_velocity(self) -> float:
        """The Coulomb sign's width motor side, ``|G[m, m]| v`` (motor rad/s)."""
        return abs(self.gear) * self.width

    def regressor(self, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """(N, n, 3) joint-torque columns of :data:`MOTOR_TERMS`: ``dᵀ [ü, u̇, s(u̇)]``."""
        d = self.row / self.gear
        velocity = np.asarray(dq, dtype=float) @ d
        signals = np.stack(
            [np.asarray(ddq, dtype=float) @ d, velocity, smooth_sign(velocity, self.width)],
            axis=-1,
        )
        return d[None, :, None] * signals[:, None, :]

    def pull_back(self, H: np.ndarray, dq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Gradients (N, n) w.r.t. ``dq`` and ``ddq`` of ``sum_i <H_i, regressor_i>``, ``H``
        (N, n, 3) shaped as :meth:`regressor`: with ``h = H dᵀ`` (N, 3) the terms' weights,
        ``d (h_viscous + h_coulomb s'(u̇))`` and ``d h_armature`` (the regressor is linear in
        ``ü`` and ``u̇`` but for the smooth sign; the exact sign's derivative is zero)."""
        d = self.row / self.gear
        h = np.einsum("int,n->it", H, d)
        slope = smooth_sign_slope(np.asarray(dq, dtype=float) @ d, self.width)
        return np.outer(h[:, 1] + h[:, 2] * slope, d), np.outer(h[:, 0], d)

    def motor_side(self, values: Mapping[str, float]) -> dict[str, float]:
        """The :data:`MOTOR_SIDE_TERMS` of the terms ``values`` (:data:`MOTOR_TERMS` keys)."""
        gear = self.gear
        return {
            "rotor_inertia": values["armature"] / gear**2,
            "viscous": values["viscous"] / gear**2,
            "coulomb": values["coulomb"] / abs(gear),
        }

    def joint_side(self, values: Mapping[str, float]) -> dict[str, float]:
        """The :data:`MOTOR_TERMS` of the motor-side terms ``values`` (:meth:`motor_side`)."""
        gear = self.gear
        return {
            "armature": values["rotor_inertia"] * gear**2,
            "viscous": values["viscous"] * gear**2,
            "coulomb": values["coulomb"] * abs(gear),
        }

    def joint_torques(
        self, values: Mapping[str, float], dq: np.ndarray, ddq: np.ndarray
    ) -> np.ndarray:
        """(N, n) joint torques ``G[m]ᵀ tau_m`` of the motor torque ``tau_m`` (N·m, motor side)
        of the terms ``values`` (:data:`MOTOR_TERMS` keys), written out in the motor's
        coordinate."""
        motor = self.motor_side(values)
        velocity = np.asarray(dq, dtype=float) @ self.row
        tau = (
            motor["rotor_inertia"] * (np.asarray(ddq, dtype=float) @ self.row)
            + motor["viscous"] * velocity
            + motor["coulomb"] * smooth_sign(velocity, self.coulomb_velocity)
        )
        return np.outer(tau, self.row)


def coupled_motors(
    coupling: MotorCoupling, joint_names: Sequence[str], drives: Sequence[JointDrive]
) -> tuple[CoupledMotor, ...]:
    """The coupled motors of ``coupling`` (:attr:`MotorCoupling.coupled`) on the chain of
    ``joint_names`` with ``drives`` (its Coulomb widths). ``ValueError`` when a coupled motor
    turns with a joint not in the chain or not with its own joint."""
    motors = []
    for joint in coupling.coupled:
        outside = [j for j in coupling.support(joint) if j not in joint_names]
        if outside:
            raise ValueError(
                f"the motor of {joint} turns with joints {outside} that are not in the chain "
                f"{tuple(joint_names)}"
            )
        m = coupling.joint_names.index(joint)
        gear = coupling.matrix[m, m]
        if gear == 0.0:
            raise ValueError(f"the motor of {joint} does not turn with {joint}")
        row = np.array(
            [
                coupling.matrix[m, coupling.joint_names.index(j)]
                if j in coupling.joint_names
                else 0.0
                for j in joint_names
            ]
        )
        width = drives[list(joint_names).index(joint)].coulomb_velocity
        motors.append(CoupledMotor(joint, row, float(gear), width))
    return tuple(motors)
