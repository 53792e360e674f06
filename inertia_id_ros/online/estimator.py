"""The online estimators' shared core: buffers, counters, clock, the coverage loop, the window.

:class:`OnlineEstimator` is what :class:`~inertia_id_ros.online.payload_estimator.PayloadEstimator`
(a payload from an F/T sensor) and :class:`~inertia_id_ros.online.link_estimator.LinkEstimator`
(a chain's links from joint torques) share; they add only what differs: their window (a
:class:`~inertia_id_ros.online.window.Window`), which samples become rows
(:meth:`OnlineEstimator._pending_stamps`, :meth:`~OnlineEstimator._take_samples`), the rows
themselves (:meth:`~OnlineEstimator._rows`) and the problem they solve (through
:mod:`~inertia_id_ros.online.solving`).

**Locking rule** (one, for every estimator): ``_lock`` guards every piece of mutable state (the
buffers, the window, the counters, the previous solution, the generation) and is held only to
read or write it, never while rows are computed or a problem is solved. Heavy work runs on
copies taken under the lock; its result is written back under the lock only if the
:attr:`~OnlineEstimator.generation` is still the one it was computed for (a restart, reset or
clock reset in between makes it stale). ``_process_lock`` keeps :meth:`~OnlineEstimator.process`
calls one at a time. So inputs may be added from one thread (ROS callbacks) while another
processes and solves.
"""

from __future__ import annotations

import abc
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypedDict, TypeVar

import numpy as np

from inertia_id_ros.chain.ft_calibration import SensorCalibration
from inertia_id_ros.core.filtering import (
    COVERAGE_OK,
    COVERAGE_PENDING,
    check_coverage,
    joint_states_at_mixed,
)
from inertia_id_ros.core.weighting import WEIGHTINGS
from inertia_id_ros.errors import EstimateUnavailable, SampleRejected
from inertia_id_ros.online.ft_calibrator import OnlineFTCalibrator
from inertia_id_ros.online.inputs import JOINT_STATE, ClockResetDetector, JointStateValidator
from inertia_id_ros.online.window import SampleBuffer, Window
from inertia_id_ros.solvers import Solution

PROCESS_CHUNK = 500
"""Samples turned into rows per batch by :meth:`OnlineEstimator.process` (bounds the time the
lock is held and the memory of one batch)."""

RowsCallback = Callable[[np.ndarray, np.ndarray, np.ndarray], None]
"""``on_rows(t (N,), Y (N, r, p), y (N, r))``: regressor rows just added to a window (called
under the estimator's lock; the arrays are valid during the call)."""

T = TypeVar("T")


class WindowCapacities(TypedDict):
    """The buffer sizes of :func:`window_capacities` (samples), as config fields."""

    window_capacity: int
    joint_buffer_capacity: int


