"""Online payload identification from joint torques: joint states with efforts in, a physically
consistent payload out (no F/T sensor).

The counterpart of :mod:`inertia_id_ros.online.payload_estimator` (a payload beyond an F/T
sensor) built on :mod:`inertia_id_ros.chain.payload_from_torques`. The chain's links and drives are
known, ``links_x`` (:attr:`LinkModel.parameter_names` order): the URDF's
(:attr:`LinkModel.prior`) or a ``fit-links`` result
(:func:`inertia_id_ros.formats.link_result.read_link_result`: its ``model`` and ``x``).
Data flow: :meth:`~PayloadTorqueEstimator.add_joint_state` validates and buffers joint states
with efforts (raw: the joint torque is ``effort * effort_scale`` per joint, see
:class:`~inertia_id_ros.chain.actuators.ActuatorConfig`); :meth:`~PayloadTorqueEstimator.process`
turns each into the payload's rows at its stamp (positions, velocities, accelerations from the
local polynomial fit)::

    y = tau_measured - tau_links(links_x) = Y_p(q, dq, ddq) @ [theta_p, offset_change]    (n,)

(:class:`~inertia_id_ros.chain.payload_from_torques.PayloadTorqueModel`); rows go to the sliding
window. :meth:`~PayloadTorqueEstimator.solve` solves the window's problem (consistent, warm
started) and returns a :class:`PayloadTorqueEstimate` only if the payload is fully physically
consistent, with its covariance (as the offline fit's: from the scores of consecutive blocks of
the window, robust to the link model's error along the motion) and the warnings of a poorly
determined payload
(:func:`~inertia_id_ros.chain.payload_from_torques.determination_warnings`).

**Tare** (:meth:`~PayloadTorqueEstimator.set_tare`): with the payload removed (or a known one
attached), the newest seconds of ``y`` give each joint's torque offset (its mean, less the known
payload's torques): the link model's offsets at the robot's current state. It enters every solve
by the rule of :mod:`inertia_id_ros.online.tare` (a prior on the offset changes, fading with
:data:`TORQUE_OFFSET_DRIFT_RATE`; subtracted when the offsets are not estimated).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inertia_id_ros.chain.differentiation import sample_period
from inertia_id_ros.chain.links import JointTorqueData, LinkModel, predict_torques
from inertia_id_ros.chain.payload_from_torques import (
    ERROR_BLOCKS,
    PayloadTorqueModel,
    determination_warnings,
)
from inertia_id_ros.core.covariance import (
    ChannelNormalEquations,
    block_scores,
    parameter_covariance,
)
from inertia_id_ros.core.inertia import N_BODY_PARAMS
from inertia_id_ros.online.estimator import (
    JointStateEstimator,
    OnlineEstimatorConfig,
    SampleBatch,
    check_bodies,
    solve_weighted,
)
from inertia_id_ros.online.inputs import JointStateValidator
from inertia_id_ros.online.payload_estimator import (
    PayloadEstimateBase,
    PayloadEstimatorMixin,
    check_payload_config,
    payload_problems,
)
from inertia_id_ros.online.tare import with_tare
from inertia_id_ros.options import PAYLOAD_DEFAULT_WEIGHTING, PAYLOAD_TORQUES_HALF_WIDTH
from inertia_id_ros.solvers import Problem, Solution

TORQUE_NOISE_STD_FLOOR = 0.005
"""Lower bound of a joint torque channel's noise (N·m), for the tare and the change detector:
a channel that reads constant (noise-free simulation) must not make either infinitely certain."""

TORQUE_OFFSET_DRIFT_RATE = 0.02 / 60.0
"""Assumed drift rate of a joint's torque offset (N·m/s): 0.02 N·m per minute."""


