"""Rest-to-rest Fourier motions: the parametrisation of a designed exciting motion and the random
motions it is compared with.

Every joint follows a finite Fourier series over one period, the duration ``T``
(``w = 2 pi / T``, harmonics ``l = 1..L``)::

    q_j(t) = start_j + sum_l [a_jl sin(l w t) + b_jl (cos(l w t) - 1)] / (l w)^2

(coefficients in rad/s², an acceleration amplitude each) with ``sum_l a_jl / (l w) = 0`` and
``sum_l b_jl = 0``, so the motion starts and ends at ``start`` at rest (zero velocity and
acceleration) for any free coefficient: :class:`RestToRestFourier` maps the free coefficients
(``2L - 2`` per joint) through an orthonormal basis of these constraints. Positions,
velocities and accelerations are linear in the coefficients, so a motion's largest per-joint
scaling within its :class:`~inertia_id_ros.motion.limits.MotionLimits` is a ratio
(:func:`feasible_scale`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.linalg

from inertia_id_ros.errors import ProblemError
from inertia_id_ros.motion.limits import MotionLimits
from inertia_id_ros.motion.trajectory import DEFAULT_RATE_HZ, ExcitationTrajectory

CHECK_RATE_HZ = 1000.0
"""Hz: time samples on which a motion is scaled to meet the limits."""
FEASIBILITY_SAFETY = 1e-4
"""Relative amount by which a scaled motion stays inside its limits."""
RANDOM_HARMONICS = 5
"""Harmonics of a random reference motion (:func:`random_fourier_motion`)."""

BasisValues = tuple[np.ndarray, np.ndarray, np.ndarray]
"""``(P_q, P_dq, P_ddq)`` (M, n_free): the basis at M stamps, for positions (less the start),
velocities and accelerations."""


class RestToRestFourier:
    """The Fourier basis of the module docstring over ``duration`` s with ``n_harmonics``:
    ``q(t) = start + P_q(t) @ X``, ``dq = P_dq(t) @ X``, ``ddq = P_ddq(t) @ X`` with ``X``
    (n_free, n_joints) free coefficients (rad/s²); ``q(0) = q(T) = start``, ``dq`` and ``ddq``
    zero there."""

    def __init__(self, duration: float, n_harmonics: int) -> None:
        if not duration > 0.0 or n_harmonics < 2:
            raise ProblemError(
                f"need duration > 0 and n_harmonics >= 2, got {duration}, {n_harmonics}"
            )
        self.duration = float(duration)
        self.omega = 2.0 * np.pi / self.duration
        self.harmonics = np.arange(1, n_harmonics + 1)
        lw = self.omega * self.harmonics
        sine = scipy.linalg.null_space((1.0 / lw)[None, :])  # dq(0) = sum a_l / (l w) = 0
        cosine = scipy.linalg.null_space(np.ones((1, n_harmonics)))  # ddq(0) = -sum b_l = 0
        self._free_to_raw = scipy.linalg.block_diag(sine, cosine)  # (2L, 2L - 2)

    @property
    def n_free(self) -> int:
        """Free coefficients per joint (2 L - 2)."""
        return int(self._free_to_raw.shape[1])

    def evaluate(self, times: np.ndarray) -> BasisValues:
        """``(P_q, P_dq, P_ddq)`` (M, n_free) at ``times`` (M,) s."""
        lw = self.omega * self.harmonics
        phase = np.multiply.outer(np.asarray(times, dtype=float), lw)
        sin, cos = np.sin(phase), np.cos(phase)
        raw_q = np.hstack([sin / lw**2, (cos - 1.0) / lw**2])
        raw_dq = np.hstack([cos / lw, -sin / lw])
        raw_ddq = np.hstack([-sin, -cos])
        return raw_q @ self._free_to_raw, raw_dq @ self._free_to_raw, raw_ddq @ self._free_to_raw

    def trajectory(
        self,
        X: np.ndarray,
        start: np.ndarray,
        joint_names: Sequence[str],
        rate_hz: float = DEFAULT_RATE_HZ,
    ) -> ExcitationTrajectory:
        """The motion of coefficients ``X`` sampled at ``rate_hz`` or slightly faster (the last
        sample exactly at the duration)."""
        t = np.linspace(0.0, self.duration, int(np.ceil(self.duration * rate_hz)) + 1)
        Pq, Pdq, Pddq = self.evaluate(t)
        q = start + Pq @ X
        q[0] = q[-1] = start  # exact, not within round-off
        dq, ddq = Pdq @ X, Pddq @ X
        dq[[0, -1]] = 0.0
        ddq[[0, -1]] = 0.0
        return ExcitationTrajectory(t, tuple(joint_names), q, dq, ddq)


def midpoints(duration: float, rate_hz: float) -> np.ndarray:
    """Stamps (s) at the middle of ``ceil(duration rate)`` equal intervals (one period)."""
    n = max(int(np.ceil(duration * rate_hz)), 2)
    return (np.arange(n) + 0.5) * duration / n


def feasible_scale(
    X: np.ndarray, start: np.ndarray, limits: MotionLimits, P: BasisValues
) -> np.ndarray:
    """(n,) the largest per-joint factors ``s`` with ``start + s P_q X``, ``s P_dq X`` and
    ``s P_ddq X`` within the limits at the samples of ``P``."""
    Pq, Pdq, Pddq = P
    d, v, a = Pq @ X, Pdq @ X, Pddq @ X
    tiny = 1e-300
    bounds = [
        (limits.upper - start) / np.maximum(d.max(axis=0), tiny),
        (start - limits.lower) / np.maximum(-d.min(axis=0), tiny),
        limits.velocity / np.maximum(np.abs(v).max(axis=0), tiny),
        limits.acceleration / np.maximum(np.abs(a).max(axis=0), tiny),
    ]
    return np.asarray(np.min(bounds, axis=0))


def random_coefficients(rng: np.random.Generator, n_free: int, n: int) -> np.ndarray:
    """(n_free, n) coefficients drawn from the standard normal distribution."""
    return rng.normal(size=(n_free, n))


def random_fourier_motion(
    limits: MotionLimits,
    start: np.ndarray,
    duration: float,
    n_harmonics: int = RANDOM_HARMONICS,
    seed: int = 0,
    rate_hz: float = DEFAULT_RATE_HZ,
) -> ExcitationTrajectory:
    """A random rest-to-rest Fourier motion (:class:`RestToRestFourier`, normal coefficients)
    whose every joint is scaled about ``start`` as far as the limits allow (position, velocity,
    acceleration, on a 1 kHz grid): the reference a design is compared with."""
    basis, X = random_motion_coefficients(limits, start, duration, n_harmonics, seed)
    return basis.trajectory(X, start, limits.joint_names, rate_hz)


def random_motion_coefficients(
    limits: MotionLimits, start: np.ndarray, duration: float, n_harmonics: int, seed: int
) -> tuple[RestToRestFourier, np.ndarray]:
    """The basis and coefficients of :func:`random_fourier_motion`."""
    basis = RestToRestFourier(duration, n_harmonics)
    X = random_coefficients(np.random.default_rng(seed), basis.n_free, len(limits.joint_names))
    X *= feasible_scale(X, start, limits, basis.evaluate(midpoints(duration, CHECK_RATE_HZ))) * (
        1.0 - FEASIBILITY_SAFETY
    )
    return basis, X