def window_capacities(window_sec: float, max_input_rate_hz: float) -> WindowCapacities:
    """Buffer sizes for a window of ``window_sec`` (s) of inputs arriving at up to
    ``max_input_rate_hz`` (Hz): ``window_capacity`` 1.1 x window_sec x rate samples (at least
    1000) and ``joint_buffer_capacity`` a tenth of it (at least 10000)."""
    samples = int(1.1 * window_sec * max_input_rate_hz)
    return {
        "window_capacity": max(samples, 1000),
        "joint_buffer_capacity": max(samples // 10, 10000),
    }


@dataclass
class OnlineEstimatorConfig:
    """Settings shared by the online estimators: window, joint-state filter, solver (SI units;
    times in s). A "sample" is a wrench (payload) or a joint state (links)."""

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
    instead of dropping every later sample (s; see
    :class:`~inertia_id_ros.online.inputs.ClockResetDetector`)."""
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
    """Options passed to ``solvers.solve`` (they belong to ``method``)."""
    weighting: str = "none"
    """``"none"``: unweighted least squares; ``"channel"``: each channel (wrench component, joint
    torque) weighted by its inverse residual variance over the window, iterated at every solve
    (:mod:`inertia_id_ros.core.weighting`) from the previous solve's weights when warm-started;
    the covariance follows the weights."""

    @property
    def lag_sec(self) -> float:
        """Delay of the estimates behind the inputs (s): a sample is turned into a row once the
        joint states reach ``filter_half_width`` past its stamp, and every signal of the row
        (positions, velocities, accelerations from the centred fit; the wrench or efforts at that
        stamp) belongs to that same stamp, so all are delayed alike and none against another."""
        return self.filter_half_width

    def __post_init__(self) -> None:
        if self.weighting not in WEIGHTINGS:
            raise self._invalid("weighting", f"must be one of {WEIGHTINGS}")
        self._check_positive("window_sec", "filter_half_width", "max_joint_gap")
        if self.filter_order < 2:
            raise self._invalid("filter_order", "must be >= 2")
        self._check_at_least_one("min_samples", "window_capacity", "joint_buffer_capacity")

    def check_method(self, method: str) -> None:
        """Raise ValueError (saying what to give) if ``method`` cannot solve with these settings;
        any method can, unless a kind of estimator says otherwise."""

    def _invalid(self, name: str, requirement: str) -> ValueError:
        return ValueError(
            f"{type(self).__name__}.{name} {requirement}, got {getattr(self, name)!r}"
        )

    def _check_positive(self, *names: str) -> None:
        for name in names:
            if not getattr(self, name) > 0:
                raise self._invalid(name, "must be positive")

    def _check_at_least_one(self, *names: str) -> None:
        for name in names:
            if getattr(self, name) < 1:
                raise self._invalid(name, "must be >= 1")


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


@dataclass(frozen=True)
class SampleBatch:
    """Samples ready to become rows: stamps ``t`` (N,) (s), the joints' positions, velocities and
    accelerations ``q``, ``dq``, ``ddq`` (N, n) at those stamps, ``measured`` (N, ...) what each
    sample measured (wrenches (N, 6), efforts (N, n)), and the ``generation`` they belong to."""

    t: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray
    measured: np.ndarray
    generation: int


ConfigT = TypeVar("ConfigT", bound=OnlineEstimatorConfig)
WindowT = TypeVar("WindowT", bound=Window)


class OnlineEstimator(abc.ABC, Generic[ConfigT, WindowT]):
    """Joint states (and a subclass's other inputs) in, physically consistent estimates out.

    Owns the lock (see the module's locking rule), the joint-state buffer and validator, the
    ``window`` of regressor rows (a subclass's :class:`~inertia_id_ros.online.window.Window`),
    the counters (``received``, ``processed``, ``dropped`` by reason, ``clock_jumps``), the
    clock-reset detection and the :attr:`generation`. Subclasses say which samples become rows
    and how.
    """

    sample_kind: str
    """Input kind of the window's samples (``"wrench"``, ``"joint_state"``)."""
    sample_name: str
    """What the window's samples are, plural, for messages (``"wrench samples"``)."""

    def __init__(self, config: ConfigT, joint_input: JointStateValidator, window: WindowT) -> None:
        self.config = config
        self._joint_input = joint_input
        n = len(joint_input.joint_names)
        effort = {"effort": (n,)} if joint_input.need_effort else {}
        self._joints = SampleBuffer(
            config.joint_buffer_capacity, t=(), q=(n,), dq=(n,), has_dq=(), **effort
        )
        self.window = window
        self._lock = threading.Lock()
        self._process_lock = threading.Lock()
        self.received: Counter[str] = Counter()
        self.processed: Counter[str] = Counter()
        self.dropped: Counter[str] = Counter()
        self.clock_jumps = 0
        """Clock resets seen since the last :meth:`reset` (see ``clock_jump_sec``)."""
        self._joint_clock = ClockResetDetector(config.clock_jump_sec)
        self._last_solution: Solution | None = None
        self._last_weights: np.ndarray | None = None
        """The channel weights (C,) the last kept solution was weighted with (``None``:
        unweighted): a weighted solve warm-started from that solution starts its iteration
        there (:meth:`_warm_weights`), and usually settles in one fit."""
        self._generation = 0
        self.ft_calibrator: OnlineFTCalibrator | None = None
        """The F/T sensors' online calibration (``None``: off), fed each batch of rows the
        window takes (:meth:`_feed_calibrator`)."""

    # ---- input -----------------------------------------------------------------------------

    def add_joint_state(
        self,
        t: float,
        names: Sequence[str],
        q: np.ndarray,
        dq: np.ndarray | None = None,
        effort: np.ndarray | None = None,
    ) -> None:
        """Buffer a joint state: stamp ``t`` (s), ``names`` with positions ``q`` (rad, m),
        optionally velocities ``dq`` (rad/s, m/s) and efforts ``effort`` (``None`` or empty when
        absent; efforts are kept only by estimators that use them).

        Joints the estimate does not depend on are ignored. Raises
        :class:`~inertia_id_ros.errors.SampleRejected` (counted in :attr:`dropped`) with reason
        ``non_finite``, ``length_mismatch``, ``duplicate_joint``, ``unknown_joint`` (unless
        ``ignore_unknown_joints``), ``missing_joint``, ``missing_effort`` (estimators that need
        efforts), ``duplicate_stamp`` or ``out_of_order``.
        """
        with self._lock:
            self.received[JOINT_STATE] += 1
            if self._joint_clock.is_reset(float(t), self._joint_input.last_t):
                self._restart_after_clock_reset(float(t))
            try:
                sample = self._joint_input.validate(t, names, q, dq, effort)
            except SampleRejected as rejected:
                self.dropped[rejected.reason] += 1
                raise
            self._joint_accepted(np.array([sample.t]))
            values = {"effort": sample.effort} if sample.effort is not None else {}
            self._joints.append(
                t=sample.t,
                q=sample.q,
                has_dq=sample.dq is not None,
                dq=0.0 if sample.dq is None else sample.dq,
                **values,
            )

    def add_joint_states(
        self,
        t: np.ndarray,
        names: Sequence[str],
        q: np.ndarray,
        dq: np.ndarray | None = None,
        effort: np.ndarray | None = None,
    ) -> list[SampleRejected]:
        """Buffer ``N`` joint states that list the same joints ``names`` (m,): stamps ``t``
        (N,) (s), positions ``q`` (N, m), velocities ``dq`` and efforts ``effort`` (N, m) or
        ``None``. The same checks, counters and result as :meth:`add_joint_state` for each in
        turn (valid batches take a vectorised path); returns the rejections, in order."""
        t = np.asarray(t, dtype=float).reshape(-1)
        positions, velocities, efforts = (
            None if v is None or np.size(v) == 0 else np.asarray(v, dtype=float)
            for v in (q, dq, effort)
        )
        with self._lock:
            if self._append_joint_batch(t, tuple(names), positions, velocities, efforts):
                return []
        rejected = []
        for i in range(t.size):
            try:
                self.add_joint_state(
                    t[i],
                    names,
                    positions[i] if positions is not None else np.zeros(0),
                    None if velocities is None else velocities[i],
                    None if efforts is None else efforts[i],
                )
            except SampleRejected as why:
                rejected.append(why)
        return rejected

    def _append_joint_batch(
        self,
        t: np.ndarray,
        names: tuple[str, ...],
        q: np.ndarray | None,
        dq: np.ndarray | None,
        effort: np.ndarray | None,
    ) -> bool:
        """Buffer the batch at once if every sample passes every check (lock held); ``False``
        (nothing done) otherwise."""
        validator = self._joint_input
        n, m = t.size, len(names)
        if n == 0 or q is None or any(v is not None and v.shape != (n, m) for v in (q, dq, effort)):
            return False
        if validator.need_effort and effort is None:
            return False
        last = validator.last_t
        if not (np.isfinite(t).all() and np.all(np.diff(t) > 0) and (last is None or t[0] > last)):
            return False
        try:
            indices = validator._indices(names)
        except SampleRejected:
            return False
        q = q[:, indices]
        dq = dq[:, indices] if dq is not None and validator.use_velocity else None
        effort = effort[:, indices] if effort is not None and validator.need_effort else None
        if not all(np.isfinite(v).all() for v in (q, dq, effort) if v is not None):
            return False
        self.received[JOINT_STATE] += n
        self._joint_accepted(t)
        values = {"effort": effort} if effort is not None else {}
        self._joints.extend(
            t=t,
            q=q,
            has_dq=np.full(n, dq is not None),
            dq=np.zeros_like(q) if dq is None else dq,
            **values,
        )
        validator.last_t = float(t[-1])
        self._joint_clock.in_step()
        return True

    def _joint_accepted(self, t: np.ndarray) -> None:
        """Valid joint states stamped ``t`` (k,) (s) are about to be buffered (lock held): a
        subclass may count them, check its buffer's overflow or note the stamps."""

    # ---- processing ------------------------------------------------------------------------

    def process(self, on_rows: RowsCallback | None = None) -> int:
        """Turn the buffered samples whose stamps the joint states now cover (the filter's
        ``filter_half_width`` on both sides) into window rows; returns how many samples were
        added. Samples that can never be covered are dropped (reasons ``gap``: a joint-state gap
        longer than ``max_joint_gap`` within ``filter_half_width`` of the stamp;
        ``no_joint_state``: before the oldest buffered joint state; ``sparse``: too few joint
        states in the fit window). ``on_rows(t, Y, y)`` sees each batch of rows added. Takes
        about the samples pending when called: those another thread adds meanwhile wait for the
        next call, so that a call ends while the inputs keep coming."""
        added = 0
        with self._process_lock:
            with self._lock:
                budget = self._pending_count()
            while True:
                with self._lock:
                    batch, consumed = self._next_batch()
                if batch is not None and batch.t.size:
                    Y, y = self._rows(batch)  # outside the lock
                    with self._lock:
                        if batch.generation == self._generation:
                            overflow = self.window.extend(batch.t, Y, y)
                            if overflow:
                                self.dropped["window_overflow"] += overflow
                            self.processed[self.sample_kind] += batch.t.size
                            if self.ft_calibrator is not None:
                                self._feed_calibrator(self.ft_calibrator, batch, Y, y)
                            if on_rows is not None:
                                on_rows(batch.t, Y, y)
                            added += batch.t.size
                budget -= consumed
                if consumed < PROCESS_CHUNK or budget <= 0:
                    return added

    def _next_batch(self) -> tuple[SampleBatch | None, int]:
        """The next up to :data:`PROCESS_CHUNK` pending samples that can be decided (lock held):
        the ready ones with their joint states, and how many were consumed (ready or dropped)."""
        config = self.config
        t_pending = self._pending_stamps(PROCESS_CHUNK)
        if t_pending.size == 0:
            return None, 0
        joints = self._joints
        status = check_coverage(
            joints["t"],
            t_pending,
            config.filter_half_width,
            config.max_joint_gap,
            config.filter_order,
        )
        waiting = np.flatnonzero(status == COVERAGE_PENDING)
        consumed = int(waiting[0]) if waiting.size else t_pending.size
        if consumed == 0:
            return None, 0
        status = status[:consumed]
        for reason, count in Counter(status[status != COVERAGE_OK]).items():
            self.dropped[reason] += count
        ready = np.flatnonzero(status == COVERAGE_OK)
        t_ready = t_pending[ready].copy()
        q, dq, ddq = joint_states_at_mixed(
            joints["t"],
            joints["q"],
            joints["dq"],
            joints["has_dq"],
            t_ready,
            config.filter_half_width,
            config.filter_order,
        )
        measured = self._take_samples(consumed, ready)
        return SampleBatch(t_ready, q, dq, ddq, measured, self._generation), consumed

    @abc.abstractmethod
    def _pending_stamps(self, limit: int) -> np.ndarray:
        """Stamps (s) of the oldest up to ``limit`` samples waiting to become rows (lock held)."""

    @abc.abstractmethod
    def _take_samples(self, consumed: int, ready: np.ndarray) -> np.ndarray:
        """Consume the first ``consumed`` pending samples (lock held); return a copy of what
        the ``ready`` ones (indices into them) measured."""

    @abc.abstractmethod
    def _rows(self, batch: SampleBatch) -> tuple[np.ndarray, np.ndarray]:
        """Regressor rows ``Y`` (N, r, p) and measurements ``y`` (N, r) of a batch (outside the
        lock: use only the batch and immutable state)."""

    # ---- solving ---------------------------------------------------------------------------

    @abc.abstractmethod
    def solve(
        self, method: str | None = None, duration: float = 0.0, *, until: float | None = None
    ) -> Any:
        """A physically consistent estimate from the newest ``duration`` s of the window (0: all;
        with ``until``, the ``duration`` s up to that stamp, s) with ``method`` (default
        ``config.method``), or :class:`EstimateUnavailable` (``too_few_samples``,
        ``solver_failed``, ``inconsistent``, ...)."""

    @property
    def generation(self) -> int:
        """Increments whenever the estimator forgets its samples (restart, reset, clock reset):
        a result computed before belongs to the previous samples."""
        return self._generation

    def read_window(self, read: Callable[[WindowT], T]) -> T:
        """``read(window)`` under the lock (a consistent view of the window while inputs
        arrive; views of it are valid during the call only): e.g. a tare, or the residual scale
        of an estimate (compare :attr:`generation` inside ``read`` to tell whether the samples
        were forgotten since)."""
        with self._lock:
            return read(self.window)

    def configure_solver(self, method: str, solver_options: Mapping[str, Any]) -> None:
        """Set the default ``method`` and its ``solver_options`` together, between solves
        (thread-safe: a solve reads both at once); ValueError (nothing changed) for a method the
        settings cannot solve with (:meth:`OnlineEstimatorConfig.check_method`)."""
        self.config.check_method(method)
        with self._lock:
            self.config.method, self.config.solver_options = method, dict(solver_options)

    def _solver_settings(self, method: str | None) -> tuple[str, dict[str, Any]]:
        """(method, options) of a solve (lock held): ``config.solver_options`` belong to
        ``config.method``; another method gets its own defaults."""
        config = self.config
        if method is None or method == config.method:
            return config.method, dict(config.solver_options)
        return method, {}

    def _samples_to_solve(
        self, duration: float, until: float | None = None
    ) -> tuple[int, float, float]:
        """(count, first stamp, last stamp) of the newest ``duration`` s of the window (up to the
        stamp ``until`` when given; lock held); raises :class:`EstimateUnavailable`
        (``too_few_samples``) below ``config.min_samples``."""
        n_samples = self.window.count(duration, until)
        if n_samples < self.config.min_samples:
            raise EstimateUnavailable(
                "too_few_samples",
                f"{n_samples} {self.sample_name} in the window, need {self.config.min_samples}",
            )
        t = self.window.stamps(duration, until)
        return n_samples, float(t[0]), float(t[-1])

    def _warm_start(self, initvals: Any) -> Any:
        """The start of a solve (lock held): ``initvals``, else the previous solution when
        ``config.warm_start``."""
        if initvals is None and self.config.warm_start:
            return self._last_solution
        return initvals

    def _warm_weights(self, start: Any) -> np.ndarray | None:
        """The channel weights to start a weighted solve from ``start`` with: the previous
        solution's (when ``start`` is it), else ``None`` (unweighted)."""
        return self._last_weights if start is not None and start is self._last_solution else None

    def _keep_solution(
        self, solution: Solution, generation: int, weights: np.ndarray | None = None
    ) -> bool:
        """Remember ``solution`` (and the channel ``weights`` it was solved with) to warm-start
        the next solve, unless the samples it was solved on have been forgotten since
        ``generation``; returns whether it was kept."""
        with self._lock:
            if generation != self._generation:
                return False
            self._last_solution, self._last_weights = solution, weights
            return True

    # ---- state -----------------------------------------------------------------------------

    def _clear_samples(self) -> None:
        """Forget the buffered samples, the window and the previous solution (lock held)."""
        self._joints.clear()
        self.window.clear()
        self._joint_input.reset()
        self._last_solution = None
        self._clear_pending()
        self._generation += 1

    def _feed_calibrator(
        self, calibrator: OnlineFTCalibrator, batch: SampleBatch, Y: np.ndarray, y: np.ndarray
    ) -> None:
        """Hand ``calibrator`` the readings and references of the rows ``Y``, ``y`` of
        ``batch`` just added (lock held); an estimator without F/T readings has none."""
        raise NotImplementedError(f"{type(self).__name__} has no F/T readings to calibrate")

    def _use_ft_calibrations(self, calibrations: Mapping[str, SensorCalibration]) -> None:
        """Calibrate the readings that come from now on by ``calibrations`` (by frame; lock
        held)."""
        raise NotImplementedError(f"{type(self).__name__} has no F/T readings to calibrate")

    def apply_ft_calibrations(self, calibrations: Mapping[str, SensorCalibration]) -> None:
        """Calibrate the readings from now on by ``calibrations`` (by frame) and restart the
        window (no window mixes calibrations; the counters are kept)."""
        with self._lock:
            self._use_ft_calibrations(calibrations)
            self._clear_samples()

    @abc.abstractmethod
    def _clear_pending(self) -> None:
        """Forget the subclass's own pending samples and solve state (lock held)."""

    def _restart_after_clock_reset(self, t: float) -> None:
        """The sample stamped ``t`` (s) starts a new time base: forget the samples of the old
        one (lock held); the counters are kept."""
        self._clear_samples()
        self.clock_jumps += 1

    def restart(self, since: float | None = None) -> None:
        """Forget the samples and the previous solution, keep the counters. ``since`` (s): forget
        only the window's samples stamped before it, keeping the newer ones and the buffered
        inputs (a new payload from ``since`` on: its samples stay)."""
        with self._lock:
            if since is None:
                self._clear_samples()
            else:
                self.window.drop_before(since)
                self._last_solution = None
                self._generation += 1

    def reset(self) -> None:
        """Forget all samples, the previous solution and the counters."""
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

    def stats(self) -> EstimatorStats:
        """Snapshot of the counters."""
        with self._lock:
            return EstimatorStats(
                received=dict(self.received),
                processed=dict(self.processed),
                dropped=dict(self.dropped),
                pending=self._pending_count(),
                window_samples=len(self.window),
                clock_jumps=self.clock_jumps,
            )

    @abc.abstractmethod
    def _pending_count(self) -> int:
        """Samples waiting to become rows (lock held)."""
