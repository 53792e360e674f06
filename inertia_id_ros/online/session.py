"""An online identification session: the rules of the online loop in one place, without ROS.

The node (:mod:`inertia_id_ros.ros.node`), ``inertia-id replay``
(:mod:`inertia_id_ros.offline.replay`) and the tests all drive a session the same way: inputs go to
``add_*`` as they arrive, and :meth:`Session.update` runs once per period (the node's worker,
replay's bag clock)::

    session = PayloadSession(PayloadEstimator(kinematics, config))
    session.add_joint_state(t, names, q, dq); session.add_wrench(t, wrench, frame_id)  # any thread
    update = session.update()      # Update: .estimate (consistent) or .status, .change, .warnings

Each kind of session, in its own module, knows its estimator, its inputs, its messages and its
diagnostics: :class:`~inertia_id_ros.online.payload_session.PayloadSession` and
:class:`~inertia_id_ros.online.payload_session.PayloadTorqueSession` (a payload, with change
detection and a tare), :class:`~inertia_id_ros.online.link_session.LinkSession`,
:class:`~inertia_id_ros.online.whole_body_session.WholeBodySession`; a session calls on its
estimator only what :class:`SessionEstimator` declares.

One update, in order:

1. **process**: the buffered samples become window rows (the estimator's coverage loop); the
   payload session tests each batch of new rows for a payload change (a CUSUM of their residuals
   against the reference estimate, :mod:`~inertia_id_ros.online.change_detection`) as it is added;
2. **change**: on an alarm the window forgets its samples from before the change's onset (they
   belong to the old payload; those since, and the buffered inputs, are the new one's; a tare
   stays: it describes the sensor) and :attr:`Update.change` reports the event; the detector
   stays disarmed until a new reference;
3. **solve** on the whole window, warm-started; an estimate is always fully physically
   consistent (:func:`~inertia_id_ros.online.solving.check_bodies`), or there is none;
4. **reference**: the payload session re-arms the detector with the new estimate and the
   residual scale of its window, when that window spans ``min_reference_sec`` (renewed at most
   every :data:`~inertia_id_ros.online.payload_session.REFERENCE_PERIOD_SEC` of sample time);
5. **classify**: ``ok``; waiting for data (``too_few_samples``, ``offset_not_identifiable``:
   diagnostics WARN); a failed solve (``solver_failed``, ``inconsistent``, ``exception``: counted
   in :attr:`Session.failed_solves`, diagnostics ERROR). The last estimate stays whatever fails.

A session holds no clock and no threads: ``update`` and ``identify`` run one at a time (a lock),
``add_*`` may come from another thread (the estimator's locking rule).
"""

from __future__ import annotations

import abc
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from inertia_id_ros.chain.ft_calibration import SensorCalibration
from inertia_id_ros.errors import EstimateUnavailable, SampleRejected
from inertia_id_ros.online.change_detection import ChangeEvent
from inertia_id_ros.online.estimator import (
    EstimatorStats,
    OnlineEstimatorConfig,
    RowsCallback,
    window_capacities,
)
from inertia_id_ros.online.ft_calibrator import CalibrationUpdate, OnlineFTCalibrator
from inertia_id_ros.online.solving import SOLVE_FAILURES
from inertia_id_ros.online.window import Window

OK, WARN, ERROR = 0, 1, 2
"""Diagnostic levels (those of ``diagnostic_msgs/DiagnosticStatus``)."""

RATE_INTERVAL_SEC = 5.0
"""Input rates (diagnostics, and the warning above ``max_input_rate_hz``) are averages over this
(s): sustained rates, not bursts."""

PROCESSING_DROPS = {
    "gap": "the joint states have a gap longer than max_joint_gap around these stamps",
    "no_joint_state": "no joint state reaches back to these stamps",
    "sparse": "too few joint states around these stamps for the derivative filter",
    "overflow": "too many samples waited for processing (are joint states late or missing?)",
    "sparse_imu": "too few IMU readings around these stamps for the gyro's derivative (readings "
    "lost or rejected): their rows are dropped",
    "window_overflow": "the inputs arrive faster than max_input_rate_hz, for which the window "
    "was sized: the oldest samples leave it early (raise max_input_rate_hz)",
}
"""Samples the estimators drop after accepting them, with the reason."""

Warning_ = tuple[str, str]
"""``(kind, message)``: something the operator should hear about; a caller rate-limits each
kind (the node: one per ``warning_period_sec``)."""


