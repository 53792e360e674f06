"""What an exciting motion is designed for: the objectives, one class per target, and their
registry.

An objective (:class:`ExcitationObjective`) owns everything about its target: the information
matrix of joint samples (:meth:`~ExcitationObjective.information`; of a recording:
:meth:`~ExcitationObjective.sample_information`), the criterion of a motion's information plus
the prior (:meth:`~ExcitationObjective.criterion`: what a design reports), the smooth surrogate
the optimiser minimises and its gradient through the kinematics
(:meth:`~ExcitationObjective.value_and_gradient`), its default optimisation time, whether it
needs an F/T sensor frame and which recorded signal its rows predict. :data:`OBJECTIVES` maps each
target name (:data:`~inertia_id_ros.options.TARGETS`) to its class, :func:`objective_type` looks
one up: the design and the command line never ask which target they have.

The information of a motion is that of its samples at ``measurement_rate_hz``; the design
evaluates it on a coarser grid of :data:`OBJECTIVE_RATE_HZ` and scales it (a periodic integrand
makes this accurate).

- ``payload`` (:class:`PayloadObjective`): rows of the payload regressor
  ``[body_regressor(v, a_g) | I_6]`` (10 body parameters and the 6 F/T offsets,
  :mod:`inertia_id_ros.core.regressors`), each channel divided by its noise standard deviation
  (0.1 N, 0.005 N·m per sample by default). The criterion is the largest predicted standard
  error of the six rotational-inertia parameters, ``max_k sqrt(C_kk)``, ``C = M^-1``,
  ``M = prior + sum Y^T W Y``; the optimiser minimises the smooth surrogate
  ``(1/p) log sum_k C_kk^p`` (``p = 8``). Gradients: pinocchio's frame-acceleration
  derivatives.
- ``links`` (:class:`LinksObjective`): the outcome of identification, predicted: the expected
  RMS joint-torque error, on motions the fit has not seen, of the base parameters identified
  along the motion. Rows: the joint-torque regressor of the chain with every joint's viscous,
  Coulomb, offset and armature columns (:class:`~inertia_id_ros.chain.links.LinkModel`) and,
  given a transmission's ``coupling`` (:attr:`ObjectiveSettings.coupling`), each coupled motor's
  armature, viscous and Coulomb columns (:mod:`inertia_id_ros.chain.motors`), reduced to its
  base columns (:func:`~inertia_id_ros.chain.links.base_parameters` of the reference motions),
  white torque noise ``sigma`` (0.1 N·m per sample); the least-squares base parameters have the
  covariance ``sigma² M^-1`` (``M = prior + sum Y^T Y``), so their torque error on the
  samples of :func:`reference_samples` (8 random motions within the same limits: what the robot
  typically does) has the mean square ``trace(G_ref M^-1)``,
  ``G_ref = sigma² Y_ref^T Y_ref / rows``. The criterion is its square root (N·m, an I-optimal
  design); the optimiser minimises its log. Unlike a condition number it weighs every direction
  of the parameters by what it does to the torques, in the parameters' own units, so it does not
  depend on a column scaling. Gradients: finite differences of the rigid-body regressor that
  are exact in ``dq`` (quadratic) and ``ddq`` (linear) and central in ``q``; the drive and
  motor columns' analytically.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field, replace
from typing import ClassVar

import numpy as np
import pinocchio as pin
import scipy.linalg

from inertia_id_ros.chain.base_parameters import base_parameters
from inertia_id_ros.chain.friction import JointDrive
from inertia_id_ros.chain.links import JointTorqueData, LinkModel
from inertia_id_ros.chain.motors import MOTOR_TERMS, MotorCoupling
from inertia_id_ros.core.inertia import N_BODY_PARAMS
from inertia_id_ros.core.kinematics import SensorKinematics
from inertia_id_ros.core.regressors import N_WRENCH_CHANNELS, body_regressor_batch
from inertia_id_ros.errors import ProblemError
from inertia_id_ros.motion.fourier import RANDOM_HARMONICS, midpoints, random_motion_coefficients
from inertia_id_ros.motion.limits import MotionLimits
from inertia_id_ros.motion.trajectory import ExcitationTrajectory
from inertia_id_ros.options import DESIGN_TIME_LIMITS, TARGETS

DEFAULT_WRENCH_NOISE_STD = (0.1, 0.1, 0.1, 0.005, 0.005, 0.005)
"""N, N·m: F/T noise per sample assumed by the payload objective."""
DEFAULT_TORQUE_NOISE_STD = 0.1
"""N·m: joint-torque noise per sample assumed by the links objective (scales it, does not
change which motion is best)."""
DEFAULT_MEASUREMENT_RATE_HZ = 100.0
"""Hz: rate of the measurements the predicted errors are for."""
OBJECTIVE_RATE_HZ = 10.0
"""Hz: time samples on which a design evaluates the objective (and the links' reference
motions are sampled)."""
INERTIA_SLICE = slice(4, N_BODY_PARAMS)
"""The six rotational-inertia entries of theta."""
_SOFTMAX_POWER = 8.0
N_REFERENCE_MOTIONS = 8
"""Random reference motions (5 harmonics, limits, start, duration of the design) whose torques
the links objective predicts."""
REFERENCE_SEEDS_FROM = 10_000
"""First seed of the reference motions (design ``seed`` s: ``REFERENCE_SEEDS_FROM + 8 s ..``)."""

JointSamples = tuple[np.ndarray, np.ndarray, np.ndarray]
"""``(Q, DQ, DDQ)`` (N, n): joint positions, velocities, accelerations (rad, rad/s, rad/s²)."""


@dataclass(frozen=True)
class ObjectiveSettings:
    """What an objective assumes of the measurements: ``sensor_frame`` (the F/T sensor's URDF
    frame, for an objective that :attr:`~ExcitationObjective.takes_sensor_frame`),
    ``prior_information`` (the information already gathered, in the parameters of
    :meth:`ExcitationObjective.information`: a previous design's, or a recording's), the noise
    of a sample (``wrench_noise_std`` (6,) N, N·m; ``torque_noise_std`` N·m),
    ``measurement_rate_hz``, the sample rate the predicted errors are for, and ``coupling``
    (links only): the transmission whose coupled motors' rotor inertia and friction the torques
    hold (only each row's ratios matter: gear ratios may be left out)."""

    sensor_frame: str | None = None
    prior_information: np.ndarray | None = field(default=None, repr=False)
    wrench_noise_std: tuple[float, ...] = DEFAULT_WRENCH_NOISE_STD
    torque_noise_std: float = DEFAULT_TORQUE_NOISE_STD
    measurement_rate_hz: float = DEFAULT_MEASUREMENT_RATE_HZ
    coupling: MotorCoupling | None = None


@dataclass(frozen=True)
class MotionEnvelope:
    """The motions a design chooses among: within ``limits``, from and to ``start`` (n,) (rad, m)
    at rest, lasting ``duration`` s; ``seed`` draws their random representatives."""

    limits: MotionLimits
    start: np.ndarray
    duration: float
    seed: int = 0


class ExcitationObjective(abc.ABC):
    """The objective of one target over ``joint_names`` (model order) of a fixed-base model (the
    module docstring): the information ``M`` of samples in its ``n_parameters`` parameters, the
    criterion of ``M`` plus the prior (possibly on fewer parameters: :meth:`reduce`) and its
    surrogate's gradients. A subclass sets the class attributes, builds its rows and calls
    ``super().__init__`` with its ``n_parameters``; :data:`OBJECTIVES` registers it."""

    target: ClassVar[str]
    """Its target's name (a key of :data:`OBJECTIVES`)."""
    name: ClassVar[str]
    """What its criterion is, with the unit."""
    default_time_limit: ClassVar[float]
    """s: a design's default optimisation time."""
    takes_sensor_frame: ClassVar[bool] = False
    """Whether it needs :attr:`ObjectiveSettings.sensor_frame` (and only then takes one)."""
    measured: ClassVar[str]
    """The recorded signal its rows predict (``"wrench"``, ``"effort"``: the key of a recording
    file, :mod:`inertia_id_ros.formats.data`); a recording's samples of it count."""

    def __init__(self, settings: ObjectiveSettings, n_parameters: int) -> None:
        if not settings.measurement_rate_hz > 0.0:
            raise ProblemError(
                f"measurement_rate_hz must be > 0, got {settings.measurement_rate_hz}"
            )
        self.settings = settings
        self.n_parameters = n_parameters
        self.prior_information = _checked_prior(settings.prior_information, n_parameters)

    @classmethod
    @abc.abstractmethod
    def for_design(
        cls,
        model: pin.Model,
        joint_names: tuple[str, ...],
        settings: ObjectiveSettings,
        envelope: MotionEnvelope,
    ) -> ExcitationObjective:
        """The objective of a design among the motions of ``envelope``."""

    @classmethod
    @abc.abstractmethod
    def sample_information(
        cls,
        model: pin.Model,
        joint_names: tuple[str, ...],
        samples: JointSamples,
        settings: ObjectiveSettings,
        weight: float = 1.0,
    ) -> np.ndarray:
        """:meth:`information` of ``samples`` (N, n) without a whole objective (the prior and
        what only the criterion needs left out): of a recording."""

    @abc.abstractmethod
    def sample_rows(self, Q: np.ndarray, DQ: np.ndarray, DDQ: np.ndarray) -> np.ndarray:
        """(N, r, n_parameters) rows of the information of samples (N, n)."""

    def rows(self, Q: np.ndarray, DQ: np.ndarray, DDQ: np.ndarray) -> np.ndarray:
        """(N, r, p) rows of the criterion's parameters (:meth:`reduce`'s)."""
        return self.sample_rows(Q, DQ, DDQ)

    def reduce(self, information: np.ndarray) -> np.ndarray:
        """The criterion's (p, p) part of an information matrix (n_parameters, n_parameters)."""
        return information

    @property
    def prior(self) -> np.ndarray:
        """(p, p) the prior information on the criterion's parameters."""
        return self.reduce(self.prior_information)

    @abc.abstractmethod
    def criterion_of_total(self, information: np.ndarray) -> float:
        """The criterion of the whole (p, p) information (prior included)."""

    @abc.abstractmethod
    def surrogate(self, information: np.ndarray) -> tuple[float, np.ndarray]:
        """``(f, df/dM)``: what the optimiser minimises, of the whole (p, p) information ``M``,
        and its gradient."""

    @abc.abstractmethod
    def pull_back(
        self, Q: np.ndarray, DQ: np.ndarray, DDQ: np.ndarray, H: np.ndarray
    ) -> JointSamples:
        """Gradients (N, n) w.r.t. ``Q, DQ, DDQ`` of ``sum_i <H_i, rows_i>`` (``H`` shaped as
        :meth:`rows`)."""

    def information(
        self, Q: np.ndarray, DQ: np.ndarray, DDQ: np.ndarray, weight: float = 1.0
    ) -> np.ndarray:
        """Information (n_parameters, n_parameters) of the samples (N, n), each counted
        ``weight`` times."""
        return gram(self.sample_rows(Q, DQ, DDQ), weight)

    def criterion(self, information: np.ndarray) -> float:
        """Criterion of a motion's information (:meth:`information`) plus the prior."""
        return self.criterion_of_total(self.reduce(information) + self.prior)

    def trajectory_information(self, trajectory: ExcitationTrajectory) -> np.ndarray:
        """:meth:`information` of a trajectory's samples counted at ``measurement_rate_hz``."""
        weight = self.settings.measurement_rate_hz * trajectory.duration / trajectory.t.size
        return self.information(trajectory.q, trajectory.dq, trajectory.ddq, weight)

    def criterion_of(self, trajectory: ExcitationTrajectory) -> float:
        """Criterion of a trajectory's samples counted at ``measurement_rate_hz`` (prior
        included)."""
        return self.criterion(self.trajectory_information(trajectory))

    def value_and_gradient(
        self, Q: np.ndarray, DQ: np.ndarray, DDQ: np.ndarray, weight: float
    ) -> tuple[float, JointSamples]:
        """Surrogate of the samples (each counted ``weight`` times, plus the prior) and its
        gradients (N, n) w.r.t. ``Q, DQ, DDQ``."""
        rows = self.rows(Q, DQ, DDQ)
        f, d_information = self.surrogate(gram(rows, weight) + self.prior)
        H = 2.0 * weight * rows @ d_information
        return f, self.pull_back(Q, DQ, DDQ, H)


class PayloadObjective(ExcitationObjective):
    """Predicted precision of the payload's rotational inertia (module docstring); its
    information is that of ``[theta, offset]`` (16, 16), per F/T sample."""

    target = "payload"
    name = "largest predicted std of the 6 inertia parameters (kg·m²)"
    default_time_limit = DESIGN_TIME_LIMITS["payload"]
    takes_sensor_frame = True
    measured = "wrench"

    def __init__(
        self, model: pin.Model, joint_names: tuple[str, ...], settings: ObjectiveSettings
    ) -> None:
        if settings.sensor_frame is None:
            raise ProblemError("target 'payload' needs sensor_frame")
        if settings.coupling is not None:
            raise ProblemError("target 'payload' takes no coupling (it predicts F/T wrenches)")
        super().__init__(settings, N_BODY_PARAMS + N_WRENCH_CHANNELS)
        try:
            self.kinematics = SensorKinematics(model, settings.sensor_frame, joint_names)
        except ValueError as e:  # a joint that does not move the frame, or a multi-dof joint
            raise ProblemError(str(e)) from None
        if self.kinematics.joint_names != tuple(joint_names):
            raise ProblemError(
                f"joints must be given in model order: {list(self.kinematics.joint_names)}"
            )
        self._model = self.kinematics.reduced_model
        self._data = self._model.createData()
        self._frame = self._model.getFrameId(settings.sensor_frame)
        self._gravity = self._model.gravity.linear.copy()
        noise = np.asarray(settings.wrench_noise_std, dtype=float)
        self.sqrt_weight = 1.0 / noise.reshape(N_WRENCH_CHANNELS)
        basis = np.zeros((6, N_WRENCH_CHANNELS, N_BODY_PARAMS))  # d rows / d a_k, constant
        for k in range(6):
            unit = np.zeros((1, 6))
            unit[0, k] = 1.0
            basis[k] = body_regressor_batch(np.zeros((1, 6)), unit)[0]
        self._d_rows_d_a = basis * self.sqrt_weight[None, :, None]

    @classmethod
    def for_design(
        cls,
        model: pin.Model,
        joint_names: tuple[str, ...],
        settings: ObjectiveSettings,
        envelope: MotionEnvelope,
    ) -> PayloadObjective:
        """The payload's objective (whatever the motions)."""
        return cls(model, joint_names, settings)

    @classmethod
    def sample_information(
        cls,
        model: pin.Model,
        joint_names: tuple[str, ...],
        samples: JointSamples,
        settings: ObjectiveSettings,
        weight: float = 1.0,
    ) -> np.ndarray:
        """The noise-weighted ``Y^T W Y`` (16, 16) of ``[theta, offset]``."""
        objective = cls(model, joint_names, replace(settings, prior_information=None))
        return objective.information(*samples, weight)

    def sample_rows(self, Q: np.ndarray, DQ: np.ndarray, DDQ: np.ndarray) -> np.ndarray:
        """(N, 6, 16) noise-weighted regressor rows."""
        V, A = self.kinematics.compute_batch(Q, DQ, DDQ)
        return self._weighted(V, A)

    def _weighted(self, V: np.ndarray, A: np.ndarray) -> np.ndarray:
        out = np.empty((V.shape[0], N_WRENCH_CHANNELS, self.n_parameters))
        out[:, :, :N_BODY_PARAMS] = body_regressor_batch(V, A) * self.sqrt_weight[None, :, None]
        out[:, :, N_BODY_PARAMS:] = np.diag(self.sqrt_weight)
        return out

    def criterion_of_total(self, information: np.ndarray) -> float:
        """``max_k sqrt(C_kk)`` (kg·m²) over the six inertia parameters, ``C = M^-1``."""
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
    ) -> JointSamples:
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


