"""Online payload estimator: joint states and F/T wrenches in, physically consistent estimates out.

Data flow: :meth:`PayloadEstimator.add_joint_state` and :meth:`~PayloadEstimator.add_wrench`
validate and buffer samples (ROS callbacks, any thread); :meth:`~PayloadEstimator.process` (the
shared loop of :class:`~inertia_id_ros.online.estimator.OnlineEstimator`) turns each wrench whose
stamp is covered by joint states on both sides (the filter's lag, ``filter_half_width``) into a
regressor row: joint positions, velocities and accelerations at the wrench stamp by a local
polynomial fit (:mod:`inertia_id_ros.core.filtering`), the sensor's twist and proper acceleration
(:mod:`inertia_id_ros.core.kinematics`), ``payload_regressor``; rows go to a
:class:`~inertia_id_ros.online.window.SlidingWindow`. :meth:`~PayloadEstimator.solve` solves the
window's problem (:mod:`inertia_id_ros.solvers`) and returns an :class:`Estimate` only if it is
fully physically consistent. Model: ``f = wrench_sign * measured = body_regressor(v, a_g) @ theta
+ offset`` in the sensor frame.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from inertia_id_ros.core.covariance import ChannelNormalEquations, parameter_covariance
from inertia_id_ros.core.inertia import N_BODY_PARAMS, check_consistency, inertia_from_theta
from inertia_id_ros.core.kinematics import SensorKinematics
from inertia_id_ros.core.regressors import (
    N_WRENCH_CHANNELS,
    WRENCH_CHANNEL_NAMES,
    payload_regressor_batch,
)
from inertia_id_ros.core.weighting import weighted_normal_equations
from inertia_id_ros.errors import EstimateUnavailable, SampleRejected
from inertia_id_ros.findings import REMEDIES
from inertia_id_ros.online.estimator import OnlineEstimator, OnlineEstimatorConfig, SampleBatch
from inertia_id_ros.online.ft_calibrator import OnlineCalibrationConfig, OnlineFTCalibrator
from inertia_id_ros.online.inputs import (
    WRENCH,
    ClockResetDetector,
    JointStateValidator,
    check_frame,
    check_stamp,
    check_vector,
    passes_at_once,
    rejections,
)
from inertia_id_ros.online.solving import (
    check_bodies,
    ellipsoid_matrices,
    ellipsoid_value,
    residual_rms,
    solve_weighted,
)
from inertia_id_ros.online.tare import NOISE_STD_FLOOR, OffsetTare, Tare, with_tare
from inertia_id_ros.online.window import SampleBuffer, SlidingWindow
from inertia_id_ros.options import PAYLOAD_DEFAULT_WEIGHTING
from inertia_id_ros.solvers import Problem, Solution

if TYPE_CHECKING:
    from inertia_id_ros.chain.ft_calibration import SensorCalibration

PRIOR_METHODS = ("cad_prior",)
"""Methods that cannot solve without a prior."""

SPREAD_SAMPLES = 2000
"""Samples (evenly spaced over the window) the orientation spread is computed from."""


def check_prior_available(method: str, has_prior: bool) -> None:
    """Raise ValueError, saying what to give, if ``method`` needs a prior and there is none."""
    if method in PRIOR_METHODS and not has_prior:
        raise ValueError(
            f"method {method!r} needs the payload's CAD values as a prior: give a "
            "result JSON of the payload (fit-payload --prior, node parameter "
            "payload_prior) or a URDF link (fit-payload --prior-urdf/--prior-link, "
            "payload_prior: the link's name), or choose another method"
        )


@dataclass
class PayloadConfigBase(OnlineEstimatorConfig):
    """What both payload estimators' settings share (:class:`EstimatorConfig`, an F/T sensor's;
    :class:`~inertia_id_ros.online.payload_torque_estimator.PayloadTorqueEstimatorConfig`, joint
    torques'): the offsets, the weighting, the payload's prior and bounding ellipsoid, all in the
    payload's frame (the sensor frame, or the frame the payload is attached to)."""

    estimate_offset: bool = True
    """Estimate the offsets with the payload: the F/T sensor's constant offset (6,) (N, N m),
    or how much each joint's torque offset moved since the link model (N·m)."""
    weighting: str = PAYLOAD_DEFAULT_WEIGHTING
    """As :attr:`OnlineEstimatorConfig.weighting`; for a payload each channel weighted by its
    noise level by default: an F/T sensor's force rows are typically 20 times noisier (N) than
    its torque rows (N m), and unweighted they swamp what the torque rows say about the COM and
    inertia (``benchmarks/weighting.py``: COM error 0.15 -> 0.01 mm, inertia 2.4 -> 1.8 %); an
    arm's quieter wrist torques carry the inertia."""
    prior: tuple[float, ...] | None = None
    """The payload's CAD values: ``theta`` (10,) about and in the payload's frame, used by
    methods that take a prior (``cad_prior``; ``pointmass`` places its points around it when
    the data do not determine the body). ``None``: none (then ``cad_prior`` is refused)."""
    bounding_ellipsoid: tuple[float, ...] | None = None
    """``Q`` (4x4, row by row: 16 values) of an ellipsoid in the payload's frame that holds the
    payload (:func:`~inertia_id_ros.solvers.ellipsoid_matrix`): every consistent solve keeps
    ``tr(J(theta) Q) >= 0`` (Wensing et al. 2017). ``None``: no such constraint."""

    def __post_init__(self) -> None:
        """``prior`` and ``bounding_ellipsoid`` become tuples of floats; ValueError if the prior
        is not 10 finite values, the ellipsoid not 16 values, or ``method`` needs a prior and
        there is none."""
        super().__post_init__()
        if self.bounding_ellipsoid is not None:
            try:
                self.bounding_ellipsoid = ellipsoid_value(self.bounding_ellipsoid)
            except ValueError:
                raise self._invalid(
                    "bounding_ellipsoid", "must be a 4x4 matrix (16 values)"
                ) from None
        if self.prior is not None:
            self.prior = tuple(float(v) for v in np.asarray(self.prior, dtype=float).reshape(-1))
            if len(self.prior) != N_BODY_PARAMS or not np.all(np.isfinite(self.prior)):
                raise self._invalid("prior", f"must be {N_BODY_PARAMS} finite values (theta)")
        self.check_method(self.method)

    def check_method(self, method: str) -> None:
        """ValueError if ``method`` needs a prior (:data:`PRIOR_METHODS`) and there is none."""
        check_prior_available(method, self.prior is not None)


