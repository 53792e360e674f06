"""The motion of a robot's base, and tilts: what whole-body rows take in besides the joints.

A base's motion per sample needs no pose or linear velocity: only its angular velocity and
acceleration and the proper acceleration of its origin (gravity removed) enter the wrenches
(:class:`BaseMotion`). A tilt is a frame's (roll, pitch) in the world, the direction of up in it
(:func:`up_from_tilt`); the gyro's derivative gives the angular acceleration
(:func:`gyro_derivative`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from inertia_id_ros.core.filtering import local_polynomial_derivatives
from inertia_id_ros.core.robots import STANDARD_GRAVITY
from inertia_id_ros.errors import DataError

DEFAULT_GYRO_HALF_WIDTH = 0.02
"""Half-width (s) of the local quadratic fit that differentiates the gyro."""
TILT_CHECK_TOLERANCE = np.deg2rad(2.0)
"""An IMU's mean tilt of the fixed frame further than this (rad) from the given ``fixed_tilt``
is reported (:func:`tilt_difference`)."""


def up_from_tilt(tilt: Sequence[float]) -> np.ndarray:
    """(3,) the world's up direction (unit) in a frame of ``tilt`` (roll, pitch) rad: the frame's
    orientation in the world is ``Rz(yaw) Ry(pitch) Rx(roll)`` (yaw does not matter)."""
    roll, pitch = (float(a) for a in tilt)
    return np.array([-np.sin(pitch), np.sin(roll) * np.cos(pitch), np.cos(roll) * np.cos(pitch)])


def tilt_from_up(up: np.ndarray) -> np.ndarray:
    """(2,) (roll, pitch) rad of a frame in which the world's up direction is ``up`` (3,) (any
    length > 0: e.g. a proper acceleration at rest); the inverse of :func:`up_from_tilt`."""
    x, y, z = np.asarray(up, dtype=float)
    return np.array([np.arctan2(y, z), np.arctan2(-x, np.hypot(y, z))])


def tilt_difference(tilt: Sequence[float], other: Sequence[float]) -> float:
    """Angle (rad) between the up directions of two tilts (roll, pitch; rad), e.g. the given
    ``fixed_tilt`` and an IMU's, compared with :data:`TILT_CHECK_TOLERANCE`."""
    cosine = float(up_from_tilt(tilt) @ up_from_tilt(other))
    return float(np.arccos(np.clip(cosine, -1.0, 1.0)))


def _rotation_from_quaternion(xyzw: np.ndarray) -> np.ndarray:
    """(N, 3, 3) rotations from unit quaternions (N, 4) ``[x, y, z, w]`` (normalised here)."""
    q = xyzw / np.linalg.norm(xyzw, axis=-1, keepdims=True)
    x, y, z, w = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
            np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
            np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
        ],
        -2,
    )


@dataclass
class BaseMotion:
    """Motion of the base link per sample, in the base frame: ``angular_velocity`` ω (N, 3) rad/s,
    ``angular_acceleration`` α (N, 3) rad/s², ``proper_acceleration`` (N, 3) m/s² the classical
    acceleration of the base origin minus gravity (``[0, 0, +9.81]`` rotated into the base at
    rest, z up)."""

    angular_velocity: np.ndarray
    angular_acceleration: np.ndarray
    proper_acceleration: np.ndarray

    def __post_init__(self) -> None:
        arrays = [
            np.asarray(a, dtype=float)
            for a in (self.angular_velocity, self.angular_acceleration, self.proper_acceleration)
        ]
        if any(a.ndim != 2 or a.shape[1] != 3 or a.shape != arrays[0].shape for a in arrays):
            raise DataError(
                f"base motion arrays must all be (N, 3), got {[a.shape for a in arrays]}"
            )
        self.angular_velocity, self.angular_acceleration, self.proper_acceleration = arrays

    def __len__(self) -> int:
        return self.angular_velocity.shape[0]

    @classmethod
    def at_rest(cls, n_samples: int, orientation: np.ndarray | None = None) -> BaseMotion:
        """A base at rest: ``orientation`` (4,) or (N, 4) ``[x, y, z, w]`` world ← base (default
        identity)."""
        if orientation is None:
            up = np.tile([0.0, 0.0, STANDARD_GRAVITY], (n_samples, 1))
        else:
            quat = np.broadcast_to(np.asarray(orientation, dtype=float), (n_samples, 4))
            up = _rotation_from_quaternion(quat)[:, 2, :] * STANDARD_GRAVITY  # R^T e_z g
        zeros = np.zeros((n_samples, 3))
        return cls(zeros, zeros.copy(), up)

    def subset(self, samples: slice | np.ndarray) -> BaseMotion:
        """The samples selected by ``samples``."""
        return BaseMotion(
            self.angular_velocity[samples],
            self.angular_acceleration[samples],
            self.proper_acceleration[samples],
        )


def gyro_derivative(
    t: np.ndarray, angular_velocity: np.ndarray, half_width: float = DEFAULT_GYRO_HALF_WIDTH
) -> np.ndarray:
    """(N, 3) angular acceleration (IMU frame, rad/s²) by a local quadratic fit of the gyro
    ``angular_velocity`` (N, 3) at stamps ``t`` (N,) (s). In the body frame, the derivative of the
    body angular velocity is the angular acceleration."""
    return local_polynomial_derivatives(
        t, angular_velocity, t, half_width, order=2, n_derivatives=1
    )[:, 1]