@dataclass(frozen=True)
class Update:
    """What one :meth:`Session.update` (or :meth:`Session.identify`) gave.

    ``time``: the caller's clock at the update (s; replay: bag time); ``status``: ``"ok"`` or why
    there is no estimate (an :class:`~inertia_id_ros.errors.EstimateUnavailable` reason, or
    ``"exception"``); ``message``: that reason in words, or the estimate's one-line summary;
    ``estimate``: fully physically consistent (``None`` unless ``ok``); ``change``: a payload
    change detected while processing (the window restarted); ``warnings``: ``(kind, message)``
    pairs to log; ``diagnostics``: the estimate's own diagnostic values; ``advice``: what the
    operator should do when the data do not yet determine everything ("" otherwise);
    ``calibrations``: the F/T sensors' online calibrations refitted at this update (those
    applied from now on have ``applied`` set; :mod:`~inertia_id_ros.online.ft_calibrator`).
    """

    time: float
    status: str
    message: str = ""
    estimate: Any = None
    change: ChangeEvent | None = None
    warnings: tuple[Warning_, ...] = ()
    diagnostics: Mapping[str, str] = field(default_factory=dict)
    advice: str = ""
    calibrations: tuple[CalibrationUpdate, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether ``status`` is ``"ok"``."""
        return self.status == "ok"

    @property
    def failed(self) -> bool:
        """Whether a solve failed (not merely waiting for data)."""
        return self.status in SOLVE_FAILURES or self.status == "exception"

    def with_warnings(self, warnings: Sequence[Warning_]) -> Update:
        """This update with ``warnings`` (itself when there are none)."""
        return replace(self, warnings=tuple(warnings)) if warnings else self


@dataclass(frozen=True)
class Diagnostics:
    """The session's state for ``/diagnostics``: ``level`` (:data:`OK`, :data:`WARN`,
    :data:`ERROR`), a plain ``message``, ``values`` (key -> text) and ``warnings`` to log."""

    level: int
    message: str
    values: dict[str, str]
    warnings: tuple[Warning_, ...] = ()


class SolvedEstimate(Protocol):
    """What a session reads of every estimate."""

    @property
    def solve_time(self) -> float:
        """Time the solve took (s)."""


EstimateT = TypeVar("EstimateT", bound=SolvedEstimate)
EstimateT_co = TypeVar("EstimateT_co", covariant=True)


class SessionEstimator(Protocol[EstimateT_co]):
    """What a :class:`Session` calls on its estimator (an
    :class:`~inertia_id_ros.online.estimator.OnlineEstimator`, whose locking rule lets ``add_*``
    come from another thread): inputs, processing, a solve giving ``EstimateT_co``, counters,
    run-time changes."""

    @property
    def sample_name(self) -> str:
        """What the window's samples are, plural, for messages."""

    @property
    def config(self) -> OnlineEstimatorConfig:
        """The estimator's settings (read by the diagnostics)."""

    @property
    def window(self) -> Window:
        """The window of regressor rows."""

    @property
    def dropped(self) -> Mapping[str, int]:
        """Rejected or dropped samples per reason."""

    def add_joint_state(
        self,
        t: float,
        names: Sequence[str],
        q: np.ndarray,
        dq: np.ndarray | None = None,
        effort: np.ndarray | None = None,
    ) -> None:
        """Buffer a joint state; :class:`SampleRejected` (counted in :attr:`dropped`) if not."""

    def add_joint_states(
        self,
        t: np.ndarray,
        names: Sequence[str],
        q: np.ndarray,
        dq: np.ndarray | None = None,
        effort: np.ndarray | None = None,
    ) -> list[SampleRejected]:
        """Buffer joint states listing the same joints; the rejections, in order."""

    @property
    def ft_calibrator(self) -> OnlineFTCalibrator | None:
        """The F/T sensors' online calibration (``None``: off)."""

    def apply_ft_calibrations(self, calibrations: Mapping[str, SensorCalibration]) -> None:
        """Calibrate the readings from now on by ``calibrations`` (by frame); restart the
        window."""

    def process(self, on_rows: RowsCallback | None = None) -> int:
        """Turn the buffered samples into window rows (each batch to ``on_rows``); how many."""

    def solve(
        self, method: str | None = None, duration: float = 0.0, *, until: float | None = None
    ) -> EstimateT_co:
        """A consistent estimate, or :class:`EstimateUnavailable` saying why there is none."""

    def stats(self) -> EstimatorStats:
        """Snapshot of the counters."""

    def reset(self) -> None:
        """Forget all samples, the previous solution and the counters."""

    def configure_solver(self, method: str, solver_options: Mapping[str, Any]) -> None:
        """The default method and its options (ValueError for a method it cannot solve with)."""

    def resize_window(self, window_sec: float, window_capacity: int | None = None) -> None:
        """A new window length (s) and capacity (samples), keeping the newest samples."""


