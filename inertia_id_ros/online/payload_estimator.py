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

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

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
from inertia_id_ros.online.change_detection import residual_sigma
from inertia_id_ros.online.estimator import (
    OnlineEstimator,
    OnlineEstimatorConfig,
    SampleBatch,
    check_bodies,
    ellipsoid_matrices,
    ellipsoid_values,
    solve_weighted,
)
from inertia_id_ros.online.inputs import (
    WRENCH,
    JointStateValidator,
    check_frame,
    check_stamp,
    check_vector,
)
from inertia_id_ros.online.tare import NOISE_STD_FLOOR, Tare, tare_offset, with_tare
from inertia_id_ros.online.window import SampleBuffer
from inertia_id_ros.options import PAYLOAD_DEFAULT_WEIGHTING
from inertia_id_ros.solvers import Problem

PRIOR_METHODS = ("cad_prior",)
"""Methods that cannot solve without a prior."""

SPREAD_SAMPLES = 2000
"""Samples (evenly spaced over the window) the orientation spread is computed from."""


@dataclass
class EstimatorConfig(OnlineEstimatorConfig):
    """Settings of :class:`PayloadEstimator` (SI units; times in s): the shared ones of
    :class:`OnlineEstimatorConfig` (samples are wrenches) and the F/T sensor's."""

    estimate_offset: bool = True
    """Estimate the F/T sensor's constant offset (6,) (N, N m) with the payload."""
    weighting: str = PAYLOAD_DEFAULT_WEIGHTING
    """As :attr:`OnlineEstimatorConfig.weighting`; for a payload each F/T component weighted by
    its noise level by default: the force rows are typically 20 times noisier (N) than the torque
    rows (N m), and unweighted they swamp what the torque rows say about the COM and inertia
    (``benchmarks/weighting.py``: COM error 0.15 -> 0.01 mm, inertia 2.4 -> 1.8 %)."""
    wrench_sign: float = 1.0
    """+1 if the sensor reports the wrench it exerts on the payload, -1 for the opposite."""
    tare_max_force_std: float = 0.05
    """A tare (:meth:`PayloadEstimator.set_tare`) replaces the tilt requirement of
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

    prior: tuple[float, ...] | None = None
    """The payload's CAD values: ``theta`` (10,) about and in the sensor frame, used by methods
    that take a prior (``cad_prior``; ``pointmass`` places its points around it when the data
    do not determine the body). ``None``: none (then ``cad_prior`` is refused)."""

    bounding_ellipsoid: tuple[float, ...] | None = None
    """``Q`` (4x4, row by row: 16 values) of an ellipsoid in the sensor frame that holds the
    payload (:func:`~inertia_id_ros.solvers.ellipsoid_matrix`): every consistent solve keeps
    ``tr(J(theta) Q) >= 0`` (Wensing et al. 2017). ``None``: no such constraint."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_payload_config(self)
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


def check_prior_available(method: str, has_prior: bool) -> None:
    """Raise ValueError, saying what to give, if ``method`` needs a prior and there is none."""
    if method in PRIOR_METHODS and not has_prior:
        raise ValueError(
            f"method {method!r} needs the payload's CAD values as a prior: give a "
            "result JSON of the payload (fit-payload --prior, node parameter "
            "payload_prior) or a URDF link (fit-payload --prior-urdf/--prior-link, "
            "payload_prior: the link's name), or choose another method"
        )


def check_payload_config(config: Any) -> None:
    """Check what both payload estimators' configs share: ``prior`` (``None`` or ``theta``
    (10,)) and ``bounding_ellipsoid`` (``None`` or ``Q`` (4, 4)) become tuples of floats;
    ValueError (the config's kind) if the prior is not 10 finite values, the ellipsoid not 16
    values, or ``method`` needs a prior and there is none."""
    if config.bounding_ellipsoid is not None:
        try:
            config.bounding_ellipsoid = ellipsoid_values((config.bounding_ellipsoid,))[0]
        except ValueError:
            raise config._invalid(
                "bounding_ellipsoid", "must be a 4x4 matrix (16 values)"
            ) from None
    if config.prior is not None:
        config.prior = tuple(float(v) for v in np.asarray(config.prior, dtype=float).reshape(-1))
        if len(config.prior) != N_BODY_PARAMS or not np.all(np.isfinite(config.prior)):
            raise config._invalid("prior", f"must be {N_BODY_PARAMS} finite values (theta)")
    check_prior_available(config.method, config.prior is not None)


