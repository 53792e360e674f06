"""Online payload estimator: joint states and F/T wrenches in, physically consistent estimates out.

Data flow: :meth:`PayloadEstimator.add_joint_state` and :meth:`~PayloadEstimator.add_wrench`
validate and buffer samples (ROS callbacks, any thread); :meth:`~PayloadEstimator.process` turns
each wrench whose stamp is covered by joint states on both sides (the filter's lag,
``filter_half_width``) into a regressor row: joint positions, velocities and accelerations at the
wrench stamp by a local polynomial fit (:mod:`inertia_id_ros.filtering`), the sensor's twist and
proper acceleration (:mod:`inertia_id_ros.kinematics`), ``payload_regressor``; rows go to a
:class:`~inertia_id_ros.window.SlidingWindow`. :meth:`~PayloadEstimator.solve` solves the window's
problem (:mod:`inertia_id_ros.solvers`) and returns an :class:`Estimate` only if it is fully
physically consistent. Model: ``f = wrench_sign * measured = body_regressor(v, a_g) @ theta +
offset`` in the sensor frame.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from inertia_id_ros.filtering import (COVERAGE_OK, COVERAGE_PENDING, check_coverage, fit_window,
                                      joint_states_at)
from inertia_id_ros.inertia import check_consistency, inertia_from_theta
from inertia_id_ros.kinematics import SensorKinematics
from inertia_id_ros.regressors import N_BODY_PARAMS, N_OFFSET_PARAMS, payload_regressor_batch
from inertia_id_ros.solvers import Problem, ProblemError, SolverError
from inertia_id_ros.solvers import solve as solve_problem
from inertia_id_ros.window import SampleBuffer, SlidingWindow

JOINT_STATE = "joint_state"
WRENCH = "wrench"
_PROCESS_CHUNK = 500
"""Wrenches turned into rows per lock hold in :meth:`PayloadEstimator.process`."""


class SampleRejected(ValueError):
    """An input sample was rejected; ``reason`` is a short machine-readable code (see
    :meth:`PayloadEstimator.add_joint_state`, :meth:`PayloadEstimator.add_wrench`)."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        self.message = message
        super().__init__(f"{reason}: {message}")