@dataclass
class EstimatorConfig(PayloadConfigBase):
    """Settings of :class:`PayloadEstimator` (SI units; times in s): the shared ones of
    :class:`OnlineEstimatorConfig` (samples are wrenches) and :class:`PayloadConfigBase` (the
    payload's frame is the sensor frame; the offset is the F/T sensor's (6,)), and the F/T
    sensor's."""

    wrench_sign: float = 1.0
    """+1 if the sensor reports the wrench it exerts on the payload, -1 for the opposite."""
    tare_max_force_std: float = 0.05
    """A tare (:class:`~inertia_id_ros.online.tare.OffsetTare`) replaces the tilt requirement of
    ``offset_min_tilt_deg`` while the standard deviation of its force offset, grown with its age
    (:meth:`~inertia_id_ros.online.tare.Tare.offset_std_at`), stays below this (N; per axis); with
    the default drift rate about 2.5 minutes after a 1 s, 1 kHz tare."""
    offset_min_tilt_deg: float = 5.0
    """The F/T offset is identifiable if the direction of gravity in the sensor frame (more
    precisely of the proper acceleration) spreads at least this much (rms, deg) along its second
    principal axis over the window (tilts about two axes)."""
    max_pending_wrenches: int = 10000
    """Wrenches waiting for joint states; the oldest beyond are dropped (reason ``"overflow"``)."""
    wrench_frame_id: str = ""
    """Expected ``frame_id`` of the wrenches ("" : the sensor frame's name)."""
    check_wrench_frame: bool = True
    """Reject wrenches with another ``frame_id`` (reason ``"wrong_frame"``)."""
    wrench_limits: tuple[float, ...] | None = None
    """Saturation limits (6,) of the measured channels ``[fx, fy, fz, tx, ty, tz]`` (N, N m,
    > 0): a wrench reaching ``|value| >= limit`` on a channel is rejected (reason
    ``"saturated"``: the sensor clips beyond its range, so the value is not the load). ``None``:
    no check; ``inf`` for a channel: none on it."""
    wrench_calibration: SensorCalibration | None = None
    """The sensor's calibration (``inertia-id calibrate-ft``'s), applied to each wrench after
    ``wrench_sign``; ``None``: the readings as they come."""
    online_calibration: OnlineCalibrationConfig | None = None
    """Calibrate the sensor online against ``calibration_body`` (its sensors: the sensor frame;
    :mod:`~inertia_id_ros.online.ft_calibrator`) until the payload changes; ``None``: off."""
    calibration_body: tuple[float, ...] | None = None
    """``theta`` (10,) of the body of known inertia attached while ``online_calibration`` runs,
    about and in the sensor frame."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.wrench_sign not in (1.0, -1.0):
            raise self._invalid("wrench_sign", "must be +1 or -1")
        if self.wrench_limits is not None:
            self.wrench_limits = tuple(float(v) for v in self.wrench_limits)
            if len(self.wrench_limits) != 6 or not all(v > 0 for v in self.wrench_limits):
                raise self._invalid("wrench_limits", "must be 6 values > 0 (N, N m) or None")
        self._check_at_least_one("max_pending_wrenches")
        if self.offset_min_tilt_deg < 0:
            raise self._invalid("offset_min_tilt_deg", "must be >= 0")
        self._check_positive("tare_max_force_std")
        if self.online_calibration is not None and (
            self.calibration_body is None or len(self.calibration_body) != N_BODY_PARAMS
        ):
            raise self._invalid("calibration_body", "must be a body's theta (10,) to calibrate")


def payload_problems(
    config: PayloadConfigBase, method: str, channels: ChannelNormalEquations, **names: Any
) -> Callable[[np.ndarray | None], Problem]:
    """``weights -> Problem`` of a payload estimator's fit with ``method``: the normal equations
    of ``channels`` (one body, then the offsets) weighted by ``weights``, the config's ``prior``
    (zeros for the offsets; ValueError if ``method`` needs one and there is none) and
    ``bounding_ellipsoid`` (none for ``ols``, unconstrained); ``names``: the Problem's
    ``body_names`` and ``param_names``."""
    check_prior_available(method, config.prior is not None)
    prior = (
        None
        if config.prior is None
        else np.concatenate([config.prior, np.zeros(channels.n_params - N_BODY_PARAMS)])
    )
    ellipsoids = (
        None
        if config.bounding_ellipsoid is None
        else ellipsoid_matrices((config.bounding_ellipsoid,), method)
    )

    def problem(weights: np.ndarray | None) -> Problem:
        gram, moment, yty, n_rows = weighted_normal_equations(channels, weights)
        return Problem(
            gram=gram,
            moment=moment,
            yty=yty,
            n_rows=n_rows,
            n_bodies=1,
            prior=prior,
            bounding_ellipsoids=ellipsoids,
            **names,
        )

    return problem


@dataclass(frozen=True)
class PayloadEstimateBase:
    """What both payload estimates have: ``theta`` (10,) about and in the payload's frame, the
    offsets ``sensor_offset`` (one per channel), ``covariance`` (10, 10) of ``theta``,
    ``min_pseudo_inertia_eig`` (kg m^2), ``residual_rms``, ``n_samples`` used, the ``method``,
    ``solve_time`` (s), the samples' stamps from ``t_first`` to ``t_last`` (s); and the body's
    properties."""

    theta: np.ndarray
    sensor_offset: np.ndarray
    covariance: np.ndarray
    min_pseudo_inertia_eig: float
    residual_rms: float
    n_samples: int
    method: str
    solve_time: float
    t_first: float
    t_last: float

    @property
    def mass(self) -> float:
        """Mass (kg)."""
        return float(self.theta[0])

    @property
    def com(self) -> np.ndarray:
        """Centre of mass (3,) (m, in the frame of ``theta``)."""
        return inertia_from_theta(self.theta)[1]

    @property
    def inertia_com(self) -> np.ndarray:
        """3x3 rotational inertia about the COM, axes of the frame of ``theta`` (kg m^2)."""
        return inertia_from_theta(self.theta)[2]

    @property
    def theta_std(self) -> np.ndarray:
        """(10,) standard deviations of ``theta`` (square roots of the covariance diagonal)."""
        return np.sqrt(np.clip(np.diag(self.covariance), 0.0, None))


@dataclass(frozen=True)
class Estimate(PayloadEstimateBase):
    """A fully physically consistent estimate of the payload beyond the sensor.

    ``theta`` (10,) about and in the sensor frame; ``sensor_offset`` (6,) (N, N m; when not
    estimated: the tared offset, zeros without a tare); ``covariance`` (10, 10) of ``theta`` (the
    offset marginalised): the sandwich with each wrench channel's residual variance, on the
    identifiable subspace, projected onto the tangent of active consistency constraints
    (:func:`~inertia_id_ros.core.covariance.parameter_covariance`);
    ``condition_number`` of the column-scaled regressor (excitation); ``min_pseudo_inertia_eig``
    (kg m^2); ``residual_rms`` (N / N m mixed); ``n_samples`` wrenches used, stamped from
    ``t_first`` to ``t_last`` (s); ``solve_time`` (s); ``orientation_spread_deg`` (3,) rms spread
    of the gravity direction in the sensor frame along its principal axes (deg, descending);
    ``offset_identifiable`` whether that spread passes ``offset_min_tilt_deg``;
    ``offset_std`` (6,) standard errors of the estimated offset (N, N m; ``None``: not estimated).
    """

    offset_identifiable: bool
    orientation_spread_deg: np.ndarray
    message: str = ""
    condition_number: float = float("nan")
    offset_std: np.ndarray | None = None


class PayloadEstimator(OnlineEstimator[EstimatorConfig, SlidingWindow]):
    """Identify the rigid payload beyond an F/T sensor from joint states and wrenches (the
    window's samples are the wrenches). Thread-safe under the locking rule of
    :mod:`inertia_id_ros.online.estimator`. Holds the F/T offset's tare,
    :attr:`offset_tare`."""

    sample_kind = WRENCH
    sample_name = "wrench samples"

    def __init__(self, kinematics: SensorKinematics, config: EstimatorConfig | None = None) -> None:
        config = config or EstimatorConfig()
        n_params = N_BODY_PARAMS + (N_WRENCH_CHANNELS if config.estimate_offset else 0)
        super().__init__(
            config,
            JointStateValidator(
                kinematics.joint_names,
                kinematics.model.names[1:],
                config.ignore_unknown_joints,
                config.use_measured_velocity,
            ),
            SlidingWindow(
                config.window_sec,
                n_params,
                config.window_capacity,
                rows_per_sample=len(WRENCH_CHANNEL_NAMES),
            ),
        )
        self.kinematics = kinematics
        self.offset_tare = OffsetTare(self, NOISE_STD_FLOOR, "wrenches", "the inputs")
        """The F/T offset's tare every solve uses (:mod:`inertia_id_ros.online.tare`)."""
        self._expected_frame = config.wrench_frame_id or kinematics.sensor_frame
        self._wrenches = SampleBuffer(config.max_pending_wrenches, t=(), f=(6,))
        self._last_wrench_t: float | None = None
        self._wrench_clock = ClockResetDetector(config.clock_jump_sec)
        self._wrench_calibration = config.wrench_calibration
        if (online := config.online_calibration) is not None:
            frame, half_width = kinematics.sensor_frame, config.filter_half_width
            self.ft_calibrator = OnlineFTCalibrator(
                {frame: c for c in [self._wrench_calibration] if c is not None},
                replace(online, sensors=(frame,), filter_half_width=half_width),
            )

    # ---- input -----------------------------------------------------------------------------

    def _joint_accepted(self, t: np.ndarray) -> None:
        self.processed["joint_state"] += t.size

    def add_wrench(self, t: float, wrench: np.ndarray, frame_id: str | None = None) -> None:
        """Buffer an F/T measurement: stamp ``t`` (s), ``wrench`` (6,) ``[fx, fy, fz, tx, ty, tz]``
        (N, N m) in the sensor frame, ``frame_id`` checked against the expected one when given.

        Raises :class:`SampleRejected` (counted in :attr:`dropped`) with reason ``non_finite``,
        ``length_mismatch``, ``saturated`` (``wrench_limits``), ``wrong_frame``,
        ``duplicate_stamp`` or ``out_of_order``. When
        ``max_pending_wrenches`` wait already, the oldest is dropped (reason ``overflow``).
        """
        with self._lock:
            self.received[WRENCH] += 1
            if self._wrench_clock.is_reset(float(t), self._last_wrench_t):
                self._restart_after_clock_reset(float(t))
            try:
                t, wrench = self._validate_wrench(t, wrench, frame_id)
            except SampleRejected as rejected:
                self.dropped[rejected.reason] += 1
                raise
            self._last_wrench_t = t
            if self._wrenches.append(t=t, f=self._calibrated(wrench)):
                self.dropped["overflow"] += 1

    def add_wrenches(
        self, t: np.ndarray, wrenches: np.ndarray, frame_ids: Sequence[str | None] | None = None
    ) -> list[SampleRejected]:
        """Buffer ``N`` F/T measurements: stamps ``t`` (N,) (s), ``wrenches`` (N, 6) (N, N m),
        ``frame_ids`` (N,) (``None``: not checked). The same checks, counters and result as
        :meth:`add_wrench` for each in turn (valid batches take a vectorised path); returns the
        rejections, in order."""
        t = np.asarray(t, dtype=float).reshape(-1)
        wrenches = np.asarray(wrenches, dtype=float)
        frames: list[str | None] = [None] * t.size if frame_ids is None else list(frame_ids)
        with self._lock:
            if self._append_wrench_batch(t, wrenches, frames):
                return []
        return rejections(self.add_wrench, t, wrenches, frames)

    def _append_wrench_batch(
        self, t: np.ndarray, wrenches: np.ndarray, frames: list[str | None]
    ) -> bool:
        """Buffer the batch at once if every sample passes every check (lock held); ``False``
        (nothing done) otherwise."""
        n, config = t.size, self.config
        expected = self._expected_frame if config.check_wrench_frame else None
        if not passes_at_once(t, wrenches, 6, frames, expected, self._last_wrench_t):
            return False
        if config.wrench_limits is not None and np.any(np.abs(wrenches) >= config.wrench_limits):
            return False
        self.received[WRENCH] += n
        overflow = self._wrenches.extend(t=t, f=self._calibrated(wrenches))
        if overflow:
            self.dropped["overflow"] += overflow
        self._last_wrench_t = float(t[-1])
        self._wrench_clock.in_step()
        return True

    def _calibrated(self, wrenches: np.ndarray) -> np.ndarray:
        """Wrenches (6,) or (N, 6) as measured, in the package's convention and calibrated
        (``wrench_sign``, ``wrench_calibration``)."""
        config = self.config
        signed = config.wrench_sign * wrenches
        calibration = self._wrench_calibration
        return signed if calibration is None else calibration.apply(signed)

    def _feed_calibrator(
        self, calibrator: OnlineFTCalibrator, batch: SampleBatch, Y: np.ndarray, y: np.ndarray
    ) -> None:
        """The readings and the wrench of the known ``calibration_body`` (``Y`` (N, 6, p) of
        it)."""
        body = np.asarray(self.config.calibration_body)
        frame = self.kinematics.sensor_frame
        reference = Y[:, :, :N_BODY_PARAMS] @ body
        calibrator.add(frame, batch.t, calibrator.readings(frame, y), reference)

    def _use_ft_calibrations(self, calibrations: Mapping[str, SensorCalibration]) -> None:
        self._wrench_calibration = calibrations[self.kinematics.sensor_frame]

    def _validate_wrench(
        self, t: float, wrench: np.ndarray, frame_id: str | None
    ) -> tuple[float, np.ndarray]:
        t = float(t)
        wrench = check_vector(wrench, 6, f"wrench at {t:.6f} s")
        limits = self.config.wrench_limits
        if limits is not None and np.any(saturated := np.abs(wrench) >= limits):
            channels = ", ".join(
                f"{WRENCH_CHANNEL_NAMES[c]} = {wrench[c]:.6g} (limit {limits[c]:g})"
                for c in np.flatnonzero(saturated)
            )
            raise SampleRejected("saturated", f"wrench at {t:.6f} s saturates {channels}")
        if self.config.check_wrench_frame:
            check_frame(frame_id, self._expected_frame, "wrench")
        check_stamp(t, self._last_wrench_t, "wrench")
        return t, wrench

    # ---- processing (the hooks of OnlineEstimator.process) ---------------------------------

    def _pending_stamps(self, limit: int) -> np.ndarray:
        return self._wrenches["t"][:limit]

    def _take_samples(self, consumed: int, ready: np.ndarray) -> np.ndarray:
        measured = self._wrenches["f"][ready].copy()
        self._wrenches.drop_front(consumed)
        return measured

    def _rows(self, batch: SampleBatch) -> tuple[np.ndarray, np.ndarray]:
        V, A = self.kinematics.compute_batch(batch.q, batch.dq, batch.ddq)
        return payload_regressor_batch(V, A, self.config.estimate_offset), batch.measured

    def _pending_count(self) -> int:
        return len(self._wrenches)

    # ---- solving ---------------------------------------------------------------------------

    def orientation_spread_deg(self, duration: float = 0.0) -> np.ndarray:
        """(3,) rms spread (deg, descending) of the proper-acceleration direction in the sensor
        frame (gravity's, when the motion is slow) along its principal axes, over the newest
        ``duration`` s of the window (0: all). Zero if fewer than 2 samples."""
        with self._lock:
            return self._orientation_spread_deg(duration)

    def _orientation_spread_deg(self, duration: float, until: float | None = None) -> np.ndarray:
        _, Y, _ = self.window.samples(duration, copy=False, until=until)
        if Y.shape[0] < 2:
            return np.zeros(3)
        stride = max(1, Y.shape[0] // SPREAD_SAMPLES)  # a spread needs no more samples
        a_c = Y[::stride, :3, 0]  # m column: classical proper acceleration of the sensor origin
        g = np.linalg.norm(self.kinematics.gravity) or 1.0
        variances = np.linalg.eigvalsh(np.cov(a_c.T) / g**2)[::-1]
        return np.rad2deg(np.sqrt(np.clip(variances, 0.0, None)))

    def solve(
        self,
        method: str | None = None,
        duration: float = 0.0,
        initvals: Any = None,
        require_consistent: bool = True,
        until: float | None = None,
    ) -> Estimate:
        """Estimate from the newest ``duration`` s of the window (0: all; with ``until``, the
        ``duration`` s up to that stamp, s: an interval of the past) with ``method`` (default
        ``config.method``; ``config.solver_options`` apply to that method only), warm-started
        from ``initvals`` (default: the previous solution if ``config.warm_start``), with the
        :attr:`offset_tare` if one is set (the rule of :mod:`inertia_id_ros.online.tare`). Raises
        :class:`EstimateUnavailable` with reason ``too_few_samples``,
        ``offset_not_identifiable`` (when estimating the offset without a recent enough tare),
        ``solver_failed`` or ``inconsistent``: never returns an estimate that is not fully
        physically consistent, unless ``require_consistent`` is False (offline analysis of a
        baseline such as ``ols``; check the result with ``check_consistency``)."""
        config = self.config
        with self._lock:
            method, options = self._solver_settings(method or None)
            n_samples, t_first, t_last = self._samples_to_solve(duration, until)
            spread = self._orientation_spread_deg(duration, until)
            identifiable = bool(spread[1] >= config.offset_min_tilt_deg)
            tare = self.offset_tare.current
            if config.estimate_offset and not identifiable and not self._tare_known(tare, t_last):
                raise EstimateUnavailable(
                    "offset_not_identifiable",
                    _unidentifiable_offset_message(
                        t_last - t_first, spread, config.offset_min_tilt_deg
                    ),
                )
            known_offset = tare.offset if tare is not None and not config.estimate_offset else None
            channels = self.window.channel_normal_equations(duration, until, offset=known_offset)
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
        theta = np.array(solution.bodies[0])
        if require_consistent:
            report = check_bodies({"payload": theta}, method)[0]
        else:
            report = check_consistency(theta)
        self._keep_solution(solution, generation, weights)
        covariance = parameter_covariance(
            channels, np.asarray(solution.x), constrained=method != "ols", weights=weights
        )
        return Estimate(
            theta=theta,
            sensor_offset=self._offset(solution, tare),
            covariance=covariance.theta(),
            min_pseudo_inertia_eig=report.min_pseudo_inertia_eig,
            residual_rms=residual_rms(channels, solution.x),  # unweighted, whatever the weighting
            n_samples=n_samples,
            method=method,
            solve_time=float(solution.solve_time),
            t_first=t_first,
            t_last=t_last,
            offset_identifiable=identifiable,
            orientation_spread_deg=spread,
            message=_solver_message(solution),
            condition_number=covariance.condition_number,
            offset_std=_offset_std(covariance.matrix) if config.estimate_offset else None,
        )

    def _tare_known(self, tare: Tare | None, t: float) -> bool:
        """Whether ``tare`` still knows the force offset at ``t`` (s) well enough to replace the
        tilts (``tare_max_force_std``)."""
        return (
            tare is not None
            and float(np.max(tare.offset_std_at(t)[:3])) <= self.config.tare_max_force_std
        )

    def _problems(
        self, method: str, channels: ChannelNormalEquations, tare: Tare | None, t: float
    ) -> Callable[[np.ndarray | None], Problem]:
        """``weights -> Problem`` of a solve with ``method`` at ``t`` (s): :func:`payload_problems`
        with the ``tare`` as a prior on the offset when it is estimated."""
        payload_problem = payload_problems(self.config, method, channels)
        if tare is None or not self.config.estimate_offset:
            return payload_problem

        def build(weights: np.ndarray | None) -> Problem:  # a prior on the offset, fading,
            scale = 1.0 if weights is None else np.sqrt(weights)  # in the rows' weights
            return with_tare(payload_problem(weights), tare, t, sigma=tare.noise_std * scale)

        return build

    def _offset(self, solution: Solution, tare: Tare | None) -> np.ndarray:
        """The F/T offset (6,) of an estimate: estimated, else the tare's (zeros without one)."""
        if self.config.estimate_offset:
            return np.array(solution.extras[:N_WRENCH_CHANNELS])
        return np.zeros(N_WRENCH_CHANNELS) if tare is None else tare.offset.copy()

    # ---- state -----------------------------------------------------------------------------

    def _restart_after_clock_reset(self, t: float) -> None:
        """Also keep the tare, its age carried over into the new time base."""
        self.offset_tare.carry_over(t, (self._last_wrench_t, self._joint_input.last_t))
        super()._restart_after_clock_reset(t)

    def _clear_pending(self) -> None:
        self._wrenches.clear()
        self._last_wrench_t = None


def _unidentifiable_offset_message(duration: float, spread: np.ndarray, min_tilt: float) -> str:
    return (
        f"the F/T sensor offset cannot be told apart from the payload's weight: over the last "
        f"{duration:.1f} s the sensor's orientation with respect to gravity varied by "
        f"{spread[0]:.1f} and {spread[1]:.1f} deg rms in its two main directions, and it must "
        f"vary by at least {min_tilt:.1f} deg in both; tilt the sensor about two different "
        "horizontal axes, or " + REMEDIES["known_offset"]["node"]
    )


def _solver_message(solution: Solution) -> str:
    """What an estimate says of its solve: a solver that stopped early, a point-mass fit its
    points limit; "" otherwise."""
    message = "" if solution.found else f"solver stopped early ({solution.status})"
    if solution.info.get("approximation_limited"):  # pointmass: its points limit the fit
        message = "; ".join(filter(None, [message, solution.message]))
    return message


def _offset_std(covariance: np.ndarray) -> np.ndarray:
    """(6,) standard errors of the F/T offset: the extras after ``theta`` in ``covariance``
    (16, 16) of ``[theta, offset]``."""
    block = np.diag(covariance)[N_BODY_PARAMS : N_BODY_PARAMS + N_WRENCH_CHANNELS]
    return np.sqrt(np.clip(block, 0.0, None))
