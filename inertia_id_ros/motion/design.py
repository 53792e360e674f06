"""Exciting-motion design: a rest-to-rest Fourier motion that makes the identification precise.

**Parametrisation.** Every joint follows a finite Fourier series over one period, the duration
``T`` (``w = 2 pi / T``, harmonics ``l = 1..L``)::

    q_j(t) = start_j + sum_l [a_jl sin(l w t) + b_jl (cos(l w t) - 1)] / (l w)^2

(coefficients in rad/s², an acceleration amplitude each) with ``sum_l a_jl / (l w) = 0`` and
``sum_l b_jl = 0``, so the motion starts and ends at ``start`` at rest (zero velocity and
acceleration) for any free coefficient: :class:`RestToRestFourier` maps the free coefficients
(``2L - 2`` per joint) through an orthonormal basis of these constraints. ``L`` is
``duration x MAX_FREQUENCY_HZ``.

**Limits** (:class:`MotionLimits`): the URDF's position limits shrunk by a margin, its velocity
limits, an acceleration limit; all linear in the coefficients. The optimiser never leaves them:
it evaluates the objective on every joint's motion scaled about ``start`` by ``1 / u``, ``u`` a
smooth soft maximum (>= the maximum) of the joint's limit usage (position offset, velocity,
acceleration over their limits) on dense time samples (100 Hz), so the motion always spans its
limits (as the random reference motions do) and the problem is unconstrained and smooth. At the
end every joint's motion is scaled by the largest factor that meets every limit on a 1 kHz grid
(less a relative 1e-4), so the result meets them exactly. Torque limits (the URDF's efforts, by
RNEA of the URDF's links, without the payload) are checked after the design and met by scaling
the whole motion down when ``torque_limits`` is set. With a
:class:`~inertia_id_ros.motion.collision.CollisionChecker` (URDF collision geometry: SRDF
pairs and obstacles), after half the time limit, distances below the margin plus
``COLLISION_BUFFER`` on ``COLLISION_RATE_HZ`` samples are penalised quadratically (gradients
from the nearest points); the final motion is checked at 50 Hz and, if it still comes closer
than the margin, scaled toward ``start`` (bisection) until it does not.

**Objectives** (the predicted information of samples at ``measurement_rate_hz``, evaluated on a
coarser grid of ``OBJECTIVE_RATE_HZ`` and scaled; a periodic integrand makes this accurate):

- ``payload``: rows of the payload regressor ``[body_regressor(v, a_g) | I_6]`` (10 body
  parameters and the 6 F/T offsets, :mod:`inertia_id_ros.core.regressors`), each channel divided
  by its noise standard deviation (0.1 N, 0.005 N·m per sample by default). The criterion is the
  largest predicted standard error of the six rotational-inertia parameters,
  ``max_k sqrt(C_kk)``, ``C = M^-1``, ``M = prior + sum Y^T W Y``; the optimiser minimises the
  smooth surrogate ``(1/p) log sum_k C_kk^p`` (``p = 8``).
- ``links``: the outcome of identification, predicted: the expected RMS joint-torque error,
  on motions the fit has not seen, of the base parameters identified along the motion. Rows:
  the joint-torque regressor of the chain with every joint's viscous, Coulomb, offset and
  armature columns (:class:`~inertia_id_ros.chain.links.LinkModel`), reduced to its base
  columns (:func:`~inertia_id_ros.chain.base_parameters.base_parameters` of the reference
  motions), white torque noise ``sigma`` (0.1 N·m per sample); the least-squares base parameters
  have the
  covariance ``sigma² M^-1`` (``M = prior + sum Y^T Y``), so their torque error on the samples of
  :func:`reference_samples` (8 random motions within the same limits: what the robot typically
  does) has the mean square ``trace(G_ref M^-1)``, ``G_ref = sigma² Y_ref^T Y_ref / rows``. The
  criterion is its square root (N·m, an I-optimal design); the optimiser minimises its log.
  Unlike a condition number it weighs every direction of the parameters by what it does to the
  torques, in the parameters' own units, so it does not depend on a column scaling.

Gradients are analytic through the kinematics: pinocchio's frame-acceleration derivatives for the
payload; for the links, finite differences of the regressor that are exact in ``dq`` (quadratic)
and ``ddq`` (linear) and central in ``q``. The optimiser is L-BFGS-B.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin
import scipy.linalg
import scipy.optimize

from inertia_id_ros.chain.base_parameters import base_parameters
from inertia_id_ros.chain.friction import JointDrive
from inertia_id_ros.chain.links import JointTorqueData, LinkModel
from inertia_id_ros.core.inertia import N_BODY_PARAMS
from inertia_id_ros.core.kinematics import SensorKinematics
from inertia_id_ros.core.regressors import N_WRENCH_CHANNELS, body_regressor_batch
from inertia_id_ros.core.robots import joint_id
from inertia_id_ros.errors import ProblemError
from inertia_id_ros.motion.collision import Clearance, CollisionChecker
from inertia_id_ros.motion.trajectory import DEFAULT_RATE_HZ, ExcitationTrajectory
from inertia_id_ros.options import DEFAULT_COLLISION_MARGIN, DEFAULT_MAX_ACCELERATION, TARGETS

DEFAULT_POSITION_MARGIN = 0.1
"""rad (m): distance kept from the URDF's position limits."""
DEFAULT_WRENCH_NOISE_STD = (0.1, 0.1, 0.1, 0.005, 0.005, 0.005)
"""N, N·m: F/T noise per sample assumed by the payload objective."""
DEFAULT_MEASUREMENT_RATE_HZ = 100.0
"""Hz: rate of the measurements the predicted standard errors are for."""
MAX_FREQUENCY_HZ = 1.0
"""Hz: highest harmonic of the designed motion (the number of harmonics is duration x this)."""
OBJECTIVE_RATE_HZ = 10.0
"""Hz: time samples on which the optimiser evaluates the objective."""
CONSTRAINT_RATE_HZ = 100.0
"""Hz: time samples on which the optimiser penalises the limits."""
CHECK_RATE_HZ = 1000.0
"""Hz: time samples on which the final motion is scaled to meet the limits."""
FEASIBILITY_SAFETY = 1e-4
"""Relative amount by which the final motion stays inside its limits."""
DEFAULT_TIME_LIMIT = {"payload": 40.0, "links": 240.0}
"""s: default optimisation time per target."""
COLLISION_RATE_HZ = 10.0
"""Hz: time samples on which the optimiser penalises self-collision distances."""
COLLISION_FREE_SHARE = 0.5
"""Share of the time limit the optimiser runs without the self-collision penalty first."""
COLLISION_BUFFER = 0.03
"""m: the optimiser keeps distances above the margin plus this (motion between its samples)."""
INERTIA_SLICE = slice(4, N_BODY_PARAMS)
"""The six rotational-inertia entries of theta."""
_SOFTMAX_POWER = 8.0
N_STARTS = 8
"""Random motions drawn (from ``seed``); the optimiser starts from the best."""
_SOFTMAX_SHARPNESS = 200.0  # of the soft maximum of limit usage (1: at a limit)
_COLLISION_WEIGHT = 10.0
DEFAULT_TORQUE_NOISE_STD = 0.1
"""N·m: joint-torque noise per sample assumed by the links objective (scales it, does not
change which motion is best)."""
N_REFERENCE_MOTIONS = 8
"""Random reference motions (5 harmonics, limits, start, duration of the design) whose torques
the links objective predicts."""
REFERENCE_SEEDS_FROM = 10_000
"""First seed of the reference motions (design ``seed`` s: ``REFERENCE_SEEDS_FROM + 8 s ..``)."""