class EstimateUnavailable(RuntimeError):
    """No estimate can be given now; ``reason``: ``"too_few_samples"``,
    ``"offset_not_identifiable"``, ``"solver_failed"`` or ``"inconsistent"``."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        self.message = message
        super().__init__(f"{reason}: {message}")


@dataclass
class EstimatorConfig:
    """Settings of :class:`PayloadEstimator` (SI units; times in s)."""

    window_sec: float = 10.0
    """Length of the sliding window of samples solved on (s)."""
    method: str = "lmi"
    """Default solver method (a key of ``inertia_id_ros.solvers.METHODS``)."""
    estimate_offset: bool = True
    """Estimate the F/T sensor's constant offset (6,) (N, N m) with the payload."""
    wrench_sign: float = 1.0
    """+1 if the sensor reports the wrench it exerts on the payload, -1 for the opposite."""
    filter_half_width: float = 0.05
    """Half-width of the local polynomial fit of joint states around each wrench stamp (s); also
    the processing lag."""
    filter_order: int = 2
    """Degree of the local polynomial (>= 2: positions may be differentiated twice)."""
    use_measured_velocity: bool = True
    """Use joint-state velocities when present (else positions are differentiated)."""
    max_joint_gap: float = 0.1
    """Joint states further apart are a gap: no fit spans it; wrenches within
    ``filter_half_width`` of it are dropped (reason ``"gap"``) (s)."""
    min_samples: int = 200
    """Wrench samples needed in the (sub)window to solve."""
    offset_min_tilt_deg: float = 5.0
    """The F/T offset is identifiable if the direction of gravity in the sensor frame (more
    precisely of the proper acceleration) spreads at least this much (rms, deg) along its second
    principal axis over the window (tilts about two axes)."""
    window_capacity: int = 20000
    """Maximum samples in the window (bounded memory; the oldest are dropped first)."""
    joint_buffer_capacity: int = 10000
    """Joint states kept for filtering (bounded memory)."""
    max_pending_wrenches: int = 10000
    """Wrenches waiting for joint states; the oldest beyond are dropped (reason ``"overflow"``)."""
    wrench_frame_id: str = ""
    """Expected ``frame_id`` of the wrenches ("" : the sensor frame's name)."""
    check_wrench_frame: bool = True
    """Reject wrenches with another ``frame_id`` (reason ``"wrong_frame"``)."""
    ignore_unknown_joints: bool = False
    """Ignore joint names absent from the model instead of rejecting the joint state."""
    warm_start: bool = True
    """Start each solve from the previous solution."""
    solver_options: dict[str, Any] = field(default_factory=dict)
    """Options passed to ``solvers.solve``."""

    def __post_init__(self) -> None:
        for name in ("window_sec", "filter_half_width", "max_joint_gap"):
            if not getattr(self, name) > 0:
                raise ValueError(f"EstimatorConfig.{name} must be positive, got "
                                 f"{getattr(self, name)}")
        if self.wrench_sign not in (1.0, -1.0):
            raise ValueError(f"EstimatorConfig.wrench_sign must be +1 or -1, got "
                             f"{self.wrench_sign}")
        if self.filter_order < 2:
            raise ValueError(f"EstimatorConfig.filter_order must be >= 2, got {self.filter_order}")
        for name in ("min_samples", "window_capacity", "joint_buffer_capacity",
                     "max_pending_wrenches"):
            if getattr(self, name) < 1:
                raise ValueError(f"EstimatorConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.offset_min_tilt_deg < 0:
            raise ValueError("EstimatorConfig.offset_min_tilt_deg must be >= 0, got "
                             f"{self.offset_min_tilt_deg}")

@dataclass(frozen=True)
class Estimate:
    """A fully physically consistent estimate of the payload beyond the sensor.

    ``theta`` (10,) about and in the sensor frame; ``sensor_offset`` (6,) (N, N m; zeros when not
    estimated); ``covariance`` (10, 10) of ``theta``: ``sigma^2 (Y^T Y)^+`` (its theta block, the
    offset marginalised) with ``sigma^2`` the residual variance per row; ``min_pseudo_inertia_eig``
    (kg m^2); ``residual_rms`` (N / N m mixed); ``n_samples`` wrenches used, stamped from
    ``t_first`` to ``t_last`` (s); ``solve_time`` (s); ``orientation_spread_deg`` (3,) rms spread
    of the gravity direction in the sensor frame along its principal axes (deg, descending);
    ``offset_identifiable`` whether that spread passes ``offset_min_tilt_deg``.
    """

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
    offset_identifiable: bool
    orientation_spread_deg: np.ndarray
    message: str = ""

    @property
    def mass(self) -> float:
        """Mass (kg)."""
        return float(self.theta[0])

    @property
    def com(self) -> np.ndarray:
        """Centre of mass (3,) (m, sensor frame)."""
        return inertia_from_theta(self.theta)[1]

    @property
    def inertia_com(self) -> np.ndarray:
        """3x3 rotational inertia about the COM, sensor-frame axes (kg m^2)."""
        return inertia_from_theta(self.theta)[2]

    @property
    def theta_std(self) -> np.ndarray:
        """(10,) standard deviations of ``theta`` (square roots of the covariance diagonal)."""
        return np.sqrt(np.clip(np.diag(self.covariance), 0.0, None))


@dataclass(frozen=True)
class EstimatorStats:
    """Counters of a :class:`PayloadEstimator` (a snapshot)."""

    received: dict[str, int]
    """Samples offered per input (``"joint_state"``, ``"wrench"``)."""
    processed: dict[str, int]
    """Accepted joint states; wrenches turned into window rows."""
    dropped: dict[str, int]
    """Rejected or dropped samples per reason."""
    pending_wrenches: int
    window_samples: int


class PayloadEstimator:
    """Identify the rigid payload beyond an F/T sensor from joint states and wrenches.

    Thread-safe: one internal lock guards the buffers; :meth:`add_joint_state` and
    :meth:`add_wrench` may be called from one thread while another calls :meth:`process` and
    :meth:`solve` (solving runs outside the lock).
    """

    def __init__(self, kinematics: SensorKinematics,
                 config: EstimatorConfig | None = None) -> None:
        self.kinematics = kinematics
        self.config = config or EstimatorConfig()
        config = self.config
        n = kinematics.n_joints
        self._n_params = N_BODY_PARAMS + (N_OFFSET_PARAMS if config.estimate_offset else 0)
        self._model_joint_names = frozenset(kinematics.model.names[1:])
        self._expected_frame = config.wrench_frame_id or kinematics.sensor_frame
        self._lock = threading.Lock()
        self._process_lock = threading.Lock()
        self._joints = SampleBuffer(config.joint_buffer_capacity, t=(), q=(n,), dq=(n,),
                                    has_dq=())
        self._wrenches = SampleBuffer(config.max_pending_wrenches, t=(), f=(6,))
        self.window = SlidingWindow(config.window_sec, self._n_params, config.window_capacity)
        self._index_cache: dict[tuple[str, ...], np.ndarray] = {}
        self.received: Counter[str] = Counter()
        self.processed: Counter[str] = Counter()
        self.dropped: Counter[str] = Counter()
        self._last_joint_t: float | None = None
        self._last_wrench_t: float | None = None
        self._last_solution = None
        self._generation = 0

    # ---- input -----------------------------------------------------------------------------

    def _reject(self, reason: str, message: str) -> SampleRejected:
        self.dropped[reason] += 1
        return SampleRejected(reason, message)

    def _check_stamp(self, t: float, last: float | None, what: str) -> None:
        if not np.isfinite(t):
            raise self._reject("non_finite", f"{what} stamp is {t}")
        if last is not None and t == last:
            raise self._reject("duplicate_stamp",
                               f"{what} stamp {t:.6f} s repeats the previous one")
        if last is not None and t < last:
            raise self._reject("out_of_order", f"{what} stamp {t:.6f} s is older than the previous "
                               f"{last:.6f} s")

    def _joint_indices(self, names: tuple[str, ...]) -> np.ndarray:
        """Positions in ``names`` of :attr:`SensorKinematics.joint_names` (cached per name list)."""
        indices = self._index_cache.get(names)
        if indices is not None:
            return indices
        position = {}
        for i, name in enumerate(names):
            if name in position:
                raise self._reject("duplicate_joint", f"joint {name!r} appears twice")
            position[name] = i
        unknown = [name for name in names if name not in self._model_joint_names]
        if unknown and not self.config.ignore_unknown_joints:
            raise self._reject("unknown_joint", f"joint(s) {unknown} are not in the robot model")
        missing = [name for name in self.kinematics.joint_names if name not in position]
        if missing:
            raise self._reject("missing_joint", f"joint state lacks joint(s) {missing} (needed: "
                               f"{list(self.kinematics.joint_names)})")
        indices = np.array([position[name] for name in self.kinematics.joint_names], dtype=int)
        if len(self._index_cache) < 16:
            self._index_cache[names] = indices
        return indices

    def add_joint_state(self, t: float, names: list[str] | tuple[str, ...], q: np.ndarray,
                        dq: np.ndarray | None = None) -> None:
        """Buffer a joint state: stamp ``t`` (s), ``names`` with positions ``q`` (rad, m) and
        optionally velocities ``dq`` (rad/s, m/s; ``None`` or empty when absent).

        Joints the sensor frame does not depend on are ignored. Raises :class:`SampleRejected`
        (counted in :attr:`dropped`) with reason ``non_finite``, ``length_mismatch``,
        ``duplicate_joint``, ``unknown_joint`` (unless ``ignore_unknown_joints``),
        ``missing_joint``, ``duplicate_stamp`` or ``out_of_order``.
        """
        with self._lock:
            self.received[JOINT_STATE] += 1
            t = float(t)
            names = tuple(names)
            q = np.asarray(q, dtype=float).reshape(-1)
            dq = None if dq is None or len(dq) == 0 else np.asarray(dq, dtype=float).reshape(-1)
            if q.size != len(names) or (dq is not None and dq.size != len(names)):
                raise self._reject("length_mismatch", f"{len(names)} names, {q.size} positions, "
                                   f"{0 if dq is None else dq.size} velocities")
            indices = self._joint_indices(names)
            q = q[indices]
            dq = None if dq is None or not self.config.use_measured_velocity else dq[indices]
            if not np.isfinite(q).all() or (dq is not None and not np.isfinite(dq).all()):
                raise self._reject("non_finite", f"joint state at {t:.6f} s has NaN or Inf values")
            self._check_stamp(t, self._last_joint_t, "joint state")
            self._last_joint_t = t
            self._joints.append(t=t, q=q, has_dq=dq is not None, dq=0.0 if dq is None else dq)
            self.processed[JOINT_STATE] += 1

    def add_wrench(self, t: float, wrench: np.ndarray, frame_id: str | None = None) -> None:
        """Buffer an F/T measurement: stamp ``t`` (s), ``wrench`` (6,) ``[fx, fy, fz, tx, ty, tz]``
        (N, N m) in the sensor frame, ``frame_id`` checked against the expected one when given.

        Raises :class:`SampleRejected` (counted in :attr:`dropped`) with reason ``non_finite``,
        ``length_mismatch``, ``wrong_frame``, ``duplicate_stamp`` or ``out_of_order``. When
        ``max_pending_wrenches`` wait already, the oldest is dropped (reason ``overflow``).
        """
        with self._lock:
            self.received[WRENCH] += 1
            t = float(t)
            wrench = np.asarray(wrench, dtype=float).reshape(-1)
            if wrench.size != 6:
                raise self._reject("length_mismatch", f"wrench has {wrench.size} values, need 6")
            if not np.isfinite(wrench).all():
                raise self._reject("non_finite", f"wrench at {t:.6f} s has NaN or Inf values")
            if (self.config.check_wrench_frame and frame_id is not None
                    and frame_id != self._expected_frame):
                raise self._reject("wrong_frame", f"wrench in frame {frame_id!r}, expected "
                                   f"{self._expected_frame!r}")
            self._check_stamp(t, self._last_wrench_t, "wrench")
            self._last_wrench_t = t
            if self._wrenches.append(t=t, f=self.config.wrench_sign * wrench):
                self.dropped["overflow"] += 1

    # ---- processing ------------------------------------------------------------------------

    def process(self) -> int:
        """Move the wrenches whose stamps the joint states now cover into the window; returns how
        many rows were added. Wrenches that can never be covered are dropped (reasons ``gap``: a
        joint-state gap longer than ``max_joint_gap`` within ``filter_half_width`` of the stamp;
        ``no_joint_state``: before the oldest buffered joint state; ``sparse``: too few joint
        states in the fit window)."""
        added = 0
        with self._process_lock:
            while True:
                with self._lock:
                    rows, consumed = self._process_chunk()
                added += rows
                if consumed < _PROCESS_CHUNK:
                    return added

    def _process_chunk(self) -> tuple[int, int]:
        """Process up to ``_PROCESS_CHUNK`` pending wrenches (lock held): (rows added, consumed)."""
        config = self.config
        t_wrench = self._wrenches["t"][:_PROCESS_CHUNK]
        if t_wrench.size == 0:
            return 0, 0
        t_joint = self._joints["t"]
        status = check_coverage(t_joint, t_wrench, config.filter_half_width, config.max_joint_gap,
                                config.filter_order)
        pending = np.flatnonzero(status == COVERAGE_PENDING)
        consumed = int(pending[0]) if pending.size else t_wrench.size
        status = status[:consumed]
        for reason, count in Counter(status[status != COVERAGE_OK]).items():
            self.dropped[reason] += count
        ready = np.flatnonzero(status == COVERAGE_OK)
        if ready.size:
            t_ready = t_wrench[ready]
            q, dq, ddq = self._joint_states_at(t_ready)
            V, A = self.kinematics.compute_batch(q, dq, ddq)
            Y = payload_regressor_batch(V, A, config.estimate_offset)
            self.window.extend(t_ready, Y, self._wrenches["f"][ready])
            self.processed[WRENCH] += ready.size
        self._wrenches.drop_front(consumed)
        return int(ready.size), consumed

    def _joint_states_at(self, t_query: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(q, dq, ddq) (M, n) at ``t_query``; measured velocities are used for the queries whose
        whole fit window has them."""
        config = self.config
        t, q, dq, has_dq = (self._joints[name] for name in ("t", "q", "dq", "has_dq"))
        h = config.filter_half_width
        lo, hi = fit_window(t, t_query, h)
        missing = np.concatenate([[0], np.cumsum(has_dq == 0)])
        with_velocity = (missing[hi] - missing[lo]) == 0
        out = [np.empty((t_query.size, q.shape[1])) for _ in range(3)]
        for use_dq in (True, False):
            select = with_velocity if use_dq else ~with_velocity
            if select.any():
                values = joint_states_at(t, q, dq if use_dq else None, t_query[select], h,
                                         config.filter_order)
                for array, value in zip(out, values):
                    array[select] = value
        return tuple(out)

    # ---- solving ---------------------------------------------------------------------------

    def orientation_spread_deg(self, duration: float = 0.0) -> np.ndarray:
        """(3,) rms spread (deg, descending) of the proper-acceleration direction in the sensor
        frame (gravity's, when the motion is slow) along its principal axes, over the newest
        ``duration`` s of the window (0: all). Zero if fewer than 2 samples."""
        with self._lock:
            return self._orientation_spread_deg(duration)

    def _orientation_spread_deg(self, duration: float) -> np.ndarray:
        _, Y, _ = self.window.samples(duration, copy=False)
        if Y.shape[0] < 2:
            return np.zeros(3)
        a_c = Y[:, :3, 0]  # m column: classical proper acceleration of the sensor origin
        g = np.linalg.norm(self.kinematics.gravity) or 1.0
        variances = np.linalg.eigvalsh(np.cov(a_c.T) / g ** 2)[::-1]
        return np.rad2deg(np.sqrt(np.clip(variances, 0.0, None)))

    def solve(self, method: str | None = None, duration: float = 0.0,
              initvals: Any = None, require_consistent: bool = True) -> Estimate:
        """Estimate from the newest ``duration`` s of the window (0: all) with ``method`` (default
        ``config.method``), warm-started from ``initvals`` (default: the previous solution if
        ``config.warm_start``). Raises :class:`EstimateUnavailable` with reason
        ``too_few_samples``, ``offset_not_identifiable`` (when estimating the offset),
        ``solver_failed`` or ``inconsistent``: never returns an estimate that is not fully
        physically consistent, unless ``require_consistent`` is False (offline analysis of a
        baseline such as ``ols``; check the result with ``check_consistency``)."""
        config = self.config
        method = method or config.method
        with self._lock:
            n_samples = self.window.count(duration)
            if n_samples < config.min_samples:
                raise EstimateUnavailable("too_few_samples", f"{n_samples} wrench samples in the "
                                          f"window, need {config.min_samples}")
            t, _, _ = self.window.samples(duration, copy=False)
            t_first, t_last = float(t[0]), float(t[-1])
            spread = self._orientation_spread_deg(duration)
            identifiable = bool(spread[1] >= config.offset_min_tilt_deg)
            if config.estimate_offset and not identifiable:
                raise EstimateUnavailable("offset_not_identifiable", _unidentifiable_offset_message(
                    t_last - t_first, spread, config.offset_min_tilt_deg))
            gram, moment, yty, n_rows = self.window.normal_equations(duration)
            if initvals is None and config.warm_start:
                initvals = self._last_solution
            generation = self._generation
        problem = Problem(gram=gram, moment=moment, yty=yty, n_rows=n_rows, n_bodies=1)
        try:
            solution = solve_problem(problem, method, initvals=initvals, **config.solver_options)
        except (ProblemError, SolverError) as e:
            raise EstimateUnavailable("solver_failed", f"method {method!r}: {e}") from e
        theta = np.array(solution.bodies[0])
        report = check_consistency(theta)
        if require_consistent and not report.fully_consistent:
            raise EstimateUnavailable("inconsistent", f"method {method!r} returned a physically "
                                      f"inconsistent estimate: {'; '.join(report.problems)}")
        with self._lock:
            if generation == self._generation:
                self._last_solution = solution
        message = "" if solution.found else f"solver stopped early ({solution.status})"
        offset = (np.array(solution.extras[:N_OFFSET_PARAMS]) if config.estimate_offset
                  else np.zeros(N_OFFSET_PARAMS))
        return Estimate(theta=theta, sensor_offset=offset,
                        covariance=_theta_covariance(problem, solution.x),
                        min_pseudo_inertia_eig=report.min_pseudo_inertia_eig,
                        residual_rms=float(solution.residual_rms), n_samples=n_samples,
                        method=method, solve_time=float(solution.solve_time), t_first=t_first,
                        t_last=t_last, offset_identifiable=identifiable,
                        orientation_spread_deg=spread, message=message)

    # ---- state -----------------------------------------------------------------------------

    def reset(self) -> None:
        """Forget all samples, the previous solution and the counters."""
        with self._lock:
            self._joints.clear()
            self._wrenches.clear()
            self.window.clear()
            self._last_joint_t = self._last_wrench_t = None
            self._last_solution = None
            self._generation += 1
            self.received.clear()
            self.processed.clear()
            self.dropped.clear()

    def stats(self) -> EstimatorStats:
        """Snapshot of the counters."""
        with self._lock:
            return EstimatorStats(received=dict(self.received), processed=dict(self.processed),
                                  dropped=dict(self.dropped), pending_wrenches=len(self._wrenches),
                                  window_samples=len(self.window))


def _unidentifiable_offset_message(duration: float, spread: np.ndarray,
                                   min_tilt: float) -> str:
    return (f"the F/T sensor offset cannot be told apart from the payload's weight: over the last "
            f"{duration:.1f} s the sensor's orientation with respect to gravity varied by "
            f"{spread[0]:.1f} and {spread[1]:.1f} deg rms in its two main directions, and it must "
            f"vary by at least {min_tilt:.1f} deg in both; tilt the sensor about two different "
            "horizontal axes, or calibrate the offset and set estimate_offset=False")


def _theta_covariance(problem: Problem, x: np.ndarray) -> np.ndarray:
    """(10, 10) ``sigma^2 (Y^T Y)^+`` theta block, ``sigma^2 = ||Y x - y||^2 / (rows - p)``; the
    pseudo-inverse is taken on the column-scaled gram matrix (units differ per column)."""
    p = problem.n_params
    dof = max(problem.n_rows - p, 1)
    sigma2 = problem.squared_residual(x) / dof
    gram = problem.gram
    scale = 1.0 / np.sqrt(np.where(np.diag(gram) > 0, np.diag(gram), 1.0))
    inverse = scale[:, None] * np.linalg.pinv(scale[:, None] * gram * scale, rcond=1e-12,
                                              hermitian=True) * scale
    return sigma2 * inverse[:N_BODY_PARAMS, :N_BODY_PARAMS]
