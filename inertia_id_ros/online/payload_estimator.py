"""Online payload estimator: joint states and F/T wrenches in, physically consistent estimates out.

Data flow: :meth:`PayloadEstimator.add_joint_state` and :meth:`~PayloadEstimator.add_wrench`
validate and buffer samples (ROS callbacks, any thread); :meth:`~PayloadEstimator.process` turns
each wrench whose stamp is covered by joint states on both sides (the filter's lag,
``filter_half_width``) into a regressor row: joint positions, velocities and accelerations at the
wrench stamp by a local polynomial fit (:mod:`inertia_id_ros.core.filtering`), the sensor's twist and
proper acceleration (:mod:`inertia_id_ros.core.kinematics`), ``payload_regressor``; rows go to a
:class:`~inertia_id_ros.online.window.SlidingWindow`. :meth:`~PayloadEstimator.solve` solves the window's
problem (:mod:`inertia_id_ros.solvers`) and returns an :class:`Estimate` only if it is fully
physically consistent. Model: ``f = wrench_sign * measured = body_regressor(v, a_g) @ theta +
offset`` in the sensor frame.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from inertia_id_ros.errors import EstimateUnavailable, SampleRejected
from inertia_id_ros.online.change_detection import residual_sigma
from inertia_id_ros.core.covariance import ChannelNormalEquations, parameter_covariance
from inertia_id_ros.core.filtering import (COVERAGE_OK, COVERAGE_PENDING, check_coverage,
                                      joint_states_at_mixed)
from inertia_id_ros.core.inertia import check_consistency, inertia_from_theta
from inertia_id_ros.core.kinematics import SensorKinematics
from inertia_id_ros.core.regressors import N_BODY_PARAMS, N_OFFSET_PARAMS, payload_regressor_batch
from inertia_id_ros.solvers import Problem
from inertia_id_ros.errors import ProblemError, SolverError
from inertia_id_ros.solvers import solve as solve_problem
from inertia_id_ros.online.tare import Tare, tare_offset, with_tare
from inertia_id_ros.online.window import SampleBuffer, SlidingWindow

JOINT_STATE = "joint_state"
WRENCH = "wrench"
_PROCESS_CHUNK = 500
"""Wrenches turned into rows per lock hold in :meth:`PayloadEstimator.process`."""


RowsCallback = Callable[[np.ndarray, np.ndarray, np.ndarray], None]
"""``on_rows(t (N,), Y (N, r, p), f (N, r))``: regressor rows just added to a window."""

WRENCH_CHANNEL_NAMES = ("fx", "fy", "fz", "tx", "ty", "tz")
"""Names of a wrench's channels, in the order of its 6-vector."""