E = TypeVar("E", bound=SessionEstimator[Any])


class Session(abc.ABC, Generic[E, EstimateT]):
    """The online loop over one estimator (``E``, whose estimates are ``EstimateT``; see the
    module docstring). ``max_input_rate_hz``: the input rate the window was sized for (Hz):
    faster inputs are warned about."""

    def __init__(self, estimator: E, max_input_rate_hz: float = 1000.0) -> None:
        self.estimator = estimator
        self.max_input_rate_hz = float(max_input_rate_hz)
        self.last: Update | None = None
        """The latest update or identify call that gave an estimate."""
        self.latest: Update | None = None
        """The latest periodic update."""
        self.failed_solves: Counter[str] = Counter()
        """Periodic solves that failed, by reason (``solver_failed``, ``inconsistent``,
        ``exception``)."""
        self.estimates = 0
        """Periodic updates that gave an estimate."""
        self.timing: dict[str, float] = {}
        """The latest update's cost: ``process_us_per_sample``, ``solve_ms``, ``update_ms``."""
        self._lock = threading.Lock()
        self._drops_reported: dict[str, int] = {}
        self._clock_jumps_reported = 0
        self._rate_counts: tuple[float | None, dict[str, int]] = (None, {})

    # ---- inputs ----------------------------------------------------------------------------

    def add_joint_state(
        self,
        t: float,
        names: Sequence[str],
        q: np.ndarray,
        dq: np.ndarray | None = None,
        effort: np.ndarray | None = None,
    ) -> Warning_ | None:
        """Offer a joint state (see the estimator's ``add_joint_state``): ``None`` when taken,
        else the warning that it was dropped (counted by reason)."""
        try:
            self.estimator.add_joint_state(t, names, q, dq, effort)
        except SampleRejected as rejected:
            return self._dropped(rejected, "joint state")
        return None

    def add_joint_states(
        self,
        t: np.ndarray,
        names: Sequence[str],
        q: np.ndarray,
        dq: np.ndarray | None = None,
        effort: np.ndarray | None = None,
    ) -> list[Warning_]:
        """Offer ``N`` joint states listing the same joints (see the estimator's
        ``add_joint_states``): the warnings of those dropped."""
        return [
            self._dropped(why, "joint state")
            for why in self.estimator.add_joint_states(t, names, q, dq, effort)
        ]

    def _dropped(self, rejected: SampleRejected, what: str) -> Warning_:
        total = self.estimator.dropped[rejected.reason]
        return rejected.reason, (
            f"dropped {what} ({rejected.reason}, {total} so far): {rejected.message}"
        )

    # ---- the loop --------------------------------------------------------------------------

    def update(self, now: float | None = None) -> Update:
        """One periodic update at the caller's time ``now`` (s; default: ``time.time()``):
        process, change detection, solve, classify (see the module docstring). Never raises for
        a failing solve: the :class:`Update` says why."""
        now = time.time() if now is None else float(now)
        with self._lock:
            update = self._solve_update(now, None, 0.0)
            if update.ok:
                self.estimates += 1
            elif update.failed:
                self.failed_solves[update.status] += 1
            self.latest = update
            return update

    def identify(
        self,
        method: str | None = None,
        duration: float = 0.0,
        now: float | None = None,
        until: float | None = None,
    ) -> Update:
        """Solve now on the newest ``duration`` s (0: the whole window), or, with ``until``, on
        the samples stamped in ``[until - duration, until]`` (s; an excitation's interval), with
        ``method`` (default: the configured one; another method uses its default options); the
        same processing as :meth:`update`, without counting into the periodic statistics."""
        now = time.time() if now is None else float(now)
        with self._lock:
            return self._solve_update(now, method or None, max(0.0, float(duration)), until)

    def _solve_update(
        self, now: float, method: str | None, duration: float, until: float | None = None
    ) -> Update:
        """Process, solve and classify (see the module docstring), at the caller's ``now``."""
        start = time.perf_counter()
        warnings: list[Warning_] = []
        change = self._process(warnings)
        calibrations = self._calibrate(change, warnings)
        try:
            estimate = self._solve(method, duration, until)
        except EstimateUnavailable as why:
            update = Update(now, why.reason, why.message, change=change)
        except Exception as error:  # a bug or an unexpected back-end error: never fatal
            update = Update(now, "exception", f"solve failed: {error!r}", change=change)
        else:
            values, advice = self._estimate_diagnostics(estimate)
            update = Update(
                now,
                "ok",
                self._summary(estimate),
                estimate,
                change,
                diagnostics=values,
                advice=advice,
            )
            self.timing["solve_ms"] = 1e3 * float(estimate.solve_time)
        self.timing["update_ms"] = 1e3 * (time.perf_counter() - start)
        if update.status not in ("ok", "too_few_samples"):
            kept = "; the last estimate stays" if update.failed else ""
            warnings.append(
                (update.status, f"no estimate ({update.status}): {update.message}{kept}")
            )
        update = replace(update, calibrations=calibrations).with_warnings(warnings)
        if update.ok:
            self.last = update
        return update

    def _process(self, warnings: list[Warning_]) -> ChangeEvent | None:
        """Step 1-2: the buffered samples into window rows (each batch to
        :meth:`_rows_callback`'s), then the change they showed (:meth:`_take_change`); records
        the cost per sample and the drops to warn about."""
        start = time.perf_counter()
        processed = self.estimator.process(self._rows_callback())
        if processed:
            self.timing["process_us_per_sample"] = 1e6 * (time.perf_counter() - start) / processed
        event = self._take_change(warnings)
        warnings += self._processing_warnings()
        return event

    def _calibrate(
        self, change: ChangeEvent | None, warnings: list[Warning_]
    ) -> tuple[CalibrationUpdate, ...]:
        """The F/T sensors' online calibration (off: none): frozen from a payload change on (its
        reference body is gone), refitted when due, the better ones applied (the window
        restarts; a warning says so)."""
        calibrator = self.estimator.ft_calibrator
        if calibrator is None:
            return ()
        if change is not None and not calibrator.frozen:
            calibrator.frozen = True
            warnings.append(
                (
                    "ft_calibration_frozen",
                    "the payload changed: the F/T calibration estimated online against the "
                    "reference body stops here; the one in use stays applied",
                )
            )
        if calibrator.frozen or not calibrator.due():
            return ()
        updates = tuple(calibrator.refit())
        applied = {u.frame: u.as_applied for u in updates if u.applied}
        if applied:
            self.estimator.apply_ft_calibrations(applied)
            ratios = ", ".join(
                f"{u.frame} {np.mean(u.held_out.ratio):.2f} x" for u in updates if u.applied
            )
            warnings.append(
                (
                    "ft_calibration_applied",
                    f"applied the F/T calibration estimated online ({ratios} the held-out "
                    "error of the one in use); the window restarts",
                )
            )
        return updates

    def _rows_callback(self) -> RowsCallback | None:
        """What sees each batch of rows the estimator adds (``None``: nothing)."""
        return None

    def _take_change(self, warnings: list[Warning_]) -> ChangeEvent | None:
        """The change the processed rows showed, acted on (its warnings added), or ``None``."""
        return None

    def _processing_warnings(self) -> list[Warning_]:
        """What processing dropped since the last report, and the clock jumps."""
        stats = self.estimator.stats()
        warnings = []
        if stats.clock_jumps > self._clock_jumps_reported:
            self._clock_jumps_reported = stats.clock_jumps
            warnings.append(
                (
                    "clock_jump",
                    "the input stamps jumped back by more than "
                    "clock_jump_sec (a driver restart, a looped bag or a simulated time "
                    "reset): the window starts afresh (a tare is kept); the last "
                    "estimate stays",
                )
            )
        for reason, explanation in PROCESSING_DROPS.items():
            total = stats.dropped.get(reason, 0)
            new = total - self._drops_reported.get(reason, 0)
            if new > 0:
                self._drops_reported[reason] = total
                warnings.append(
                    (
                        reason,
                        f"dropped {new} {self.estimator.sample_name} ({reason},"
                        f" {total} so far): {explanation}",
                    )
                )
        return warnings

    def _solve(self, method: str | None, duration: float, until: float | None = None) -> EstimateT:
        """Step 3-4: a consistent estimate, or :class:`EstimateUnavailable` (the estimator's
        solve; a session that keeps a reference adds it)."""
        estimate: EstimateT = self.estimator.solve(method=method, duration=duration, until=until)
        return estimate

    @abc.abstractmethod
    def _summary(self, estimate: EstimateT) -> str:
        """One line about ``estimate`` (the ``identify`` response's message)."""

    @abc.abstractmethod
    def _estimate_diagnostics(self, estimate: EstimateT) -> tuple[dict[str, str], str]:
        """``estimate``'s diagnostic values and the advice to the operator ("" if none)."""

    # ---- run-time changes ------------------------------------------------------------------

    def reset(self) -> None:
        """Forget every sample, the counters and the estimator's previous solution (the last
        estimate stays: ``identify`` answers with it until a new one)."""
        self.estimator.reset()
        self._drops_reported.clear()
        self._clock_jumps_reported = 0

    @property
    def prior_available(self) -> bool:
        """Whether the estimator has a prior (methods such as ``cad_prior`` need one)."""
        return True

    def configure_solver(self, method: str, solver_options: Mapping[str, Any]) -> None:
        """The method and its options, from the next solve on."""
        self.estimator.configure_solver(method, solver_options)

    def resize_window(self, window_sec: float) -> None:
        """A new window length (s), keeping the newest samples; its capacity follows
        (:func:`~inertia_id_ros.online.estimator.window_capacities` at ``max_input_rate_hz``)."""
        capacity = window_capacities(window_sec, self.max_input_rate_hz)["window_capacity"]
        self.estimator.resize_window(window_sec, capacity)

    def pause_change_detection(self, paused: bool) -> None:
        """Stop detecting payload changes (``paused``: while an excitation runs, the payload
        is known not to change, and the estimates from its first seconds are too poor a
        reference), or start again afresh (a new reference). No-op where nothing is detected."""

    # ---- diagnostics -----------------------------------------------------------------------

    def diagnostics(self, now: float | None = None) -> Diagnostics:
        """The state to report, at the monotonic time ``now`` (s; default
        ``time.monotonic()``): level and message from the latest update, counters, timings,
        the estimate's values and the input rates (averaged over :data:`RATE_INTERVAL_SEC`)."""
        now = time.monotonic() if now is None else float(now)
        stats = self.estimator.stats()
        config = self.estimator.config
        latest, last = self.latest, self.last
        if latest is not None and not latest.ok:
            level = ERROR if latest.failed else WARN
            message = f"no estimate ({latest.status}): {latest.message}"
            if latest.failed:
                message += "; the last estimate stays published"
        elif last is not None and last.advice:
            level, message = WARN, last.advice
        elif last is not None:
            level, message = OK, "estimating"
        else:
            level, message = WARN, "waiting for an estimate"
        values: dict[str, object] = {
            "window_samples": stats.window_samples,
            "pending_samples": stats.pending,
            "published": self.estimates,
            "method": config.method,
            "window_sec": f"{config.window_sec:g}",
            "weighting": config.weighting,
            "filter_lag_sec": f"{config.lag_sec:g}",
            **{f"failed_solves.{k}": v for k, v in self.failed_solves.items()},
            **{k: f"{v:.4g}" for k, v in self.timing.items()},
        }
        if last is not None:
            values.update(last.diagnostics)
        calibrator = self.estimator.ft_calibrator
        if calibrator is not None:
            values["ft_calibration.applied"] = calibrator.applied
            values["ft_calibration.frozen"] = calibrator.frozen
            for frame, refit in calibrator.latest.items():
                values[f"ft_calibration.{frame}.held_out_ratio"] = (
                    f"{np.mean(refit.held_out.ratio):.3g}"
                )
        for group in ("received", "processed", "dropped"):
            values.update({f"{group}.{k}": v for k, v in getattr(stats, group).items()})
        warnings = []
        since, counts = self._rate_counts
        if since is None:
            self._rate_counts = (now, dict(stats.received))
        elif now - since >= RATE_INTERVAL_SEC:
            for name, count in stats.received.items():
                rate = (count - counts.get(name, 0)) / (now - since)
                values[f"rate_hz.{name}"] = f"{rate:.1f}"
                if rate > 1.2 * self.max_input_rate_hz:
                    warnings.append(
                        (
                            "input_rate",
                            f"{name} samples arrive at {rate:.0f} Hz, "
                            f"above max_input_rate_hz ({self.max_input_rate_hz:.0f} Hz) "
                            "for which the window was sized: it may hold less than "
                            "window_sec",
                        )
                    )
            self._rate_counts = (now, dict(stats.received))
        return Diagnostics(level, message, {k: str(v) for k, v in values.items()}, tuple(warnings))