# ---- limits ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class MotionLimits:
    """Per-joint limits (n,) in ``joint_names`` order: positions ``lower``/``upper`` (rad, m; the
    margin already applied), ``velocity`` (rad/s), ``acceleration`` (rad/s²), ``torque`` (N·m,
    the URDF's efforts; ``None``: not enforced)."""

    joint_names: tuple[str, ...]
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    torque: np.ndarray | None = None
    position_margin: float = DEFAULT_POSITION_MARGIN

    def table(self) -> list[str]:
        """One line per joint, for printing."""
        lines = [
            f"{'joint':<24}{'lower':>9}{'upper':>9}{'vel':>8}{'acc':>7}"
            + (f"{'torque':>8}" if self.torque is not None else "")
        ]
        for k, name in enumerate(self.joint_names):
            line = (
                f"{name:<24}{self.lower[k]:>9.3f}{self.upper[k]:>9.3f}"
                f"{self.velocity[k]:>8.3f}{self.acceleration[k]:>7.2f}"
            )
            if self.torque is not None:
                line += f"{self.torque[k]:>8.1f}"
            lines.append(line)
        return lines

    def violations(self, trajectory: ExcitationTrajectory) -> dict[str, float]:
        """Largest excess over each limit of the trajectory's samples (<= 0: met), in the
        limit's unit; the torque is not checked here (see :func:`torque_excess`)."""
        q, dq, ddq = trajectory.q, trajectory.dq, trajectory.ddq
        return {
            "position": float(max(np.max(q - self.upper), np.max(self.lower - q))),
            "velocity": float(np.max(np.abs(dq) - self.velocity)),
            "acceleration": float(np.max(np.abs(ddq) - self.acceleration)),
        }


def motion_limits(
    model: pin.Model,
    joint_names: Sequence[str],
    *,
    position_margin: float = DEFAULT_POSITION_MARGIN,
    max_acceleration: float = DEFAULT_MAX_ACCELERATION,
    torque_limits: bool = False,
) -> MotionLimits:
    """The limits of ``joint_names`` from ``model`` (URDF): position limits shrunk by
    ``position_margin`` (a continuous joint: ``[-pi, pi]``), velocity limits, ``max_acceleration``
    for every joint, and, if ``torque_limits``, the effort limits. Raises
    :class:`~inertia_id_ros.errors.ProblemError` when a limit is missing or the margin leaves no
    range."""
    if not max_acceleration > 0.0:
        raise ProblemError(f"max_acceleration must be > 0, got {max_acceleration}")
    if not position_margin >= 0.0:
        raise ProblemError(f"position_margin must be >= 0, got {position_margin}")
    lower, upper, velocity, torque = [], [], [], []
    for name in joint_names:
        joint = model.joints[joint_id(model, name)]
        if joint.nv != 1:
            raise ProblemError(
                f"joint {name!r} has {joint.nv} degrees of freedom; only 1-dof "
                "joints can be excited"
            )
        lo, hi = (
            (-np.pi, np.pi)
            if joint.nq == 2
            else (model.lowerPositionLimit[joint.idx_q], model.upperPositionLimit[joint.idx_q])
        )
        lo, hi = lo + position_margin, hi - position_margin
        if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
            raise ProblemError(
                f"joint {name!r}: no position range left within its limits less "
                f"the margin {position_margin} (got [{lo:.4g}, {hi:.4g}])"
            )
        v = model.velocityLimit[joint.idx_v]
        if not (np.isfinite(v) and v > 0.0):
            raise ProblemError(f"joint {name!r} has no velocity limit in the URDF")
        lower.append(lo)
        upper.append(hi)
        velocity.append(v)
        torque.append(model.effortLimit[joint.idx_v])
    torques = np.array(torque) if torque_limits else None
    if torques is not None and not np.all(np.isfinite(torques) & (torques > 0.0)):
        raise ProblemError(f"torque limits asked for but the URDF's efforts are {torques}")
    return MotionLimits(
        tuple(joint_names),
        np.array(lower),
        np.array(upper),
        np.array(velocity),
        np.full(len(joint_names), float(max_acceleration)),
        torques,
        position_margin,
    )