def payload_problems(
    config: Any, method: str, channels: ChannelNormalEquations, **names: Any
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
    ``offset_identifiable`` whether that spread passes ``offset_min_tilt_deg``.
    """

    offset_identifiable: bool
    orientation_spread_deg: np.ndarray
    message: str = ""
    condition_number: float = float("nan")


class PayloadEstimatorMixin:
    """What both payload estimators share, mixed in before their
    :class:`~inertia_id_ros.online.estimator.OnlineEstimator` base: the prior check of the
    solver's method, the offset tare (the rule of :mod:`inertia_id_ros.online.tare`) and the
    residual sigma of the change detector. The window's samples (``y``, the estimator's sign
    convention) are ``tare_sample_name`` (in messages), streamed by ``tare_inputs``; the tare's
    ``noise_std`` is floored by ``tare_noise_floor`` (one value per channel)."""

    tare_sample_name = "wrenches"
    tare_inputs = "the inputs"
    tare_noise_floor: np.ndarray = NOISE_STD_FLOOR
    _tare: Tare | None = None

    def configure_solver(self, method: str, solver_options: Any) -> None:
        """As :meth:`OnlineEstimator.configure_solver`; raises ValueError (nothing changed) for a
        method that needs a prior when the config has none."""
        check_prior_available(method, self.config.prior is not None)
        super().configure_solver(method, solver_options)

    def residual_sigma(self, estimate: PayloadEstimateBase, generation: int) -> np.ndarray | None:
        """:func:`~inertia_id_ros.online.change_detection.residual_sigma` (one per channel: N,
        N m for wrenches, N·m for joint torques) of the window's samples from
        ``estimate.t_first`` on against ``estimate``, or ``None`` if the estimator forgot its
        samples since ``generation`` (read before the solve) or holds none."""
        with self._lock:
            if generation != self._generation:
                return None
            t, Y, y = self.window.samples(copy=False)
            first = int(np.searchsorted(t, estimate.t_first, side="left"))
            if first == t.size:
                return None
            return residual_sigma(Y[first:], y[first:], estimate.theta, estimate.sensor_offset)

    @property
    def tare(self) -> Tare | None:
        """The offset tare every solve uses (:mod:`inertia_id_ros.online.tare`), or ``None``."""
        return self._tare

    def set_tare(self, duration: float = 1.0, theta_known: np.ndarray | None = None) -> Tare:
        """Tare the offsets from the newest ``duration`` s (> 0) of the window's samples (the
        buffered ones are processed first), recorded with the payload removed
        (``theta_known=None``) or with the known payload ``theta_known`` (10,) attached (about
        the payload's frame). Replaces the previous tare. With the payload removed the window
        restarts: its older samples belong to the payload that was removed.

        Raises :class:`EstimateUnavailable` (``too_few_samples``) when the window holds less
        than half of ``duration``, ValueError for an invalid ``duration`` or ``theta_known``.
        """
        if not (duration > 0 and np.isfinite(duration)):
            raise ValueError(f"the tare duration must be positive (s), got {duration}")
        self.process()
        with self._lock:
            t, Y, y = self.window.samples(duration, copy=False)
            span = float(t[-1] - t[0]) if t.size else 0.0
            if t.size < 2 or span < 0.5 * duration:
                raise EstimateUnavailable(
                    "too_few_samples",
                    (
                        f"the window holds {t.size} {self.tare_sample_name} over {span:.2f} s "
                        f"for a {duration:g} s tare: keep the payload removed (or the known "
                        "one attached) "
                        f"that long with {self.tare_inputs} streaming, then tare"
                    ),
                )
            tare = tare_offset(t, y, Y, theta_known, noise_floor=self.tare_noise_floor)
            self._tare = tare
            if theta_known is None:
                self._clear_samples()
            return tare

    def clear_tare(self) -> None:
        """Forget the tare."""
        with self._lock:
            self._tare = None

    def _newest_input_stamps(self) -> tuple[float | None, ...]:
        """The newest stamp (s) of each input, ``None`` for one that has none yet."""
        return (self._joint_input.last_t,)

    def _restart_after_clock_reset(self, t: float) -> None:
        """Also keep the tare, its age carried over into the new time base."""
        if self._tare is not None:
            newest = max(v for v in (*self._newest_input_stamps(), self._tare.t) if v is not None)
            self._tare = dataclasses.replace(self._tare, t=t - (newest - self._tare.t))
        super()._restart_after_clock_reset(t)


class PayloadEstimator(PayloadEstimatorMixin, OnlineEstimator[EstimatorConfig]):
    """Identify the rigid payload beyond an F/T sensor from joint states and wrenches (the
    window's samples are the wrenches). Thread-safe under the locking rule of
    :mod:`inertia_id_ros.online.estimator`."""

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
            n_params,
            rows_per_sample=len(WRENCH_CHANNEL_NAMES),
        )
        self.kinematics = kinematics
        self._expected_frame = config.wrench_frame_id or kinematics.sensor_frame
        self._wrenches = SampleBuffer(config.max_pending_wrenches, t=(), f=(6,))
        self._last_wrench_t: float | None = None
        self._wrench_clock = type(self._joint_clock)(config.clock_jump_sec)

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
            if self._wrenches.append(t=t, f=self.config.wrench_sign * wrench):
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
        frames = [None] * t.size if frame_ids is None else list(frame_ids)
        with self._lock:
            if self._append_wrench_batch(t, wrenches, frames):
                return []
        rejected = []
        for i in range(t.size):
            try:
                self.add_wrench(t[i], wrenches[i], frames[i])
            except SampleRejected as why:
                rejected.append(why)
        return rejected

    def _append_wrench_batch(
        self, t: np.ndarray, wrenches: np.ndarray, frames: list[str | None]
    ) -> bool:
        """Buffer the batch at once if every sample passes every check (lock held); ``False``
        (nothing done) otherwise."""
        n, config, last = t.size, self.config, self._last_wrench_t
        if n == 0 or wrenches.shape != (n, 6) or len(frames) != n:
            return False
        if not (
            np.isfinite(t).all()
            and np.all(np.diff(t) > 0)
            and (last is None or t[0] > last)
            and np.isfinite(wrenches).all()
        ):
            return False
        if config.wrench_limits is not None and np.any(np.abs(wrenches) >= config.wrench_limits):
            return False
        if config.check_wrench_frame and any(
            f is not None and f != self._expected_frame for f in frames
        ):
            return False
        self.received[WRENCH] += n
        overflow = self._wrenches.extend(t=t, f=config.wrench_sign * wrenches)
        if overflow:
            self.dropped["overflow"] += overflow
        self._last_wrench_t = float(t[-1])
        self._wrench_clock.in_step()
        return True

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
        :attr:`tare` if one is set (the rule of :mod:`inertia_id_ros.online.tare`). Raises
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
            tare = self._tare
            tare_known = (
                tare is not None
                and float(np.max(tare.offset_std_at(t_last)[:3])) <= config.tare_max_force_std
            )
            if config.estimate_offset and not identifiable and not tare_known:
                raise EstimateUnavailable(
                    "offset_not_identifiable",
                    _unidentifiable_offset_message(
                        t_last - t_first, spread, config.offset_min_tilt_deg
                    ),
                )
            _, Y, f = self.window.samples(duration, copy=False, until=until)
            if tare is not None and not config.estimate_offset:
                f = f - tare.offset  # the tare is the known offset
            channels = ChannelNormalEquations.from_samples(Y, f)
            initvals = self._warm_start(initvals)
            generation = self._generation
        payload_problem = payload_problems(config, method, channels)

        def build(weights: np.ndarray | None) -> Problem:
            problem = payload_problem(weights)
            if tare is not None and config.estimate_offset:  # a prior on the offset, fading,
                scale = 1.0 if weights is None else np.sqrt(weights)  # in the rows' weights
                problem = with_tare(problem, tare, t_last, sigma=tare.noise_std * scale)
            return problem

        solution, weights = solve_weighted(
            channels, build, method, initvals, options, config.weighting
        )
        theta = np.array(solution.bodies[0])
        if require_consistent:
            report = check_bodies({"payload": theta}, method)[0]
        else:
            report = check_consistency(theta)
        self._keep_solution(solution, generation)
        message = "" if solution.found else f"solver stopped early ({solution.status})"
        if solution.info.get("approximation_limited"):  # pointmass: its points limit the fit
            message = "; ".join(filter(None, [message, solution.message]))
        offset = (
            np.array(solution.extras[:N_WRENCH_CHANNELS])
            if config.estimate_offset
            else np.zeros(N_WRENCH_CHANNELS)
            if tare is None
            else tare.offset.copy()
        )
        covariance = parameter_covariance(
            channels, np.asarray(solution.x), constrained=method != "ols", weights=weights
        )
        return Estimate(
            theta=theta,
            sensor_offset=offset,
            covariance=covariance.theta(),
            min_pseudo_inertia_eig=report.min_pseudo_inertia_eig,
            residual_rms=float(
                np.sqrt(  # unweighted, whatever the weighting
                    channels.squared_residuals(solution.x).sum()
                    / (channels.n_samples * channels.n_channels)
                )
            ),
            n_samples=n_samples,
            method=method,
            solve_time=float(solution.solve_time),
            t_first=t_first,
            t_last=t_last,
            offset_identifiable=identifiable,
            orientation_spread_deg=spread,
            message=message,
            condition_number=covariance.condition_number,
        )

    # ---- state -----------------------------------------------------------------------------

    def _newest_input_stamps(self) -> tuple[float | None, ...]:
        return (self._last_wrench_t, self._joint_input.last_t)

    def _clear_pending(self) -> None:
        self._wrenches.clear()
        self._last_wrench_t = None


def _unidentifiable_offset_message(duration: float, spread: np.ndarray, min_tilt: float) -> str:
    return (
        f"the F/T sensor offset cannot be told apart from the payload's weight: over the last "
        f"{duration:.1f} s the sensor's orientation with respect to gravity varied by "
        f"{spread[0]:.1f} and {spread[1]:.1f} deg rms in its two main directions, and it must "
        f"vary by at least {min_tilt:.1f} deg in both; tilt the sensor about two different "
        "horizontal axes, or calibrate the offset and set estimate_offset=False"
    )