@dataclass
class PayloadTorqueEstimatorConfig(OnlineEstimatorConfig):
    """Settings of :class:`PayloadTorqueEstimator`: the shared ones of
    :class:`~inertia_id_ros.online.estimator.OnlineEstimatorConfig` (samples are joint states),
    the payload's frame and its prior."""

    frame: str = ""
    """The frame the payload is attached to (e.g. the flange); ``theta`` about and in it."""
    weighting: str = PAYLOAD_DEFAULT_WEIGHTING
    """As :attr:`OnlineEstimatorConfig.weighting`; by default each joint weighted by its noise
    level (the wrist's quieter torques carry the inertia)."""
    filter_half_width: float = PAYLOAD_TORQUES_HALF_WIDTH
    """As :attr:`OnlineEstimatorConfig.filter_half_width` (s); narrower: the payload's inertia
    is seen through the accelerations, which a wider filter flattens."""
    estimate_offset: bool = True
    """Estimate how much each joint's torque offset moved since ``links_x`` (N·m)."""
    prior: tuple[float, ...] | None = None
    """The payload's CAD ``theta`` (10,) about and in ``frame`` (methods that take a prior,
    ``cad_prior``); ``None``: none."""
    bounding_ellipsoid: tuple[float, ...] | None = None
    """``Q`` (4x4, row by row: 16 values) of an ellipsoid in ``frame`` that holds the payload
    (:func:`~inertia_id_ros.solvers.ellipsoid_matrix`): every consistent solve keeps
    ``tr(J(theta) Q) >= 0`` (Wensing et al. 2017). ``None``: no such constraint."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.frame:
            raise self._invalid("frame", "must name the frame the payload is attached to")
        check_payload_config(self)


@dataclass(frozen=True)
class PayloadTorqueEstimate(PayloadEstimateBase):
    """A fully physically consistent estimate of the payload at ``frame`` from joint torques.

    ``theta`` (10,) about and in ``frame``; ``sensor_offset`` (n,): how much each joint's torque
    offset moved since the link model (N·m; the torque sensors' offsets; when not estimated the
    tared offsets, zeros without a tare); ``covariance`` (10, 10) of ``theta`` (offsets
    marginalised; from the scores of blocks of the window); ``rank`` of the identifiable
    subspace of the ``n_parameters`` fitted; ``condition_number`` of the column-scaled regressor;
    ``warnings``: a poorly determined payload, in words; ``min_pseudo_inertia_eig`` (kg m²);
    ``residual_rms`` (N·m); ``n_samples`` joint states used, stamped ``t_first`` to ``t_last``
    (s), ``sample_period`` (s) apart (median); ``solve_time`` (s).
    """

    rank: int
    n_parameters: int
    condition_number: float
    warnings: tuple[str, ...]
    sample_period: float = 0.0
    message: str = ""


class PayloadTorqueEstimator(
    PayloadEstimatorMixin, JointStateEstimator[PayloadTorqueEstimatorConfig]
):
    """Identify the rigid payload at ``config.frame`` of ``links``'s chain from joint states with
    efforts, the links and drives known as ``links_x`` (see the module docstring). Thread-safe
    under the locking rule of :mod:`inertia_id_ros.online.estimator`. Raises ValueError for a
    frame no joint of the chain moves or a ``links_x`` of the wrong shape,
    :class:`~inertia_id_ros.errors.FrameNotFound` for an unknown frame."""

    tare_sample_name = "joint states"
    tare_inputs = "the joint states"

    def __init__(
        self, links: LinkModel, links_x: np.ndarray, config: PayloadTorqueEstimatorConfig
    ) -> None:
        links_x = np.asarray(links_x, dtype=float)
        if links_x.shape != (links.n_parameters,):
            raise ValueError(
                f"links_x must have shape ({links.n_parameters},) "
                f"(LinkModel.parameter_names), got {links_x.shape}"
            )
        model = PayloadTorqueModel(links, config.frame, config.estimate_offset)
        super().__init__(
            config,
            JointStateValidator(
                links.joint_names,
                links.robot_joint_names,
                config.ignore_unknown_joints,
                config.use_measured_velocity,
                need_effort=True,
            ),
            model.n_parameters,
            rows_per_sample=links.n_joints,
        )
        self.links = links
        self.links_x = links_x.copy()
        self.model = model
        self.tare_noise_floor = np.full(links.n_joints, TORQUE_NOISE_STD_FLOOR)

    @property
    def joint_names(self) -> tuple[str, ...]:
        """The chain's joints, in the order of the offsets and channels."""
        return self.links.joint_names

    # ---- processing (the hook of JointStateEstimator) ---------------------------------------

    def _rows(self, batch: SampleBatch) -> tuple[np.ndarray, np.ndarray]:
        data = JointTorqueData(batch.q, batch.dq, batch.ddq, batch.measured)
        Y = self.model.regressor(batch.q, batch.dq, batch.ddq)
        y = self.links.measured_torques(batch.measured) - predict_torques(
            self.links, self.links_x, data
        )
        return Y, y

    # ---- solving ---------------------------------------------------------------------------

    def solve(
        self,
        method: str | None = None,
        duration: float = 0.0,
        initvals: Solution | np.ndarray | None = None,
        until: float | None = None,
    ) -> PayloadTorqueEstimate:
        """Estimate from the newest ``duration`` s of the window (0: all; with ``until``, the
        ``duration`` s up to that stamp) with ``method`` (default ``config.method``),
        warm-started from ``initvals`` (default: the previous solution if ``config.warm_start``),
        with the :attr:`tare` if one is set. Raises :class:`EstimateUnavailable` with reason
        ``too_few_samples``, ``solver_failed`` or ``inconsistent``: never returns a payload that
        is not fully physically consistent."""
        config = self.config
        n = self.links.n_joints
        with self._lock:
            method, options = self._solver_settings(method or None)
            n_samples, t_first, t_last = self._samples_to_solve(duration, until)
            t, Y, y = self.window.samples(duration, copy=False, until=until)
            period = sample_period(t) if t.size > 1 else 0.0
            tare = self._tare
            if tare is not None and not config.estimate_offset:
                y = y - tare.offset  # the tare is the known offset
            blocks = [
                ChannelNormalEquations.from_samples(Y[rows], y[rows])
                for rows in np.array_split(np.arange(len(y)), ERROR_BLOCKS)
            ]
            channels = ChannelNormalEquations.summed(blocks)
            initvals = self._warm_start(initvals)
            generation = self._generation
        payload_problem = payload_problems(
            config,
            method,
            channels,
            body_names=("payload",),
            param_names=self.model.parameter_names,
        )

        def build(weights: np.ndarray | None) -> Problem:
            problem = payload_problem(weights)
            if tare is not None and config.estimate_offset:  # a prior on the offsets, fading
                scale = 1.0 if weights is None else np.sqrt(weights)
                problem = with_tare(
                    problem,
                    tare,
                    t_last,
                    sigma=tare.noise_std * scale,
                    drift_rate=np.full(n, TORQUE_OFFSET_DRIFT_RATE),
                )
            return problem

        solution, weights = solve_weighted(
            channels, build, method, initvals, options, config.weighting
        )
        x = np.asarray(solution.x, dtype=float)
        theta = x[:N_BODY_PARAMS].copy()
        report = check_bodies({"payload": theta}, method)[0]
        self._keep_solution(solution, generation)
        covariance = parameter_covariance(
            channels, x, constrained=False, weights=weights, scores=block_scores(blocks, x, weights)
        )
        offset = (
            x[N_BODY_PARAMS:].copy()
            if config.estimate_offset
            else np.zeros(n)
            if tare is None
            else tare.offset.copy()
        )
        return PayloadTorqueEstimate(
            theta=theta,
            sensor_offset=offset,
            covariance=covariance.theta(),
            rank=covariance.rank,
            n_parameters=self.model.n_parameters,
            condition_number=covariance.condition_number,
            warnings=tuple(
                determination_warnings(
                    theta, covariance.theta(), covariance.rank, self.model.n_parameters
                )
            ),
            min_pseudo_inertia_eig=report.min_pseudo_inertia_eig,
            residual_rms=float(
                np.sqrt(
                    channels.squared_residuals(x).sum() / (channels.n_samples * channels.n_channels)
                )
            ),
            n_samples=n_samples,
            method=method,
            solve_time=float(solution.solve_time),
            t_first=t_first,
            t_last=t_last,
            sample_period=period,
            message="" if solution.found else f"solver stopped early ({solution.status})",
        )