class LinksObjective(ExcitationObjective):
    """Predicted held-out joint-torque error of the identified links (module docstring); its
    information is that of the standard parameters (p, p) of
    :class:`~inertia_id_ros.chain.links.LinkModel` with every drive term and the settings'
    coupled motors (torques in N·m), its criterion on the base columns of ``reference``
    ``(Q, DQ, DDQ)`` (M, n), the samples whose torques it predicts (:func:`reference_samples`)."""

    target = "links"
    name = "predicted held-out torque RMS error (N·m)"
    default_time_limit = DESIGN_TIME_LIMITS["links"]
    measured = "effort"

    def __init__(
        self,
        model: pin.Model,
        joint_names: tuple[str, ...],
        settings: ObjectiveSettings,
        reference: JointSamples,
    ) -> None:
        self.links = _link_model(model, joint_names, settings.coupling)
        if self.links.joint_names != tuple(joint_names):
            raise ProblemError(
                f"joints must be given in model order: {list(self.links.joint_names)}"
            )
        noise = settings.torque_noise_std
        if not noise > 0.0:
            raise ProblemError(f"torque_noise_std must be > 0 N·m, got {noise}")
        super().__init__(settings, self.links.n_parameters)
        Q, DQ, DDQ = reference
        base = base_parameters(self.links, JointTorqueData(Q, DQ, DDQ, np.zeros_like(Q)))
        self.columns = np.sort(base.independent)
        rows = self.rows(Q, DQ, DDQ).reshape(-1, self.columns.size)
        # (n_base, n_base) sigma² Y_ref^T Y_ref / rows: a parameter error e makes the mean
        # squared torque error e^T (reference_gram / sigma²) e on the reference motions
        self.reference_gram = noise**2 * (rows.T @ rows) / rows.shape[0]
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

    @classmethod
    def for_design(
        cls,
        model: pin.Model,
        joint_names: tuple[str, ...],
        settings: ObjectiveSettings,
        envelope: MotionEnvelope,
    ) -> LinksObjective:
        """The links' objective on the envelope's reference motions
        (:func:`reference_samples`)."""
        reference = reference_samples(
            envelope.limits, envelope.start, envelope.duration, envelope.seed
        )
        return cls(model, joint_names, settings, reference)

    @classmethod
    def sample_information(
        cls,
        model: pin.Model,
        joint_names: tuple[str, ...],
        samples: JointSamples,
        settings: ObjectiveSettings,
        weight: float = 1.0,
    ) -> np.ndarray:
        """``Y^T Y`` (p, p) of the standard parameters (torques in N·m)."""
        links = _link_model(model, joint_names, settings.coupling)
        return gram(links.joint_torque_regressor(*samples), weight)

    def sample_rows(self, Q: np.ndarray, DQ: np.ndarray, DDQ: np.ndarray) -> np.ndarray:
        """(N, n, p) rows of the full regressor (N·m per SI unit)."""
        return self.links.joint_torque_regressor(Q, DQ, DDQ)

    def rows(self, Q: np.ndarray, DQ: np.ndarray, DDQ: np.ndarray) -> np.ndarray:
        """(N, n, n_base) base-regressor rows (unscaled, N·m per SI unit)."""
        return self.links.joint_torque_regressor(Q, DQ, DDQ)[:, :, self.columns]

    def reduce(self, information: np.ndarray) -> np.ndarray:
        """The base columns' block."""
        return information[np.ix_(self.columns, self.columns)]

    def criterion_of_total(self, information: np.ndarray) -> float:
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
    ) -> JointSamples:
        """Gradients (N, n) w.r.t. ``Q, DQ, DDQ`` of ``sum_i <H_i, rows_i>``
        (``H`` (N, n, n_base))."""
        n_samples, n = Q.shape
        full = np.zeros((n_samples, n, self.n_parameters))
        full[:, :, self.columns] = H
        rigid = full[:, :, : self._n_rigid]
        samples = (Q, DQ, DDQ)
        g_q = self._rigid_derivative(rigid, samples, 0, 1e-6, central=True)
        g_dq = self._rigid_derivative(rigid, samples, 1, 1.0, central=True)  # quadratic: exact
        g_ddq = self._rigid_derivative(rigid, samples, 2, 1.0, central=False)  # linear: exact
        joints = np.arange(n)
        has_viscous, has_armature = self._viscous >= 0, self._armature >= 0
        g_dq[:, has_viscous] += full[:, joints[has_viscous], self._viscous[has_viscous]]
        g_ddq[:, has_armature] += full[:, joints[has_armature], self._armature[has_armature]]
        motors = full[:, :, self.n_parameters - self.links.n_motor_parameters :]
        motors = motors.reshape(n_samples, n, -1, len(MOTOR_TERMS))
        for k, motor in enumerate(self.links.motors):
            d_dq, d_ddq = motor.pull_back(motors[:, :, k], DQ)
            g_dq += d_dq
            g_ddq += d_ddq
        return g_q, g_dq, g_ddq  # joints' Coulomb sign and offset: zero (almost everywhere)

    def _rigid_rows(self, Q: np.ndarray, DQ: np.ndarray, DDQ: np.ndarray) -> np.ndarray:
        return self.links.joint_torque_regressor(Q, DQ, DDQ)[:, :, : self._n_rigid]

    def _rigid_derivative(
        self, rigid: np.ndarray, samples: JointSamples, which: int, step: float, central: bool
    ) -> np.ndarray:
        """(N, n): ``<H_i, d rows_i / d x_ik>`` of the rigid-body columns ``rigid`` of ``H``,
        ``x = samples[which]``, by a difference of ``step``."""
        n_samples, n = samples[0].shape
        inputs = [np.repeat(x[:, None, :], n, axis=1) for x in samples]
        plus = [x.copy() for x in inputs]
        plus[which] += step * np.eye(n)
        up = self._rigid_rows(*(x.reshape(-1, n) for x in plus))
        up = up.reshape(n_samples, n, n, self._n_rigid)
        if central:
            minus = [x.copy() for x in inputs]
            minus[which] -= step * np.eye(n)
            down = self._rigid_rows(*(x.reshape(-1, n) for x in minus)).reshape(up.shape)
            derivative = (up - down) / (2.0 * step)
        else:
            derivative = (up - self._rigid_rows(*samples)[:, None]) / step
        return np.einsum("irc,ikrc->ik", rigid, derivative)