def window_capacities(window_sec: float, max_input_rate_hz: float) -> dict[str, int]:
    """Buffer sizes for a window of ``window_sec`` (s) of inputs arriving at up to
    ``max_input_rate_hz`` (Hz): ``window_capacity`` 1.1 x window_sec x rate samples (at least
    1000) and ``joint_buffer_capacity`` a tenth of it (at least 10000)."""
    samples = int(1.1 * window_sec * max_input_rate_hz)
    return {"window_capacity": max(samples, 1000),
            "joint_buffer_capacity": max(samples // 10, 10000)}


@dataclass
class OnlineEstimatorConfig:
    """Settings shared by the online estimators (:class:`PayloadEstimator`,
    :class:`~inertia_id_ros.online.link_estimator.LinkEstimator`): window, joint-state filter, solver
    (SI units; times in s). A "sample" is a wrench (payload) or a joint state (links)."""

    window_sec: float = 10.0
    """Length of the sliding window of samples solved on (s)."""
    method: str = "lmi"
    """Default solver method (a key of ``inertia_id_ros.solvers.METHODS``)."""
    filter_half_width: float = 0.05
    """Half-width of the local polynomial fit of joint states around each sample stamp (s); also
    the processing lag."""
    filter_order: int = 2
    """Degree of the local polynomial (>= 2: positions may be differentiated twice)."""
    use_measured_velocity: bool = True
    """Use joint-state velocities when present (else positions are differentiated)."""
    max_joint_gap: float = 0.1
    """Joint states further apart are a gap: no fit spans it; samples within
    ``filter_half_width`` of it are dropped (reason ``"gap"``) (s)."""
    clock_jump_sec: float = 1.0
    """Stamps this much older than the newest accepted one of their input, going on for this long,
    are a clock reset: the buffers and the window start afresh (counted in ``clock_jumps``)
    instead of dropping every later sample (s; see :class:`ClockResetDetector`)."""
    min_samples: int = 200
    """Samples needed in the (sub)window to solve."""
    window_capacity: int = 20000
    """Maximum samples in the window (bounded memory; the oldest are dropped first)."""
    joint_buffer_capacity: int = 10000
    """Joint states kept for filtering (bounded memory)."""
    ignore_unknown_joints: bool = False
    """Ignore joint names absent from the model instead of rejecting the joint state."""
    warm_start: bool = True
    """Start each solve from the previous solution."""
    solver_options: dict[str, Any] = field(default_factory=dict)
    """Options passed to ``solvers.solve``."""

    def __post_init__(self) -> None:
        self._check_positive("window_sec", "filter_half_width", "max_joint_gap")
        if self.filter_order < 2:
            raise self._invalid("filter_order", "must be >= 2")
        self._check_at_least_one("min_samples", "window_capacity", "joint_buffer_capacity")

    def _invalid(self, name: str, requirement: str) -> ValueError:
        return ValueError(f"{type(self).__name__}.{name} {requirement}, got "
                          f"{getattr(self, name)!r}")

    def _check_positive(self, *names: str) -> None:
        for name in names:
            if not getattr(self, name) > 0:
                raise self._invalid(name, "must be positive")

    def _check_at_least_one(self, *names: str) -> None:
        for name in names:
            if getattr(self, name) < 1:
                raise self._invalid(name, "must be >= 1")


@dataclass
class EstimatorConfig(OnlineEstimatorConfig):
    """Settings of :class:`PayloadEstimator` (SI units; times in s): the shared ones of
    :class:`OnlineEstimatorConfig` (samples are wrenches) and the F/T sensor's."""

    estimate_offset: bool = True
    """Estimate the F/T sensor's constant offset (6,) (N, N m) with the payload."""
    wrench_sign: float = 1.0
    """+1 if the sensor reports the wrench it exerts on the payload, -1 for the opposite."""
    tare_max_force_std: float = 0.05
    """A tare (:meth:`PayloadEstimator.set_tare`) replaces the tilt requirement of
    ``offset_min_tilt_deg`` while the standard deviation of its force offset, grown with its age
    (:meth:`~inertia_id_ros.online.tare.Tare.offset_std_at`), stays below this (N; per axis); with the
    default drift rate about 2.5 minutes after a 1 s, 1 kHz tare."""
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


class ClockResetDetector:
    """Tells a reset of an input's clock (a driver restart, a looped bag, simulated time reset)
    from stale or misordered samples: stamps more than ``clock_jump_sec`` (s) older than the
    newest accepted one are a reset once they have gone on, increasing, for ``clock_jump_sec`` of
    their own time; until then they are dropped as ``out_of_order``, like a stale burst."""

    def __init__(self, clock_jump_sec: float) -> None:
        self.clock_jump_sec = clock_jump_sec
        self._first: float | None = None
        self._previous: float | None = None

    def is_reset(self, t: float, newest: float | None) -> bool:
        """Whether the sample stamped ``t`` (s) starts afresh (``newest``: the input's newest
        accepted stamp)."""
        if newest is None or not np.isfinite(t) or t >= newest - self.clock_jump_sec:
            self._first = self._previous = None
            return False
        if self._first is None or self._previous is None or t <= self._previous:
            self._first = t
        self._previous = t
        if t - self._first >= self.clock_jump_sec:
            self._first = self._previous = None
            return True
        return False


def check_stamp(t: float, last: float | None, what: str) -> None:
    """Raise :class:`SampleRejected` unless the stamp ``t`` (s) is finite and newer than ``last``
    (the previous accepted stamp of the same input; reasons ``non_finite``, ``duplicate_stamp``,
    ``out_of_order``)."""
    if not np.isfinite(t):
        raise SampleRejected("non_finite", f"{what} stamp is {t}")
    if last is not None and t == last:
        raise SampleRejected("duplicate_stamp", f"{what} stamp {t:.6f} s repeats the previous one")
    if last is not None and t < last:
        raise SampleRejected("out_of_order", f"{what} stamp {t:.6f} s is older than the previous "
                             f"{last:.6f} s")


@dataclass(frozen=True)
class JointStateSample:
    """A validated joint state: stamp ``t`` (s); positions ``q`` (n,) (rad, m), velocities ``dq``
    (n,) or ``None``, raw efforts ``effort`` (n,) or ``None``, in the validator's joint order."""

    t: float
    q: np.ndarray
    dq: np.ndarray | None
    effort: np.ndarray | None


class JointStateValidator:
    """Validates joint states (any joint order) for the joints ``joint_names`` of a model whose
    joints are ``model_joint_names``; remembers the last accepted stamp. Not thread-safe.

    ``ignore_unknown``: joints absent from the model are ignored instead of rejected;
    ``use_velocity``: keep measured velocities (else they are dropped unchecked); ``need_effort``:
    a joint state without efforts is rejected (reason ``missing_effort``); without it efforts
    are dropped unchecked.
    """

    def __init__(self, joint_names: Sequence[str], model_joint_names: Iterable[str],
                 ignore_unknown: bool = False, use_velocity: bool = True,
                 need_effort: bool = False) -> None:
        self.joint_names = tuple(joint_names)
        self._model_joint_names = frozenset(model_joint_names)
        self.ignore_unknown = ignore_unknown
        self.use_velocity = use_velocity
        self.need_effort = need_effort
        self.last_t: float | None = None
        self._index_cache: dict[tuple[str, ...], np.ndarray] = {}

    def reset(self) -> None:
        """Forget the last stamp (any stamp is accepted next)."""
        self.last_t = None

    def _indices(self, names: tuple[str, ...]) -> np.ndarray:
        """Positions in ``names`` of :attr:`joint_names` (cached per name list)."""
        indices = self._index_cache.get(names)
        if indices is not None:
            return indices
        position = {}
        for i, name in enumerate(names):
            if name in position:
                raise SampleRejected("duplicate_joint", f"joint {name!r} appears twice")
            position[name] = i
        unknown = [name for name in names if name not in self._model_joint_names]
        if unknown and not self.ignore_unknown:
            raise SampleRejected("unknown_joint", f"joint(s) {unknown} are not in the robot model")
        missing = [name for name in self.joint_names if name not in position]
        if missing:
            raise SampleRejected("missing_joint", f"joint state lacks joint(s) {missing} (needed: "
                                 f"{list(self.joint_names)})")
        indices = np.array([position[name] for name in self.joint_names], dtype=int)
        if len(self._index_cache) < 16:
            self._index_cache[names] = indices
        return indices

    def validate(self, t: float, names: Sequence[str], q: np.ndarray,
                 dq: np.ndarray | None = None, effort: np.ndarray | None = None
                 ) -> JointStateSample:
        """The joint state ``(t (s), names, q, dq, effort)`` (``dq``, ``effort``: ``None`` or
        empty when absent) reordered to :attr:`joint_names`; records ``t`` as the last stamp.

        Raises :class:`SampleRejected` with reason ``non_finite``, ``length_mismatch``,
        ``duplicate_joint``, ``unknown_joint``, ``missing_joint``, ``missing_effort``,
        ``duplicate_stamp`` or ``out_of_order``.
        """
        t = float(t)
        names = tuple(names)
        q = np.asarray(q, dtype=float).reshape(-1)
        dq, effort = (None if v is None or len(v) == 0 else np.asarray(v, dtype=float).reshape(-1)
                      for v in (dq, effort))
        sizes = [v.size for v in (q, dq, effort) if v is not None]
        if any(size != len(names) for size in sizes):
            raise SampleRejected("length_mismatch", f"{len(names)} names, {q.size} positions, "
                                 f"{0 if dq is None else dq.size} velocities, "
                                 f"{0 if effort is None else effort.size} efforts")
        indices = self._indices(names)
        if self.need_effort and effort is None:
            raise SampleRejected("missing_effort", f"joint state at {t:.6f} s has no efforts")
        q = q[indices]
        dq = dq[indices] if dq is not None and self.use_velocity else None
        effort = effort[indices] if effort is not None and self.need_effort else None
        if not all(np.isfinite(v).all() for v in (q, dq, effort) if v is not None):
            raise SampleRejected("non_finite", f"joint state at {t:.6f} s has NaN or Inf values")
        check_stamp(t, self.last_t, "joint state")
        self.last_t = t
        return JointStateSample(t, q, dq, effort)


@dataclass(frozen=True)
class Estimate:
    """A fully physically consistent estimate of the payload beyond the sensor.

    ``theta`` (10,) about and in the sensor frame; ``sensor_offset`` (6,) (N, N m; when not
    estimated: the tared offset, zeros without a tare); ``covariance`` (10, 10) of ``theta`` (the offset marginalised): the sandwich with
    each wrench channel's residual variance, on the identifiable subspace, projected onto the
    tangent of active consistency constraints
    (:func:`~inertia_id_ros.core.covariance.parameter_covariance`);
    ``condition_number`` of the column-scaled regressor (excitation); ``min_pseudo_inertia_eig``
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
    condition_number: float = float("nan")

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
    """Counters of an online estimator (a snapshot)."""

    received: dict[str, int]
    """Samples offered per input (``"joint_state"``, ``"wrench"``)."""
    processed: dict[str, int]
    """Per input: samples accepted (joint states for a payload) or turned into window rows."""
    dropped: dict[str, int]
    """Rejected or dropped samples per reason."""
    pending: int
    """Samples waiting to be processed: wrenches waiting for joint states (payload), joint states
    waiting for the filter's look-ahead (links)."""
    window_samples: int
    clock_jumps: int = 0
    """Clock resets after which the estimator started afresh (see ``clock_jump_sec``)."""


class OnlineEstimator:
    """What the online estimators share: ``config`` (an :class:`OnlineEstimatorConfig`), the
    sliding ``window`` of samples and the lock guarding it."""

    config: OnlineEstimatorConfig
    window: SlidingWindow
    received: Counter[str]
    processed: Counter[str]
    dropped: Counter[str]
    clock_jumps: int
    _lock: threading.Lock

    _generation: int

    @property
    def generation(self) -> int:
        """Increments whenever the estimator forgets its samples (restart, reset, clock reset):
        a result computed before belongs to the previous samples."""
        return self._generation

    def configure_solver(self, method: str, solver_options: dict[str, Any]) -> None:
        """Set the default ``method`` and its ``solver_options`` together, between solves
        (thread-safe: a solve reads both at once)."""
        with self._lock:
            self.config.method, self.config.solver_options = method, dict(solver_options)

    def _solver_settings(self, method: str | None) -> tuple[str, dict[str, Any]]:
        """(method, options) of a solve (lock held): ``config.solver_options`` belong to
        ``config.method``; another method gets its own defaults."""
        config = self.config
        if method is None or method == config.method:
            return config.method, dict(config.solver_options)
        return method, {}

    def _samples_to_solve(self, duration: float, what: str) -> tuple[int, float, float]:
        """(count, first stamp, last stamp) of the newest ``duration`` s of the window (lock
        held); raises :class:`EstimateUnavailable` (``too_few_samples``, naming ``what`` the
        samples are) below ``config.min_samples``."""
        n_samples = self.window.count(duration)
        if n_samples < self.config.min_samples:
            raise EstimateUnavailable("too_few_samples", f"{n_samples} {what} in the window, "
                                      f"need {self.config.min_samples}")
        t, _, _ = self.window.samples(duration, copy=False)
        return n_samples, float(t[0]), float(t[-1])

    def _clear_samples(self) -> None:
        """Forget the buffered samples, the window and the previous solution (lock held)."""
        raise NotImplementedError

    def restart(self) -> None:
        """Forget the samples and the previous solution, keep the counters (e.g. a new
        payload; a payload estimator's tare stays: it describes the sensor)."""
        with self._lock:
            self._clear_samples()

    def reset(self) -> None:
        """Forget all samples, the previous solution and the counters (a tare stays)."""
        with self._lock:
            self._clear_samples()
            self.received.clear()
            self.processed.clear()
            self.dropped.clear()
            self.clock_jumps = 0

    def resize_window(self, window_sec: float, window_capacity: int | None = None) -> None:
        """Change the window's length ``window_sec`` (s, > 0) and ``window_capacity`` (samples;
        default: unchanged) at run time, between solves (thread-safe): the newest samples that
        fit stay. Raises ValueError for invalid values."""
        with self._lock:
            capacity = self.config.window_capacity if window_capacity is None else window_capacity
            self.window.resize(window_sec, capacity)
            self.config.window_sec = self.window.window_sec
            self.config.window_capacity = self.window.capacity


class PayloadEstimator(OnlineEstimator):
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
        self._joint_input = JointStateValidator(kinematics.joint_names, kinematics.model.names[1:],
                                                config.ignore_unknown_joints,
                                                config.use_measured_velocity)
        self._expected_frame = config.wrench_frame_id or kinematics.sensor_frame
        self._lock = threading.Lock()
        self._process_lock = threading.Lock()
        self._joints = SampleBuffer(config.joint_buffer_capacity, t=(), q=(n,), dq=(n,),
                                    has_dq=())
        self._wrenches = SampleBuffer(config.max_pending_wrenches, t=(), f=(6,))
        self.window = SlidingWindow(config.window_sec, self._n_params, config.window_capacity)
        self.received: Counter[str] = Counter()
        self.processed: Counter[str] = Counter()
        self.dropped: Counter[str] = Counter()
        self._last_wrench_t: float | None = None
        self._last_solution = None
        self._generation = 0
        self.clock_jumps = 0
        """Clock resets seen since the last :meth:`reset` (see ``clock_jump_sec``)."""
        self._joint_clock = ClockResetDetector(config.clock_jump_sec)
        self._wrench_clock = ClockResetDetector(config.clock_jump_sec)
        self._tare: Tare | None = None

    # ---- input -----------------------------------------------------------------------------

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
            if self._joint_clock.is_reset(float(t), self._joint_input.last_t):
                self._restart_after_clock_reset(float(t))
            try:
                sample = self._joint_input.validate(t, names, q, dq)
            except SampleRejected as rejected:
                self.dropped[rejected.reason] += 1
                raise
            self._joints.append(t=sample.t, q=sample.q, has_dq=sample.dq is not None,
                                dq=0.0 if sample.dq is None else sample.dq)
            self.processed[JOINT_STATE] += 1

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

    def _validate_wrench(self, t: float, wrench: np.ndarray,
                         frame_id: str | None) -> tuple[float, np.ndarray]:
        t = float(t)
        wrench = np.asarray(wrench, dtype=float).reshape(-1)
        if wrench.size != 6:
            raise SampleRejected("length_mismatch", f"wrench has {wrench.size} values, need 6")
        if not np.isfinite(wrench).all():
            raise SampleRejected("non_finite", f"wrench at {t:.6f} s has NaN or Inf values")
        limits = self.config.wrench_limits
        if limits is not None and np.any(saturated := np.abs(wrench) >= limits):
            channels = ", ".join(f"{WRENCH_CHANNEL_NAMES[c]} = {wrench[c]:.6g} (limit {limits[c]:g})"
                                 for c in np.flatnonzero(saturated))
            raise SampleRejected("saturated", f"wrench at {t:.6f} s saturates {channels}")
        if (self.config.check_wrench_frame and frame_id is not None
                and frame_id != self._expected_frame):
            raise SampleRejected("wrong_frame", f"wrench in frame {frame_id!r}, expected "
                                 f"{self._expected_frame!r}")
        check_stamp(t, self._last_wrench_t, "wrench")
        return t, wrench

    # ---- processing ------------------------------------------------------------------------

    def process(self, on_rows: RowsCallback | None = None) -> int:
        """Move the wrenches whose stamps the joint states now cover into the window; returns how
        many rows were added. Wrenches that can never be covered are dropped (reasons ``gap``: a
        joint-state gap longer than ``max_joint_gap`` within ``filter_half_width`` of the stamp;
        ``no_joint_state``: before the oldest buffered joint state; ``sparse``: too few joint
        states in the fit window). ``on_rows(t (N,), Y (N, 6, p), f (N, 6))`` sees each batch of
        rows added, under the lock (views valid during the call; e.g. a change detector)."""
        added = 0
        with self._process_lock:
            while True:
                with self._lock:
                    rows, consumed = self._process_chunk(on_rows)
                added += rows
                if consumed < _PROCESS_CHUNK:
                    return added

    def _process_chunk(self, on_rows: RowsCallback | None) -> tuple[int, int]:
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
            joints = self._joints
            q, dq, ddq = joint_states_at_mixed(joints["t"], joints["q"], joints["dq"],
                                               joints["has_dq"], t_ready,
                                               config.filter_half_width, config.filter_order)
            V, A = self.kinematics.compute_batch(q, dq, ddq)
            Y = payload_regressor_batch(V, A, config.estimate_offset)
            f = self._wrenches["f"][ready]
            overflow = self.window.extend(t_ready, Y, f)
            if overflow:
                self.dropped["window_overflow"] += overflow
            if on_rows is not None:
                on_rows(t_ready, Y, f)
            self.processed[WRENCH] += ready.size
        self._wrenches.drop_front(consumed)
        return int(ready.size), consumed

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
            n_samples, t_first, t_last = self._samples_to_solve(duration, "wrench samples")
            spread = self._orientation_spread_deg(duration)
            identifiable = bool(spread[1] >= config.offset_min_tilt_deg)
            tare = self._tare
            tare_known = (tare is not None and float(np.max(tare.offset_std_at(t_last)[:3]))
                          <= config.tare_max_force_std)
            if config.estimate_offset and not identifiable and not tare_known:
                raise EstimateUnavailable("offset_not_identifiable", _unidentifiable_offset_message(
                    t_last - t_first, spread, config.offset_min_tilt_deg))
            _, Y, f = self.window.samples(duration, copy=False)
            if tare is not None and not config.estimate_offset:
                f = f - tare.offset  # the tare is the known offset
            channels = ChannelNormalEquations.from_samples(Y, f)
            gram, moment, yty, n_rows = channels.total()
            if initvals is None and config.warm_start:
                initvals = self._last_solution
            generation = self._generation
        try:
            problem = Problem(gram=gram, moment=moment, yty=yty, n_rows=n_rows, n_bodies=1)
            if tare is not None and config.estimate_offset:
                problem = with_tare(problem, tare, t_last)  # a prior on the offset, fading
            solution = solve_problem(problem, method, initvals=initvals, **options)
        except (ProblemError, SolverError, TypeError, ValueError) as e:  # bad option values too
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
                  else np.zeros(N_OFFSET_PARAMS) if tare is None else tare.offset.copy())
        covariance = parameter_covariance(channels, np.asarray(solution.x),
                                          constrained=method != "ols")
        return Estimate(theta=theta, sensor_offset=offset, covariance=covariance.theta(),
                        min_pseudo_inertia_eig=report.min_pseudo_inertia_eig,
                        residual_rms=float(solution.residual_rms), n_samples=n_samples,
                        method=method, solve_time=float(solution.solve_time), t_first=t_first,
                        t_last=t_last, offset_identifiable=identifiable,
                        orientation_spread_deg=spread, message=message,
                        condition_number=covariance.condition_number)

    def residual_sigma(self, estimate: Estimate, generation: int) -> np.ndarray | None:
        """:func:`~inertia_id_ros.online.change_detection.residual_sigma` (6,) (N, N m) of the window's
        samples from ``estimate.t_first`` on against ``estimate``, or ``None`` if the estimator
        forgot its samples since ``generation`` (read before the solve) or holds none."""
        with self._lock:
            if generation != self._generation:
                return None
            t, Y, f = self.window.samples(copy=False)
            first = int(np.searchsorted(t, estimate.t_first, side="left"))
            if first == t.size:
                return None
            return residual_sigma(Y[first:], f[first:], estimate.theta, estimate.sensor_offset)

    # ---- tare ------------------------------------------------------------------------------

    @property
    def tare(self) -> Tare | None:
        """The F/T offset tare every solve uses (:mod:`inertia_id_ros.online.tare`); ``None``: none."""
        return self._tare

    def set_tare(self, duration: float = 1.0, theta_known: np.ndarray | None = None) -> Tare:
        """Tare the F/T offset from the newest ``duration`` s (> 0) of wrenches (the buffered
        ones are processed first), recorded with nothing attached beyond the sensor
        (``theta_known=None``) or with the known payload ``theta_known`` (10,) (about the sensor
        frame). Replaces the previous tare. With nothing attached the window restarts: its
        older samples belong to the payload that was removed.

        Raises :class:`EstimateUnavailable` (``too_few_samples``) when the window holds less
        than half of ``duration``, ValueError for an invalid ``duration`` or ``theta_known``.
        """
        if not (duration > 0 and np.isfinite(duration)):
            raise ValueError(f"the tare duration must be positive (s), got {duration}")
        self.process()
        with self._lock:
            t, Y, f = self.window.samples(duration, copy=False)
            span = float(t[-1] - t[0]) if t.size else 0.0
            if t.size < 2 or span < 0.5 * duration:
                raise EstimateUnavailable("too_few_samples", f"the window holds {t.size} wrenches "
                                          f"over {span:.2f} s for a {duration:g} s tare: keep the "
                                          "payload removed (or the known one attached) that "
                                          "long with the inputs streaming, then tare")
            tare = tare_offset(t, f, Y, theta_known)
            self._tare = tare
            if theta_known is None:
                self._clear_samples()
            return tare

    def clear_tare(self) -> None:
        """Forget the tare."""
        with self._lock:
            self._tare = None

    # ---- state -----------------------------------------------------------------------------

    def _restart_after_clock_reset(self, t: float) -> None:
        """Forget the samples of the old time base, whose newest stamp the sample stamped ``t``
        (s) of the new one follows (lock held); the counters are kept, and so is the tare, its
        age carried over into the new time base."""
        if self._tare is not None:
            newest = max(v for v in (self._last_wrench_t, self._joint_input.last_t, self._tare.t)
                         if v is not None)
            self._tare = dataclasses.replace(self._tare, t=t - (newest - self._tare.t))
        self._clear_samples()
        self.clock_jumps += 1

    def _clear_samples(self) -> None:
        """Forget the buffered samples, the window and the previous solution (lock held)."""
        self._joints.clear()
        self._wrenches.clear()
        self.window.clear()
        self._joint_input.reset()
        self._last_wrench_t = None
        self._last_solution = None
        self._generation += 1


    def stats(self) -> EstimatorStats:
        """Snapshot of the counters."""
        with self._lock:
            return EstimatorStats(received=dict(self.received), processed=dict(self.processed),
                                  dropped=dict(self.dropped), pending=len(self._wrenches),
                                  clock_jumps=self.clock_jumps,
                                  window_samples=len(self.window))


def _unidentifiable_offset_message(duration: float, spread: np.ndarray,
                                   min_tilt: float) -> str:
    return (f"the F/T sensor offset cannot be told apart from the payload's weight: over the last "
            f"{duration:.1f} s the sensor's orientation with respect to gravity varied by "
            f"{spread[0]:.1f} and {spread[1]:.1f} deg rms in its two main directions, and it must "
            f"vary by at least {min_tilt:.1f} deg in both; tilt the sensor about two different "
            "horizontal axes, or calibrate the offset and set estimate_offset=False")
