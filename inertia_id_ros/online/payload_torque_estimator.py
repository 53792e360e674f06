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

**Tare** (:attr:`PayloadTorqueEstimator.offset_tare`): with the payload removed (or a known one
attached), the newest seconds of ``y`` give each joint's torque offset (its mean, less the known
payload's torques): the link model's offsets at the robot's current state. It enters every solve
by the rule of :mod:`inertia_id_ros.online.tare` (a prior on the offset changes, fading with
:data:`TORQUE_OFFSET_DRIFT_RATE`; subtracted when the offsets are not estimated).
"""

from __future__ import annotations

from collections.abc import Callable
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
from inertia_id_ros.core.gain_sums import GainSums, flipped_channels
from inertia_id_ros.core.inertia import N_BODY_PARAMS
from inertia_id_ros.findings import REMEDIES
from inertia_id_ros.online.estimator import SampleBatch
from inertia_id_ros.online.inputs import JointStateValidator
from inertia_id_ros.online.joint_state_estimator import JointStateEstimator
from inertia_id_ros.online.payload_estimator import (
    PayloadConfigBase,
    PayloadEstimateBase,
    payload_problems,
)
from inertia_id_ros.online.solving import check_bodies, residual_rms, solve_weighted
from inertia_id_ros.online.tare import OffsetTare, Tare, with_tare
from inertia_id_ros.options import PAYLOAD_TORQUES_HALF_WIDTH
from inertia_id_ros.solvers import Problem, Solution

TORQUE_NOISE_STD_FLOOR = 0.005
"""Lower bound of a joint torque channel's noise (N·m), for the tare and the change detector:
a channel that reads constant (noise-free simulation) must not make either infinitely certain."""

TORQUE_OFFSET_DRIFT_RATE = 0.02 / 60.0
"""Assumed drift rate of a joint's torque offset (N·m/s): 0.02 N·m per minute."""