# ---- parametrisation -------------------------------------------------------------------------


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
        return self._free_to_raw.shape[1]

    def evaluate(self, times: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(P_q, P_dq, P_ddq)`` (M, n_free) at ``times`` (M,) s."""
        lw = self.omega * self.harmonics
        phase = np.multiply.outer(np.asarray(times, dtype=float), lw)
        sin, cos = np.sin(phase), np.cos(phase)
        raw_q = np.hstack([sin / lw**2, (cos - 1.0) / lw**2])
        raw_dq = np.hstack([cos / lw, -sin / lw])
        raw_ddq = np.hstack([-sin, -cos])
        return tuple(raw @ self._free_to_raw for raw in (raw_q, raw_dq, raw_ddq))

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


def _midpoints(duration: float, rate_hz: float) -> np.ndarray:
    """Stamps (s) at the middle of ``ceil(duration rate)`` equal intervals (one period)."""
    n = max(int(np.ceil(duration * rate_hz)), 2)
    return (np.arange(n) + 0.5) * duration / n


def _feasible_scale(
    X: np.ndarray,
    start: np.ndarray,
    limits: MotionLimits,
    P: tuple[np.ndarray, np.ndarray, np.ndarray],
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
    return np.min(bounds, axis=0)


# ---- objectives ------------------------------------------------------------------------------


class _PayloadObjective:
    """Predicted precision of the payload's rotational inertia (module docstring)."""

    name = "largest predicted std of the 6 inertia parameters (kg·m²)"

    def __init__(
        self,
        model: pin.Model,
        sensor_frame: str,
        joint_names: Sequence[str],
        noise_std: Sequence[float],
        prior_information: np.ndarray | None,
    ) -> None:
        try:
            self.kinematics = SensorKinematics(model, sensor_frame, joint_names)
        except ValueError as e:  # a joint that does not move the frame, or a multi-dof joint
            raise ProblemError(str(e)) from None
        if self.kinematics.joint_names != tuple(joint_names):
            raise ProblemError(
                f"joints must be given in model order: {list(self.kinematics.joint_names)}"
            )
        self._model = self.kinematics.reduced_model
        self._data = self._model.createData()
        self._frame = self._model.getFrameId(sensor_frame)
        self._gravity = self._model.gravity.linear.copy()
        self.sqrt_weight = 1.0 / np.asarray(noise_std, dtype=float).reshape(N_WRENCH_CHANNELS)
        self.n_params = N_BODY_PARAMS + N_WRENCH_CHANNELS
        self.prior = _check_prior(prior_information, self.n_params)
        basis = np.zeros((6, N_WRENCH_CHANNELS, N_BODY_PARAMS))  # d rows / d a_k, constant
        for k in range(6):
            e = np.zeros((1, 6))
            e[0, k] = 1.0
            basis[k] = body_regressor_batch(np.zeros((1, 6)), e)[0]
        self._d_rows_d_a = basis * self.sqrt_weight[None, :, None]

    def rows(self, Q: np.ndarray, DQ: np.ndarray, DDQ: np.ndarray) -> np.ndarray:
        """(N, 6, 16) noise-weighted regressor rows."""
        V, A = self.kinematics.compute_batch(Q, DQ, DDQ)
        return self._weighted(V, A)

    def _weighted(self, V: np.ndarray, A: np.ndarray) -> np.ndarray:
        out = np.empty((V.shape[0], N_WRENCH_CHANNELS, self.n_params))
        out[:, :, :N_BODY_PARAMS] = body_regressor_batch(V, A) * self.sqrt_weight[None, :, None]
        out[:, :, N_BODY_PARAMS:] = np.diag(self.sqrt_weight)
        return out

    def criterion(self, information: np.ndarray) -> float:
        covariance = _inverse(information)
        return float(np.sqrt(np.max(np.diag(covariance)[INERTIA_SLICE])))

    def surrogate(self, information: np.ndarray) -> tuple[float, np.ndarray]:
        """``(f, df/dM)``: the soft maximum of the inertia variances (log) and its gradient."""
        covariance = _inverse(information)
        variances = np.diag(covariance)[INERTIA_SLICE]
        top = np.max(variances)
        powers = (variances / top) ** _SOFTMAX_POWER
        f = float(np.log(top) + np.log(np.sum(powers)) / _SOFTMAX_POWER)
        weights = powers / np.sum(powers) / variances  # d f / d C_kk
        columns = covariance[:, INERTIA_SLICE]
        return f, -(columns * weights) @ columns.T

    def pull_back(
        self, Q: np.ndarray, DQ: np.ndarray, DDQ: np.ndarray, H: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Gradients (N, n) w.r.t. ``Q, DQ, DDQ`` of ``sum_i <H_i, rows_i>`` (``H`` (N, 6, 16))."""
        model, data, frame = self._model, self._data, self._frame
        n_samples, n = Q.shape
        V = np.empty((n_samples, 6))
        A = np.empty((n_samples, 6))
        dv_dq = np.empty((n_samples, 6, n))
        da_dq = np.empty((n_samples, 6, n))
        da_dv = np.empty((n_samples, 6, n))
        jac = np.empty((n_samples, 6, n))
        local = pin.ReferenceFrame.LOCAL
        for i in range(n_samples):
            q = self.kinematics.model_configuration(Q[i])
            pin.computeForwardKinematicsDerivatives(model, data, q, DQ[i], DDQ[i])
            dv_dq[i], da_dq[i], da_dv[i], jac[i] = pin.getFrameAccelerationDerivatives(
                model, data, frame, local
            )
            V[i] = pin.getFrameVelocity(model, data, frame, local).vector
            A[i] = pin.getFrameAcceleration(model, data, frame, local).vector
            g_local = pin.updateFramePlacement(model, data, frame).rotation.T @ self._gravity
            A[i, :3] -= g_local
            da_dq[i, :3] -= pin.skew(g_local) @ jac[i, 3:]  # d(-R^T g)/dq = -[R^T g]x J_w
        h_a = np.einsum("irc,krc->ik", H[:, :, :N_BODY_PARAMS], self._d_rows_d_a)
        h_v = np.empty((n_samples, 6))
        for k in range(6):  # rows are quadratic in v: a unit central difference is exact
            step = np.zeros(6)
            step[k] = 1.0
            diff = 0.5 * (self._weighted(V + step, A) - self._weighted(V - step, A))
            h_v[:, k] = np.einsum("irc,irc->i", H, diff)
        g_q = np.einsum("ikj,ik->ij", dv_dq, h_v) + np.einsum("ikj,ik->ij", da_dq, h_a)
        g_dq = np.einsum("ikj,ik->ij", jac, h_v) + np.einsum("ikj,ik->ij", da_dv, h_a)
        g_ddq = np.einsum("ikj,ik->ij", jac, h_a)
        return g_q, g_dq, g_ddq


class _LinksObjective:
    """Predicted held-out joint-torque error of the identified links (module docstring)."""

    name = "predicted held-out torque RMS error (N·m)"

    def __init__(
        self,
        model: pin.Model,
        joint_names: Sequence[str],
        prior_information: np.ndarray | None,
        reference: tuple[np.ndarray, ...],
        torque_noise_std: float,
    ) -> None:
        self.links = _link_model(model, joint_names)
        if self.links.joint_names != tuple(joint_names):
            raise ProblemError(
                f"joints must be given in model order: {list(self.links.joint_names)}"
            )
        if not torque_noise_std > 0.0:
            raise ProblemError(f"torque_noise_std must be > 0 N·m, got {torque_noise_std}")
        self.n_params = self.links.n_parameters
        self.prior_full = _check_prior(prior_information, self.n_params)
        Q, DQ, DDQ = reference
        base = base_parameters(self.links, JointTorqueData(Q, DQ, DDQ, np.zeros_like(Q)))
        self.columns = np.sort(base.independent)
        self.prior = self.prior_full[np.ix_(self.columns, self.columns)]
        rows = self.rows(Q, DQ, DDQ).reshape(-1, self.columns.size)
        # (n_base, n_base) sigma² Y_ref^T Y_ref / rows: a parameter error e makes the mean
        # squared torque error e^T (reference_gram / sigma²) e on the reference motions
        self.reference_gram = torque_noise_std**2 * (rows.T @ rows) / rows.shape[0]
        n = self.links.n_joints
        self._n_rigid = N_BODY_PARAMS * n
        col = self._n_rigid
        self._viscous, self._armature = np.zeros(n, int) - 1, np.zeros(n, int) - 1
        for j, drive in enumerate(self.links.drives):
            for term in drive.terms:
                if term == "viscous":
                    self._viscous[j] = col
                elif term == "armature":
                    self._armature[j] = col
                col += 1

    def rows(self, Q: np.ndarray, DQ: np.ndarray, DDQ: np.ndarray) -> np.ndarray:
        """(N, n, n_base) base-regressor rows (unscaled, N·m per SI unit)."""
        return self.links.joint_torque_regressor(Q, DQ, DDQ)[:, :, self.columns]

    def criterion(self, information: np.ndarray) -> float:
        """``sqrt(trace(G_ref M^-1))`` (N·m): the expected RMS, over the reference motions'
        samples and joints, of the torque error of the least-squares base parameters, whose
        covariance is ``sigma² M^-1`` (``M = Y^T Y`` the information, ``G_ref`` the
        :attr:`reference_gram`)."""
        return float(np.sqrt(np.sum(self.reference_gram * _inverse(information))))

    def surrogate(self, information: np.ndarray) -> tuple[float, np.ndarray]:
        """``(f, df/dM)``: ``log trace(G_ref M^-1)`` and its gradient ``-C G_ref C / trace``
        (``C = M^-1``)."""
        covariance = _inverse(information)
        weighted = covariance @ self.reference_gram @ covariance
        trace = float(np.sum(self.reference_gram * covariance))
        return float(np.log(trace)), -weighted / trace

    def pull_back(
        self, Q: np.ndarray, DQ: np.ndarray, DDQ: np.ndarray, H: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Gradients (N, n) w.r.t. ``Q, DQ, DDQ`` of ``sum_i <H_i, rows_i>``
        (``H`` (N, n, n_base))."""
        n_samples, n = Q.shape
        full = np.zeros((n_samples, n, self.n_params))
        full[:, :, self.columns] = H
        rigid = full[:, :, : self._n_rigid]

        def rigid_rows(Qs: np.ndarray, DQs: np.ndarray, DDQs: np.ndarray) -> np.ndarray:
            return self.links.joint_torque_regressor(Qs, DQs, DDQs)[:, :, : self._n_rigid]

        def directional(which: int, step: float, central: bool) -> np.ndarray:
            """(N, n): <H_i, d rows_i / d x_ik> with x = (Q, DQ, DDQ)[which]."""
            inputs = [np.repeat(x[:, None, :], n, axis=1) for x in (Q, DQ, DDQ)]
            plus = [x.copy() for x in inputs]
            plus[which] += step * np.eye(n)
            flat = [x.reshape(-1, n) for x in plus]
            up = rigid_rows(*flat).reshape(n_samples, n, n, self._n_rigid)
            if central:
                minus = [x.copy() for x in inputs]
                minus[which] -= step * np.eye(n)
                down = rigid_rows(*[x.reshape(-1, n) for x in minus]).reshape(up.shape)
                derivative = (up - down) / (2.0 * step)
            else:
                derivative = (up - rigid_rows(Q, DQ, DDQ)[:, None]) / step
            return np.einsum("irc,ikrc->ik", rigid, derivative)

        g_q = directional(0, 1e-6, central=True)
        g_dq = directional(1, 1.0, central=True)  # quadratic in dq: exact
        g_ddq = directional(2, 1.0, central=False)  # linear in ddq: exact
        joints = np.arange(n)
        has_viscous, has_armature = self._viscous >= 0, self._armature >= 0
        g_dq[:, has_viscous] += full[:, joints[has_viscous], self._viscous[has_viscous]]
        g_ddq[:, has_armature] += full[:, joints[has_armature], self._armature[has_armature]]
        return g_q, g_dq, g_ddq  # Coulomb sign and offset: zero derivative (almost everywhere)


def _link_model(model: pin.Model, joint_names: Sequence[str]) -> LinkModel:
    """The chain of ``joint_names`` with every drive term (viscous, Coulomb, offset, armature)."""
    try:
        return LinkModel.from_model(model, joint_names, drives=JointDrive())
    except ValueError as e:  # a multi-dof joint
        raise ProblemError(str(e)) from None


def sample_information(
    model: pin.Model,
    joint_names: Sequence[str],
    target: str,
    Q: np.ndarray,
    DQ: np.ndarray,
    DDQ: np.ndarray,
    *,
    sensor_frame: str | None = None,
    noise_std: Sequence[float] = DEFAULT_WRENCH_NOISE_STD,
    weight: float = 1.0,
) -> np.ndarray:
    """Information of joint samples ``Q, DQ, DDQ`` (N, n) in ``joint_names`` (model) order, each
    counted ``weight`` times: payload, the noise-weighted ``Y^T W Y`` (16, 16) of
    ``[theta, offset]``; links, ``Y^T Y`` (p, p) of the standard parameters of
    :class:`~inertia_id_ros.chain.links.LinkModel` with every drive term (torques in N·m)."""
    if target == "payload":
        if sensor_frame is None:
            raise ProblemError("target 'payload' needs sensor_frame")
        rows = _PayloadObjective(model, sensor_frame, joint_names, noise_std, None).rows(Q, DQ, DDQ)
    elif target == "links":
        rows = _link_model(model, joint_names).joint_torque_regressor(Q, DQ, DDQ)
    else:
        raise ProblemError(f"target must be one of {', '.join(TARGETS)}, got {target!r}")
    flat = rows.reshape(-1, rows.shape[-1])
    return weight * (flat.T @ flat)


def _check_prior(prior: np.ndarray | None, p: int) -> np.ndarray:
    if prior is None:
        return np.zeros((p, p))
    prior = np.asarray(prior, dtype=float)
    if prior.shape != (p, p) or not np.all(np.isfinite(prior)):
        raise ProblemError(
            f"prior_information must be a finite ({p}, {p}) matrix, got {prior.shape}"
        )
    return 0.5 * (prior + prior.T)


def _inverse(information: np.ndarray) -> np.ndarray:
    """Inverse of a symmetric positive definite matrix (pseudo-inverse when singular)."""
    try:
        factor = scipy.linalg.cho_factor(information)
        return scipy.linalg.cho_solve(factor, np.eye(information.shape[0]))
    except np.linalg.LinAlgError:
        return np.linalg.pinv(information) + 1e12 * np.eye(information.shape[0])


# ---- design ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class DesignStats:
    """How the optimisation went: L-BFGS-B ``iterations`` and objective ``evaluations``,
    wall-clock ``seconds``, the criterion of the best random initial motion, the
    number of harmonics and free variables, whether it stopped on the time limit, the smallest
    per-joint factor of the final scaling onto the limits (slightly above 1: the soft maximum
    is conservative), and the factors the whole motion was scaled by for the torque limits and
    for self-collision (1: not needed)."""

    iterations: int
    evaluations: int
    seconds: float
    initial_objective: float
    n_harmonics: int
    n_variables: int
    stopped_on_time: bool
    limit_scale: float
    torque_scale: float = 1.0
    collision_scale: float = 1.0


@dataclass(frozen=True)
class DesignResult:
    """A designed motion: ``trajectory``; ``objective`` the criterion of ``objective_name``
    (payload: kg·m², links: unitless) on the trajectory's own samples, prior included;
    ``information`` the predicted information matrix of the motion alone (payload: (16, 16),
    per F/T sample at ``measurement_rate_hz``; links: (p, p) of the standard parameters,
    torques in N·m) to pass as the next design's ``prior_information``; the ``limits`` used;
    the ``evaluator`` that scored it (to score other motions the same way); ``clearance``: its
    smallest self-collision distance (with a collision checker)."""

    trajectory: ExcitationTrajectory
    objective: float
    objective_name: str
    target: str
    limits: MotionLimits
    information: np.ndarray = field(repr=False)
    stats: DesignStats
    evaluator: MotionEvaluator = field(repr=False)
    clearance: Clearance | None = None


class MotionEvaluator:
    """The objective of ``target`` for ``joint_names`` of ``model``: :meth:`information` and
    :meth:`criterion` of any trajectory; used by the design and to compare motions. See
    :func:`design_excitation` for the arguments; links only: ``reference`` ``(Q, DQ, DDQ)``
    (M, n) the samples whose torques are predicted, which also choose the base columns
    (:func:`reference_samples`), and ``torque_noise_std`` (N·m per sample)."""

    def __init__(
        self,
        model: pin.Model,
        joint_names: Sequence[str],
        target: str,
        *,
        sensor_frame: str | None = None,
        prior_information: np.ndarray | None = None,
        noise_std: Sequence[float] = DEFAULT_WRENCH_NOISE_STD,
        measurement_rate_hz: float = DEFAULT_MEASUREMENT_RATE_HZ,
        reference: tuple[np.ndarray, ...] | None = None,
        torque_noise_std: float = DEFAULT_TORQUE_NOISE_STD,
    ) -> None:
        if target not in TARGETS:
            raise ProblemError(f"target must be one of {', '.join(TARGETS)}, got {target!r}")
        if not measurement_rate_hz > 0.0:
            raise ProblemError(f"measurement_rate_hz must be > 0, got {measurement_rate_hz}")
        self.target = target
        self.measurement_rate_hz = float(measurement_rate_hz)
        if target == "payload":
            if sensor_frame is None:
                raise ProblemError("target 'payload' needs sensor_frame")
            self._objective: _PayloadObjective | _LinksObjective = _PayloadObjective(
                model, sensor_frame, joint_names, noise_std, prior_information
            )
        else:
            if reference is None:
                raise ProblemError("target 'links' needs reference motion samples (Q, DQ, DDQ)")
            self._objective = _LinksObjective(
                model, joint_names, prior_information, reference, torque_noise_std
            )

    @property
    def name(self) -> str:
        """Name of the wrapped objective."""
        return self._objective.name

    def _rows_information(self, rows: np.ndarray, weight: float) -> np.ndarray:
        flat = rows.reshape(-1, rows.shape[-1])
        return weight * (flat.T @ flat)

    def information(
        self, Q: np.ndarray, DQ: np.ndarray, DDQ: np.ndarray, weight: float = 1.0
    ) -> np.ndarray:
        """Information of the samples (N, n), each counted ``weight`` times: payload (16, 16);
        links (p, p) of the standard parameters (rows of the full regressor)."""
        if self.target == "links":
            return self._rows_information(
                self._objective.links.joint_torque_regressor(Q, DQ, DDQ), weight
            )
        return self._rows_information(self._objective.rows(Q, DQ, DDQ), weight)

    def criterion_of(self, trajectory: ExcitationTrajectory) -> float:
        """Criterion of a trajectory's samples counted at ``measurement_rate_hz`` (prior
        included)."""
        weight = self.measurement_rate_hz * trajectory.duration / trajectory.t.size
        return self.criterion(self.information(trajectory.q, trajectory.dq, trajectory.ddq, weight))

    def criterion(self, information: np.ndarray) -> float:
        """Criterion of a motion's information (:meth:`information`) plus the prior."""
        objective = self._objective
        if self.target == "links":
            cols = objective.columns
            return objective.criterion(information[np.ix_(cols, cols)] + objective.prior)
        return objective.criterion(information + objective.prior)

    def value_and_gradient(
        self, Q: np.ndarray, DQ: np.ndarray, DDQ: np.ndarray, weight: float
    ) -> tuple[float, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Surrogate of the samples (each counted ``weight`` times, plus the prior) and its
        gradients (N, n) w.r.t. ``Q, DQ, DDQ``."""
        objective = self._objective
        rows = objective.rows(Q, DQ, DDQ)
        information = self._rows_information(rows, weight) + objective.prior
        f, d_information = objective.surrogate(information)
        H = 2.0 * weight * rows @ d_information
        return f, objective.pull_back(Q, DQ, DDQ, H)


def _random_coefficients(rng: np.random.Generator, n_free: int, n: int) -> np.ndarray:
    return rng.normal(size=(n_free, n))


def random_fourier_motion(
    limits: MotionLimits,
    start: np.ndarray,
    duration: float,
    n_harmonics: int = 5,
    seed: int = 0,
    rate_hz: float = DEFAULT_RATE_HZ,
) -> ExcitationTrajectory:
    """A random rest-to-rest Fourier motion (:class:`RestToRestFourier`, normal coefficients)
    whose every joint is scaled about ``start`` as far as the limits allow (position, velocity,
    acceleration, on a 1 kHz grid): the reference a design is compared with."""
    basis, X = _random_motion_coefficients(limits, start, duration, n_harmonics, seed)
    return basis.trajectory(X, start, limits.joint_names, rate_hz)


def _random_motion_coefficients(
    limits: MotionLimits, start: np.ndarray, duration: float, n_harmonics: int, seed: int
) -> tuple[RestToRestFourier, np.ndarray]:
    """The basis and coefficients of :func:`random_fourier_motion`."""
    basis = RestToRestFourier(duration, n_harmonics)
    X = _random_coefficients(np.random.default_rng(seed), basis.n_free, len(limits.joint_names))
    X *= _feasible_scale(X, start, limits, basis.evaluate(_midpoints(duration, CHECK_RATE_HZ))) * (
        1.0 - FEASIBILITY_SAFETY
    )
    return basis, X


def reference_samples(
    limits: MotionLimits, start: np.ndarray, duration: float, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(Q, DQ, DDQ)`` (M, n): the :data:`N_REFERENCE_MOTIONS` random motions
    (:func:`random_fourier_motion`, 5 harmonics, seeds from ``REFERENCE_SEEDS_FROM +
    N_REFERENCE_MOTIONS seed``) at ``OBJECTIVE_RATE_HZ``, stacked: the motions whose torques the
    links objective predicts (the robot's typical motions within the same limits)."""
    stacked = []
    for k in range(N_REFERENCE_MOTIONS):
        basis, X = _random_motion_coefficients(
            limits, start, duration, 5, REFERENCE_SEEDS_FROM + N_REFERENCE_MOTIONS * seed + k
        )
        Pq, Pdq, Pddq = basis.evaluate(_midpoints(duration, OBJECTIVE_RATE_HZ))
        stacked.append((start + Pq @ X, Pdq @ X, Pddq @ X))
    return tuple(np.vstack(parts) for parts in zip(*stacked))


def torque_excess(
    model: pin.Model, trajectory: ExcitationTrajectory, limits: MotionLimits
) -> float:
    """Largest ``|tau| / limit`` (1: at the limit) over the trajectory's samples, ``tau`` from
    RNEA of the URDF's links (the other joints at their neutral positions); 0 without torque
    limits."""
    if limits.torque is None:
        return 0.0
    links = LinkModel.from_model(
        model,
        trajectory.joint_names,
        drives=JointDrive(viscous=False, coulomb=False, offset=False, armature=False),
    )
    tau = links.joint_torque_regressor(trajectory.q, trajectory.dq, trajectory.ddq) @ links.prior
    return float(np.max(np.abs(tau) / limits.torque))


def design_excitation(
    model: pin.Model,
    joint_names: Sequence[str],
    target: str,
    duration: float,
    *,
    sensor_frame: str | None = None,
    start: Sequence[float] | None = None,
    max_acceleration: float = DEFAULT_MAX_ACCELERATION,
    seed: int = 0,
    prior_information: np.ndarray | None = None,
    progress: Callable[[str], None] | None = None,
    time_limit: float | None = None,
    position_margin: float = DEFAULT_POSITION_MARGIN,
    torque_limits: bool = False,
    noise_std: Sequence[float] = DEFAULT_WRENCH_NOISE_STD,
    measurement_rate_hz: float = DEFAULT_MEASUREMENT_RATE_HZ,
    rate_hz: float = DEFAULT_RATE_HZ,
    collision: CollisionChecker | None = None,
    collision_margin: float = DEFAULT_COLLISION_MARGIN,
) -> DesignResult:
    """Design an exciting motion of ``joint_names`` (model order) of the fixed-base ``model``
    for ``target`` (``"payload"`` beyond ``sensor_frame``, or ``"links"``) lasting ``duration``
    s, starting and ending at rest at ``start`` (rad; default the middle of the limits), within
    :func:`motion_limits` (``position_margin``, ``max_acceleration``, ``torque_limits``); see
    the module docstring. ``seed`` draws the random motions the best of which is the initial
    one (and, for the links, the reference motions, :func:`reference_samples`);
    ``prior_information`` is the information already gathered (a previous
    :attr:`DesignResult.information`, or of a recording:
    :func:`inertia_id_ros.offline.information.recording_information`); ``progress`` receives
    one-line messages; ``time_limit`` (s, default :data:`DEFAULT_TIME_LIMIT`) bounds the
    optimisation. ``noise_std`` and ``measurement_rate_hz``: the F/T noise per sample and the
    sample rate the payload's standard errors are predicted for. The result is sampled at
    ``rate_hz``. ``collision``: keep collision distances (self and obstacles) >=
    ``collision_margin`` (m).

    Raises :class:`~inertia_id_ros.errors.ProblemError` on bad input (unknown target, no range
    left, start outside the limits) and the model's :class:`~inertia_id_ros.errors.JointNotFound`
    / :class:`~inertia_id_ros.errors.FrameNotFound`.
    """
    began = time.perf_counter()
    say = progress or (lambda message: None)
    if target not in TARGETS:
        raise ProblemError(f"target must be one of {', '.join(TARGETS)}, got {target!r}")
    if not (np.isfinite(duration) and duration > 0.0):
        raise ProblemError(f"duration must be > 0 s, got {duration}")
    if not rate_hz >= DEFAULT_RATE_HZ:
        raise ProblemError(f"rate_hz must be >= {DEFAULT_RATE_HZ:g}, got {rate_hz}")
    joint_names = tuple(joint_names)
    limits = motion_limits(
        model,
        joint_names,
        position_margin=position_margin,
        max_acceleration=max_acceleration,
        torque_limits=torque_limits,
    )
    n = len(joint_names)
    start = 0.5 * (limits.lower + limits.upper) if start is None else np.asarray(start, dtype=float)
    if start.shape != (n,):
        raise ProblemError(f"start must have one position per joint ({n}), got {start.shape}")
    outside = [
        f"{name} ({value:.3f} not in [{lo:.3f}, {hi:.3f}])"
        for name, value, lo, hi in zip(joint_names, start, limits.lower, limits.upper)
        if not lo < value < hi
    ]
    if outside:
        raise ProblemError(
            "start is not strictly within the limits less the margin: " + ", ".join(outside)
        )
    if collision is not None:
        at_start = collision.distances(joint_names, start[None])[0]
        if np.min(at_start) < collision_margin:
            k = int(np.argmin(at_start))
            raise ProblemError(
                f"the start pose is within {1e3 * at_start[k]:.1f} mm of "
                f"collision ({' and '.join(collision.pair_names(k))}), less "
                f"than the margin {1e3 * collision_margin:g} mm"
            )
    budget = DEFAULT_TIME_LIMIT[target] if time_limit is None else float(time_limit)

    basis = RestToRestFourier(duration, max(int(round(duration * MAX_FREQUENCY_HZ)), 5))
    t_objective = _midpoints(duration, OBJECTIVE_RATE_HZ)
    P_obj = basis.evaluate(t_objective)
    P_con = basis.evaluate(_midpoints(duration, CONSTRAINT_RATE_HZ))
    P_col = basis.evaluate(_midpoints(duration, COLLISION_RATE_HZ))[0]
    weight = measurement_rate_hz * duration / t_objective.size
    rng = np.random.default_rng(seed)
    candidates = [_random_coefficients(rng, basis.n_free, n) for _ in range(N_STARTS)]
    candidates = [X * _feasible_scale(X, start, limits, P_con) for X in candidates]

    def states(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return start + P_obj[0] @ X, P_obj[1] @ X, P_obj[2] @ X

    evaluator = MotionEvaluator(
        model,
        joint_names,
        target,
        sensor_frame=sensor_frame,
        prior_information=prior_information,
        noise_std=noise_std,
        measurement_rate_hz=measurement_rate_hz,
        reference=(reference_samples(limits, start, duration, seed) if target == "links" else None),
    )
    scores = [evaluator.criterion(evaluator.information(*states(X), weight)) for X in candidates]
    X0, initial = candidates[int(np.argmin(scores))], min(scores)
    say(
        f"{target}: {basis.harmonics.size} harmonics, {basis.n_free * n} variables, "
        f"initial {evaluator.name} {initial:.4g}"
    )

    counters = {"evaluations": 0, "iterations": 0}
    stop = {"at": budget}
    P_stack = np.vstack(P_con)  # (3 M, n_free): positions, velocities, accelerations
    up, down = limits.upper - start, start - limits.lower

    def soft_scale(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per joint ``s = 1 / softmax(usage)`` (usage: each sample's value over its limit, a
        soft maximum >= the maximum, so ``X s`` is within the limits) and ``ds/dX``."""
        d, v, a = (P @ X for P in P_con)
        usage = np.vstack(
            [
                np.where(d > 0.0, d / up, -d / down),
                np.abs(v) / limits.velocity,
                np.abs(a) / limits.acceleration,
            ]
        )
        d_usage = np.vstack(
            [
                np.where(d > 0.0, 1.0 / up, -1.0 / down),
                np.sign(v) / limits.velocity,
                np.sign(a) / limits.acceleration,
            ]
        )
        top = usage.max(axis=0)
        e = np.exp(_SOFTMAX_SHARPNESS * (usage - top))
        total = e.sum(axis=0)
        scale = 1.0 / (top + np.log(total) / _SOFTMAX_SHARPNESS)
        return scale, -(scale**2) * (P_stack.T @ (e / total * d_usage))

    phase = {"collision": False}

    def collision_penalty(X: np.ndarray) -> tuple[float, np.ndarray]:
        if not phase["collision"]:
            return 0.0, np.zeros_like(X)
        threshold = collision_margin + COLLISION_BUFFER
        rows, _, distances, d_distances = collision.near(joint_names, start + P_col @ X, threshold)
        shortfall = (threshold - distances) / COLLISION_BUFFER
        gradient = -P_col[rows].T @ (
            (2.0 * _COLLISION_WEIGHT * shortfall / COLLISION_BUFFER)[:, None] * d_distances
        )
        return _COLLISION_WEIGHT * float(np.sum(shortfall**2)), gradient

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        counters["evaluations"] += 1
        X = x.reshape(basis.n_free, n)
        scale, d_scale = soft_scale(X)
        scaled = X * scale
        f, (g_q, g_dq, g_ddq) = evaluator.value_and_gradient(*states(scaled), weight)
        p, g_p = collision_penalty(scaled)
        g_scaled = P_obj[0].T @ g_q + P_obj[1].T @ g_dq + P_obj[2].T @ g_ddq + g_p
        gradient = g_scaled * scale + d_scale * np.sum(g_scaled * X, axis=0)
        return f + p, gradient.ravel()

    def callback(intermediate_result: scipy.optimize.OptimizeResult) -> None:
        counters["iterations"] += 1
        if counters["iterations"] % 25 == 0:
            say(
                f"  iteration {counters['iterations']}: surrogate "
                f"{intermediate_result.fun:.5g}, {time.perf_counter() - began:.1f} s"
            )
        if time.perf_counter() - began > stop["at"]:
            raise StopIteration

    def optimise(x: np.ndarray, deadline: float) -> tuple[np.ndarray, str]:
        """L-BFGS-B from ``x`` until ``deadline`` (s since the start), restarted while it
        improves (line searches can fail where a distance kinks)."""
        best, stalls = np.inf, 0
        while True:
            stop["at"] = deadline
            result = scipy.optimize.minimize(
                fun,
                x,
                jac=True,
                method="L-BFGS-B",
                callback=callback,
                options={"maxiter": 100000, "ftol": 0.0, "gtol": 0.0},
            )
            x = result.x
            if time.perf_counter() - began > deadline:
                return x, f"time limit {deadline:g} s reached"
            stalls = stalls + 1 if result.fun > best - 1e-9 * abs(best) else 0
            best = min(best, float(result.fun))
            if stalls >= 2:
                return x, f"optimiser stopped: {result.message}"

    # without the collision penalty first (smooth), then with it from there
    x, message = optimise(X0.ravel(), budget * (COLLISION_FREE_SHARE if collision else 1.0))
    say(f"  {message}")
    if collision is not None:
        phase["collision"] = True
        x, message = optimise(x, budget)
        say(f"  with self-collision distances: {message}")
    stopped_on_time = time.perf_counter() - began > budget
    X = x.reshape(basis.n_free, n)
    X = X * soft_scale(X)[0]
    scale = _feasible_scale(X, start, limits, basis.evaluate(_midpoints(duration, CHECK_RATE_HZ)))
    X = X * (scale * (1.0 - FEASIBILITY_SAFETY))
    torque_scale = 1.0
    trajectory = basis.trajectory(X, start, joint_names, rate_hz)
    if limits.torque is not None:
        while torque_excess(model, trajectory, limits) > 1.0 - FEASIBILITY_SAFETY:
            torque_scale *= 0.95
            trajectory = basis.trajectory(X * torque_scale, start, joint_names, rate_hz)
    clearance, collision_scale = None, 1.0
    if collision is not None:
        clearance = collision.clearance(trajectory)
        if clearance.distance < collision_margin:
            low, high = 0.0, 1.0  # scale toward start: 0 is the start pose, clear
            for _ in range(12):
                middle = 0.5 * (low + high)
                candidate = basis.trajectory(X * torque_scale * middle, start, joint_names, rate_hz)
                if collision.clearance(candidate).distance >= collision_margin:
                    low = middle
                else:
                    high = middle
            collision_scale = low
            trajectory = basis.trajectory(X * torque_scale * low, start, joint_names, rate_hz)
            clearance = collision.clearance(trajectory)
            say(f"  scaled by {low:.3f} toward the start to clear self-collision")
    sample_weight = measurement_rate_hz * duration / trajectory.t.size
    information = evaluator.information(trajectory.q, trajectory.dq, trajectory.ddq, sample_weight)
    objective = evaluator.criterion(information)
    seconds = time.perf_counter() - began
    say(
        f"{target}: {evaluator.name} {objective:.4g} (initial {initial:.4g}), "
        f"{counters['iterations']} iterations, {seconds:.1f} s"
    )
    stats = DesignStats(
        counters["iterations"],
        counters["evaluations"],
        seconds,
        initial,
        basis.harmonics.size,
        basis.n_free * n,
        stopped_on_time,
        float(np.min(scale)),
        torque_scale,
        collision_scale,
    )
    return DesignResult(
        trajectory,
        objective,
        evaluator.name,
        target,
        limits,
        information,
        stats,
        evaluator,
        clearance,
    )