OBJECTIVES: dict[str, type[ExcitationObjective]] = {
    objective.target: objective for objective in (PayloadObjective, LinksObjective)
}
"""The objectives by target name, in :data:`~inertia_id_ros.options.TARGETS` order (a test
checks they agree)."""


def objective_type(target: str) -> type[ExcitationObjective]:
    """The objective of ``target``; :class:`~inertia_id_ros.errors.ProblemError` for an unknown
    one."""
    try:
        return OBJECTIVES[target]
    except KeyError:
        raise ProblemError(f"target must be one of {', '.join(TARGETS)}, got {target!r}") from None


def reference_samples(
    limits: MotionLimits, start: np.ndarray, duration: float, seed: int = 0
) -> JointSamples:
    """``(Q, DQ, DDQ)`` (M, n): the :data:`N_REFERENCE_MOTIONS` random motions
    (:func:`~inertia_id_ros.motion.fourier.random_fourier_motion`, 5 harmonics, seeds from
    ``REFERENCE_SEEDS_FROM + N_REFERENCE_MOTIONS seed``) at ``OBJECTIVE_RATE_HZ``, stacked: the
    motions whose torques the links objective predicts (the robot's typical motions within the
    same limits)."""
    stacked = []
    for k in range(N_REFERENCE_MOTIONS):
        basis, X = random_motion_coefficients(
            limits,
            start,
            duration,
            RANDOM_HARMONICS,
            REFERENCE_SEEDS_FROM + N_REFERENCE_MOTIONS * seed + k,
        )
        Pq, Pdq, Pddq = basis.evaluate(midpoints(duration, OBJECTIVE_RATE_HZ))
        stacked.append((start + Pq @ X, Pdq @ X, Pddq @ X))
    Q, DQ, DDQ = (np.vstack(parts) for parts in zip(*stacked))
    return Q, DQ, DDQ


def gram(rows: np.ndarray, weight: float) -> np.ndarray:
    """``weight Y^T Y`` of rows (..., p) stacked into ``Y``."""
    flat = rows.reshape(-1, rows.shape[-1])
    return weight * (flat.T @ flat)


def _link_model(
    model: pin.Model, joint_names: tuple[str, ...], coupling: MotorCoupling | None
) -> LinkModel:
    """The chain of ``joint_names`` with every drive term (viscous, Coulomb, offset, armature)
    and the coupled motors of ``coupling``."""
    try:
        return LinkModel.from_model(model, joint_names, drives=JointDrive(), coupling=coupling)
    except ValueError as e:  # a multi-dof joint, a coupled motor turning with a joint not moved
        raise ProblemError(str(e)) from None


def _checked_prior(prior: np.ndarray | None, p: int) -> np.ndarray:
    """The symmetric part of ``prior`` (p, p) (zeros for ``None``)."""
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
        return np.asarray(scipy.linalg.cho_solve(factor, np.eye(information.shape[0])))
    except np.linalg.LinAlgError:
        return np.asarray(np.linalg.pinv(information) + 1e12 * np.eye(information.shape[0]))