@dataclass
class PayloadTorqueEstimatorConfig(PayloadConfigBase):
    """Settings of :class:`PayloadTorqueEstimator`: the shared ones of
    :class:`~inertia_id_ros.online.estimator.OnlineEstimatorConfig` (samples are joint states)
    and :class:`~inertia_id_ros.online.payload_estimator.PayloadConfigBase` (the payload's frame
    is ``frame``; the offsets are how much each joint's torque offset moved since ``links_x``),
    and the payload's frame."""

    frame: str = ""
    """The frame the payload is attached to (e.g. the flange); ``theta`` about and in it."""
    filter_half_width: float = PAYLOAD_TORQUES_HALF_WIDTH
    """As :attr:`OnlineEstimatorConfig.filter_half_width` (s); narrower: the payload's inertia
    is seen through the accelerations, which a wider filter flattens."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.frame:
            raise self._invalid("frame", "must name the frame the payload is attached to")


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


class PayloadTorqueEstimator(JointStateEstimator[PayloadTorqueEstimatorConfig]):
    """Identify the rigid payload at ``config.frame`` of ``links``'s chain from joint states with
    efforts, the links and drives known as ``links_x`` (see the module docstring). Thread-safe
    under the locking rule of :mod:`inertia_id_ros.online.estimator`. Holds the joints' torque
    offsets' tare, :attr:`offset_tare`. Raises ValueError for a frame no joint of the chain moves
    or a ``links_x`` of the wrong shape, :class:`~inertia_id_ros.errors.FrameNotFound` for an
    unknown frame."""

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
        noise_floor = np.full(links.n_joints, TORQUE_NOISE_STD_FLOOR)
        self.offset_tare = OffsetTare(self, noise_floor, "joint states", "the joint states")
        """The joints' torque offsets' tare every solve uses (:mod:`inertia_id_ros.online.tare`)."""
        self._signs = GainSums.of(np.zeros((0, links.n_joints)), np.zeros((0, links.n_joints)))
        """Each joint's measured torques regressed on the link model's, over every sample seen (a
        torque of the other sign: :meth:`sign_warnings`)."""

    @property
    def joint_names(self) -> tuple[str, ...]:
        """The chain's joints, in the order of the offsets and channels."""
        return self.links.joint_names

    # ---- processing (the hook of JointStateEstimator) ---------------------------------------

    def _rows(self, batch: SampleBatch) -> tuple[np.ndarray, np.ndarray]:
        data = JointTorqueData(batch.q, batch.dq, batch.ddq, batch.measured)
        Y = self.model.regressor(batch.q, batch.dq, batch.ddq)
        measured = self.links.measured_torques(batch.measured)
        predicted = predict_torques(self.links, self.links_x, data)
        self._signs = self._signs.add(GainSums.of(predicted, measured))
        return Y, measured - predicted

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
        with the :attr:`offset_tare` if one is set. Raises :class:`EstimateUnavailable` with reason
        ``too_few_samples``, ``solver_failed`` or ``inconsistent``: never returns a payload that
        is not fully physically consistent."""
        config = self.config
        with self._lock:
            method, options = self._solver_settings(method or None)
            n_samples, t_first, t_last = self._samples_to_solve(duration, until)
            t, Y, y = self.window.samples(duration, copy=False, until=until)
            period = sample_period(t) if t.size > 1 else 0.0
            tare = self.offset_tare.current
            if tare is not None and not config.estimate_offset:
                y = y - tare.offset  # the tare is the known offset
            blocks = [
                ChannelNormalEquations.from_samples(Y[rows], y[rows])
                for rows in np.array_split(np.arange(len(y)), ERROR_BLOCKS)
            ]
            channels = ChannelNormalEquations.summed(blocks)
            initvals = self._warm_start(initvals)
            start_weights = self._warm_weights(initvals)
            generation = self._generation
        solution, weights = solve_weighted(
            channels,
            self._problems(method, channels, tare, t_last),
            method,
            initvals,
            options,
            config.weighting,
            start_weights,
        )
        x = np.asarray(solution.x, dtype=float)
        theta = x[:N_BODY_PARAMS].copy()
        report = check_bodies({"payload": theta}, method)[0]
        self._keep_solution(solution, generation, weights)
        covariance = parameter_covariance(
            channels, x, constrained=False, weights=weights, scores=block_scores(blocks, x, weights)
        )
        return PayloadTorqueEstimate(
            theta=theta,
            sensor_offset=self._offset(x, tare),
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
            residual_rms=residual_rms(channels, x),
            n_samples=n_samples,
            method=method,
            solve_time=float(solution.solve_time),
            t_first=t_first,
            t_last=t_last,
            sample_period=period,
            message="" if solution.found else f"solver stopped early ({solution.status})",
        )

    def flipped_joints(self) -> list[tuple[str, str]]:
        """``(joint, why)`` per joint whose torques follow the link model's with the opposite
        sign over every sample seen (:func:`~inertia_id_ros.core.gain_sums.flipped_channels`):
        its torques would be read as a payload's."""
        return [
            (
                self.joint_names[j],
                f"its torques are {gain:.2f} times what the link model predicts (correlation "
                f"{correlation:.2f}): the opposite sign, and the payload cannot be trusted.",
            )
            for j, gain, correlation in flipped_channels(self._signs)
        ]

    def sign_warnings(self) -> list[str]:
        """:meth:`flipped_joints` in words, with the node's fix."""
        return [
            f"joint {joint!r}: {why} " + REMEDIES["effort_sign"]["node"]
            for joint, why in self.flipped_joints()
        ]

    def _problems(
        self, method: str, channels: ChannelNormalEquations, tare: Tare | None, t: float
    ) -> Callable[[np.ndarray | None], Problem]:
        """``weights -> Problem`` of a solve with ``method`` at ``t`` (s): the payload's
        :func:`~inertia_id_ros.online.payload_estimator.payload_problems`, with the ``tare`` as a
        prior on the offsets, fading, when they are estimated."""
        payload_problem = payload_problems(
            self.config,
            method,
            channels,
            body_names=("payload",),
            param_names=self.model.parameter_names,
        )
        if tare is None or not self.config.estimate_offset:
            return payload_problem
        drift_rate = np.full(self.links.n_joints, TORQUE_OFFSET_DRIFT_RATE)

        def build(weights: np.ndarray | None) -> Problem:
            scale = 1.0 if weights is None else np.sqrt(weights)
            return with_tare(
                payload_problem(weights),
                tare,
                t,
                sigma=tare.noise_std * scale,
                drift_rate=drift_rate,
            )

        return build

    def _offset(self, x: np.ndarray, tare: Tare | None) -> np.ndarray:
        """The offsets (n,) of an estimate ``x``: estimated, else the tare's (zeros without)."""
        if self.config.estimate_offset:
            return x[N_BODY_PARAMS:].copy()
        return np.zeros(self.links.n_joints) if tare is None else tare.offset.copy()

    # ---- state -----------------------------------------------------------------------------

    def _restart_after_clock_reset(self, t: float) -> None:
        """Also keep the tare, its age carried over into the new time base."""
        self.offset_tare.carry_over(t, (self._joint_input.last_t,))
        super()._restart_after_clock_reset(t)
