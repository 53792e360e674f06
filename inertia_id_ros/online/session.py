"""An online identification session: the rules of the online loop in one place, without ROS.

The node (:mod:`inertia_id_ros.ros.node`), ``inertia-id replay``
(:mod:`inertia_id_ros.offline.replay`) and the tests all drive a session the same way: inputs go to
``add_*`` as they arrive, and :meth:`Session.update` runs once per period (the node's worker,
replay's bag clock)::

    session = PayloadSession(PayloadEstimator(kinematics, config))
    session.add_joint_state(t, names, q, dq); session.add_wrench(t, wrench, frame_id)  # any thread
    update = session.update()      # Update: .estimate (consistent) or .status, .change, .warnings

One update, in order:

1. **process**: the buffered samples become window rows (the estimator's coverage loop); the
   payload session tests each batch of new rows for a payload change (a CUSUM of their residuals
   against the reference estimate, :mod:`~inertia_id_ros.online.change_detection`) as it is added;
2. **change**: on an alarm the window forgets its samples from before the change's onset (they
   belong to the old payload; those since, and the buffered inputs, are the new one's; a tare
   stays: it describes the sensor) and :attr:`Update.change` reports the event; the detector
   stays disarmed until a new reference;
3. **solve** on the whole window, warm-started; an estimate is always fully physically
   consistent (:func:`~inertia_id_ros.online.estimator.check_bodies`), or there is none;
4. **reference**: the payload session re-arms the detector with the new estimate and the
   residual scale of its window, when that window spans ``min_reference_sec`` (renewed at most
   every :data:`REFERENCE_PERIOD_SEC` of sample time);
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
from typing import Any, Generic, TypeVar

import numpy as np

from inertia_id_ros.chain.actuators import ActuatorConfig
from inertia_id_ros.chain.differentiation import payload_half_width, samples_each_side
from inertia_id_ros.chain.links import LinkModel
from inertia_id_ros.core.base_motion import TILT_CHECK_TOLERANCE, tilt_difference
from inertia_id_ros.core.kinematics import SensorKinematics
from inertia_id_ros.core.whole_body_model import WholeBodyModel
from inertia_id_ros.errors import EstimateUnavailable, SampleRejected
from inertia_id_ros.online.change_detection import (
    ChangeDetectorConfig,
    ChangeEvent,
    PayloadChangeDetector,
)
from inertia_id_ros.online.determination import excitation_report
from inertia_id_ros.online.estimator import SOLVE_FAILURES, OnlineEstimator, window_capacities
from inertia_id_ros.online.link_estimator import LinkEstimate, LinkEstimator, LinkEstimatorConfig
from inertia_id_ros.online.payload_estimator import Estimate, EstimatorConfig, PayloadEstimator
from inertia_id_ros.online.payload_torque_estimator import (
    TORQUE_NOISE_STD_FLOOR,
    PayloadTorqueEstimate,
    PayloadTorqueEstimator,
    PayloadTorqueEstimatorConfig,
)
from inertia_id_ros.online.tare import Tare
from inertia_id_ros.online.whole_body_estimator import (
    WholeBodyEstimate,
    WholeBodyEstimator,
    WholeBodyEstimatorConfig,
)
from inertia_id_ros.options import DEFAULT_PRIOR_WEIGHT, PAYLOAD_TORQUES_MIN_SAMPLES

OK, WARN, ERROR = 0, 1, 2
"""Diagnostic levels (those of ``diagnostic_msgs/DiagnosticStatus``)."""

RATE_INTERVAL_SEC = 5.0
"""Input rates (diagnostics, and the warning above ``max_input_rate_hz``) are averages over this
(s): sustained rates, not bursts."""

REFERENCE_PERIOD_SEC = 1.0
"""The payload-change detector's reference (the estimate and its window's residual scale) is
renewed at most this often (s of sample time): the payload does not change between solves, and
the residual scale costs a pass over the window."""

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
    operator should do when the data do not yet determine everything ("" otherwise).
    """

    time: float
    status: str
    message: str = ""
    estimate: Any = None
    change: ChangeEvent | None = None
    warnings: tuple[Warning_, ...] = ()
    diagnostics: Mapping[str, str] = field(default_factory=dict)
    advice: str = ""

    @property
    def ok(self) -> bool:
        """Whether ``status`` is ``"ok"``."""
        return self.status == "ok"

    @property
    def failed(self) -> bool:
        """Whether a solve failed (not merely waiting for data)."""
        return self.status in SOLVE_FAILURES or self.status == "exception"


@dataclass(frozen=True)
class Diagnostics:
    """The session's state for ``/diagnostics``: ``level`` (:data:`OK`, :data:`WARN`,
    :data:`ERROR`), a plain ``message``, ``values`` (key -> text) and ``warnings`` to log."""

    level: int
    message: str
    values: dict[str, str]
    warnings: tuple[Warning_, ...] = ()


E = TypeVar("E", bound=OnlineEstimator)


class Session(abc.ABC, Generic[E]):
    """The online loop over one estimator (see the module docstring). ``max_input_rate_hz``:
    the input rate the window was sized for (Hz): faster inputs are warned about."""

    mode: str
    """Name of what the session identifies (``"payload"``, ``"payload_torques"``, ``"links"``,
    ``"whole_body"``)."""

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
        start = time.perf_counter()
        warnings: list[Warning_] = []
        change = self._process(warnings)
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
        update = _with_warnings(update, warnings)
        if update.ok:
            self.last = update
        return update

    def _process(self, warnings: list[Warning_]) -> ChangeEvent | None:
        """Step 1-2: the buffered samples into window rows (a payload change restarts the
        window); records the cost per sample and the drops to warn about."""
        start = time.perf_counter()
        processed = self.estimator.process()
        if processed:
            self.timing["process_us_per_sample"] = 1e6 * (time.perf_counter() - start) / processed
        warnings += self._processing_warnings()
        return None

    def _processing_warnings(self) -> list[Warning_]:
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

    def _solve(self, method: str | None, duration: float, until: float | None = None) -> Any:
        """Step 3-4: a consistent estimate, or :class:`EstimateUnavailable` (the estimator's
        solve; a session that keeps a reference adds it)."""
        return self.estimator.solve(method=method, duration=duration, until=until)

    @abc.abstractmethod
    def _summary(self, estimate: Any) -> str:
        """One line about ``estimate`` (the ``identify`` response's message)."""

    @abc.abstractmethod
    def _estimate_diagnostics(self, estimate: Any) -> tuple[dict[str, str], str]:
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
        values = {
            "mode": self.mode,
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


def _with_warnings(update: Update, warnings: list[Warning_]) -> Update:
    return (
        update
        if not warnings
        else Update(
            update.time,
            update.status,
            update.message,
            update.estimate,
            update.change,
            tuple(warnings),
            update.diagnostics,
            update.advice,
        )
    )


def min_reference_sec(window_sec: float) -> float:
    """The change detector's shortest reference span (s) for a window of ``window_sec``: the
    default, or half the window when it is shorter than twice that (or no reference would ever
    arm the detector)."""
    return min(ChangeDetectorConfig.min_reference_sec, 0.5 * window_sec)


PayloadEstimatorT = TypeVar("PayloadEstimatorT", PayloadEstimator, PayloadTorqueEstimator)


class PayloadSessionBase(Session[PayloadEstimatorT]):
    """A rigid payload, from an F/T sensor (:class:`PayloadSession`) or from joint torques
    (:class:`PayloadTorqueSession`): a consistent estimate per update; payload changes detected
    (unless ``detect_changes`` is False, with the CUSUM alarm level ``change_threshold``); the
    offsets (F/T or joint torque) tared on demand (:meth:`tare`)."""

    def __init__(
        self,
        estimator: PayloadEstimatorT,
        max_input_rate_hz: float = 1000.0,
        detect_changes: bool = True,
        change_threshold: float = ChangeDetectorConfig.threshold,
    ) -> None:
        super().__init__(estimator, max_input_rate_hz)
        if not change_threshold > 0.0:
            raise ValueError(f"the payload-change threshold must be > 0, got {change_threshold}")
        self.detector = (
            PayloadChangeDetector(
                ChangeDetectorConfig(
                    threshold=change_threshold,
                    min_reference_sec=min_reference_sec(estimator.config.window_sec),
                    **self._detector_channels(),
                )
            )
            if detect_changes
            else None
        )
        self.changes: list[ChangeEvent] = []
        """Every payload change detected so far."""
        self._detector_lock = threading.Lock()
        self._change: ChangeEvent | None = None
        self._reference_t = -np.inf
        """Stamp of the newest sample of the current reference (s)."""
        self._paused = False
        """Change detection paused (an excitation runs)."""

    def _detector_channels(self) -> dict[str, Any]:
        """The change detector's channel settings (:class:`ChangeDetectorConfig`; the default:
        an F/T sensor's wrench)."""
        return {}

    @property
    def prior_available(self) -> bool:
        """Whether the estimator has the payload's CAD values (``EstimatorConfig.prior``)."""
        return self.estimator.config.prior is not None

    def _on_rows(self, t: np.ndarray, Y: np.ndarray, f: np.ndarray) -> None:
        """Test rows just added (under the estimator's lock) for a payload change."""
        with self._detector_lock:
            if self.detector is not None and self._change is None and not self._paused:
                self._change = self.detector.update(t, Y, f)

    def _process(self, warnings: list[Warning_]) -> ChangeEvent | None:
        start = time.perf_counter()
        processed = self.estimator.process(self._on_rows)
        if processed:
            self.timing["process_us_per_sample"] = 1e6 * (time.perf_counter() - start) / processed
        with self._detector_lock:
            event, self._change = self._change, None
        if event is not None:
            self.estimator.restart(since=event.t_onset)  # the new payload's samples only
            self.changes.append(event)
            warnings.append(("payload_change", f"{event}; restarting the window"))
        warnings += self._processing_warnings()
        return event

    def _solve(self, method: str | None, duration: float, until: float | None = None) -> Estimate:
        generation = self.estimator.generation
        estimate = self.estimator.solve(method=method, duration=duration, until=until)
        if (
            self.detector is not None
            and duration == 0.0
            and until is None
            and (  # whole window
                not self.detector.armed
                or estimate.t_last - self._reference_t >= REFERENCE_PERIOD_SEC
            )
        ):
            sigma = self.estimator.residual_sigma(estimate, generation)
            if sigma is not None:  # None: the samples were forgotten meanwhile (a restart)
                with self._detector_lock:
                    if self.detector.set_reference(
                        estimate.theta,
                        estimate.sensor_offset,
                        sigma,
                        span=estimate.t_last - estimate.t_first,
                    ):
                        self._reference_t = estimate.t_last
        return estimate

    def _estimate_diagnostics(self, estimate: Estimate) -> tuple[dict[str, str], str]:
        excitation = excitation_report(estimate.theta, estimate.covariance)
        tare = self.estimator.tare
        values = {
            "excitation": excitation.message,
            "tare_age_sec": "none" if tare is None else f"{max(estimate.t_last - tare.t, 0.0):.1f}",
            "condition_number": f"{estimate.condition_number:.4g}",
            "min_pseudo_inertia_eig": f"{estimate.min_pseudo_inertia_eig:.4g}",
            **{
                f"relative_std.{name}": f"{value:.3g}"
                for name, value in excitation.relative_std.items()
            },
        }
        return values, "" if excitation.well_excited else excitation.message

    def pause_change_detection(self, paused: bool) -> None:
        """Pause (``True``) or resume change detection; either way the detector restarts."""
        with self._detector_lock:
            self._paused = bool(paused)
        self._forget_change()

    def _forget_change(self) -> None:
        with self._detector_lock:
            if self.detector is not None:
                self.detector.reset()
            self._change = None

    def reset(self) -> None:
        """Forget every sample, the estimates and any detected change."""
        self._forget_change()
        super().reset()

    def resize_window(self, window_sec: float) -> None:
        """Resize the window to ``window_sec`` (s) and the detector's minimum reference duration
        with it."""
        super().resize_window(window_sec)
        with self._detector_lock:
            if self.detector is not None:
                self.detector.config.min_reference_sec = min_reference_sec(window_sec)

    def tare(self, duration: float, theta_known: np.ndarray | None = None) -> Tare:
        """Tare the offsets (F/T, or joint torque) from the newest ``duration`` s of samples,
        with nothing beyond the sensor or frame (``theta_known=None``: the window restarts and
        the detector waits for a new reference) or the known payload ``theta_known`` (10,).
        Raises :class:`~inertia_id_ros.errors.EstimateUnavailable` (too few samples) or
        ValueError."""
        with self._lock:
            warnings: list[Warning_] = []
            self._process(warnings)
            tare = self.estimator.set_tare(duration, theta_known)
            if theta_known is None:
                self._forget_change()
            return tare

    def clear_tare(self) -> None:
        """Forget the tare."""
        self.estimator.clear_tare()


class PayloadSession(PayloadSessionBase[PayloadEstimator]):
    """The payload beyond an F/T sensor: joint states and wrenches in, a consistent
    :class:`~inertia_id_ros.online.payload_estimator.Estimate` per update (the rules of
    :class:`PayloadSessionBase`)."""

    mode = "payload"

    def add_wrench(
        self, t: float, wrench: np.ndarray, frame_id: str | None = None
    ) -> Warning_ | None:
        """Offer a wrench (see ``PayloadEstimator.add_wrench``): ``None`` when taken, else the
        warning that it was dropped."""
        try:
            self.estimator.add_wrench(t, wrench, frame_id)
        except SampleRejected as rejected:
            return self._dropped(rejected, "wrench")
        return None

    def add_wrenches(
        self, t: np.ndarray, wrenches: np.ndarray, frame_ids: Sequence[str | None] | None = None
    ) -> list[Warning_]:
        """Offer ``N`` wrenches (see ``PayloadEstimator.add_wrenches``): the warnings of those
        dropped."""
        return [
            self._dropped(why, "wrench")
            for why in self.estimator.add_wrenches(t, wrenches, frame_ids)
        ]

    def _summary(self, estimate: Estimate) -> str:
        return (
            f"{estimate.method}: m = {estimate.mass:.4f} kg from {estimate.n_samples} "
            f"samples, residual RMS {estimate.residual_rms:.4g}"
        )


class PayloadTorqueSession(PayloadSessionBase[PayloadTorqueEstimator]):
    """The payload at a frame of an arm without an F/T sensor, from its joint torques: joint
    states with efforts in, a consistent
    :class:`~inertia_id_ros.online.payload_torque_estimator.PayloadTorqueEstimate` per update.
    The rules of :class:`PayloadSessionBase` (change detection on the joints' torque residuals, a
    tare of the joints' torque offsets with the payload removed); a payload the data leave
    poorly determined is warned about (kind ``poorly_determined``) and is the diagnostics'
    advice; a derivative filter too narrow for the joint states' rate is warned about too (kind
    ``filter_samples``)."""

    mode = "payload_torques"

    def _detector_channels(self) -> dict[str, Any]:
        n = len(self.estimator.joint_names)
        return {"sigma_floor": np.full(n, TORQUE_NOISE_STD_FLOOR), "measurement": "joint torques"}

    def _solve_update(
        self, now: float, method: str | None, duration: float, until: float | None = None
    ) -> Update:
        update = super()._solve_update(now, method, duration, until)
        if not update.ok:
            return update
        warnings = [("poorly_determined", message) for message in update.estimate.warnings]
        narrow = self._narrow_filter_warning(update.estimate)
        if narrow is not None:
            warnings.append(("filter_samples", narrow))
        return _with_warnings(update, list(update.warnings) + warnings) if warnings else update

    def _narrow_filter_warning(self, estimate: PayloadTorqueEstimate) -> str | None:
        """Why the filter is too narrow for the joint states' rate (fewer than
        :data:`~inertia_id_ros.options.PAYLOAD_TORQUES_MIN_SAMPLES` of them on each side: noisy
        accelerations, and the payload's inertia with them), or ``None``."""
        period = estimate.sample_period
        half_width = self.estimator.config.filter_half_width
        if not period > 0 or samples_each_side(half_width, period) >= PAYLOAD_TORQUES_MIN_SAMPLES:
            return None
        wider = payload_half_width(period)
        return (
            f"the joint states come every {1e3 * period:.1f} ms: the {half_width:g} s "
            "derivative filter (torques_filter_half_width) spans only "
            f"{samples_each_side(half_width, period)} of them on each side, so the "
            "accelerations are noisy and the payload's inertia with them. Set it to "
            f"{wider:g} s (and fit a fit-links link model with --filter-half-width "
            f"{wider:g})."
        )

    def _summary(self, estimate: PayloadTorqueEstimate) -> str:
        return (
            f"{estimate.method}: m = {estimate.mass:.4f} ± {estimate.theta_std[0]:.4f} kg "
            f"from {estimate.n_samples} joint states, residual RMS "
            f"{estimate.residual_rms:.4g} N m"
        )

    def _estimate_diagnostics(self, estimate: PayloadTorqueEstimate) -> tuple[dict[str, str], str]:
        values, advice = super()._estimate_diagnostics(estimate)
        values.update(
            {
                "mass_std": f"{estimate.theta_std[0]:.4g}",
                "identifiable_rank": f"{estimate.rank}/{estimate.n_parameters}",
            }
        )
        return values, " ".join(estimate.warnings) or advice


class LinkSession(Session[LinkEstimator]):
    """A chain's links and joint drives from joint states with efforts: a consistent
    :class:`~inertia_id_ros.online.link_estimator.LinkEstimate` per update, with the
    base-parameter rank and what the data cannot identify."""

    mode = "links"

    def _summary(self, estimate: LinkEstimate) -> str:
        unidentifiable = " ".join(estimate.unidentifiable)
        return (
            f"{estimate.method}: {len(estimate.link_names)} links and "
            f"{len(estimate.drives)} joint drives from {estimate.n_samples} samples, "
            f"residual RMS {estimate.residual_rms:.4g} N m, base-parameter rank "
            f"{estimate.rank}; unidentifiable (the prior decides): "
            f"{unidentifiable or 'none'}"
        )

    def _estimate_diagnostics(self, estimate: LinkEstimate) -> tuple[dict[str, str], str]:
        return {
            "base_parameter_rank": str(estimate.rank),
            "unidentifiable": " ".join(estimate.unidentifiable),
        }, ""


class WholeBodySession(Session[WholeBodyEstimator]):
    """Every link of a floating-base, fixed or suspended robot from joint states, F/T sensors and
    an IMU (optional on a fixed or suspended base): a
    :class:`~inertia_id_ros.online.whole_body_estimator.WholeBodyEstimate` per update (each link
    fully consistent, with its identifiability); a sensor that stops or resumes, and a contact
    sensor that starts reading zero (a foot in the air), are reported."""

    mode = "whole_body"

    def __init__(self, estimator: WholeBodyEstimator, max_input_rate_hz: float = 1000.0) -> None:
        super().__init__(estimator, max_input_rate_hz)
        self._stopped_reported: tuple[str, ...] = ()
        self._zero_reported: tuple[str, ...] = ()

    def add_imu(
        self,
        t: float,
        angular_velocity: np.ndarray,
        linear_acceleration: np.ndarray,
        frame_id: str | None = None,
    ) -> Warning_ | None:
        """Offer an IMU reading (see ``WholeBodyEstimator.add_imu``): ``None`` when taken, else
        the warning that it was dropped."""
        try:
            self.estimator.add_imu(t, angular_velocity, linear_acceleration, frame_id)
        except SampleRejected as rejected:
            return self._dropped(rejected, "IMU reading")
        return None

    def add_wrench(
        self, frame: str, t: float, wrench: np.ndarray, frame_id: str | None = None
    ) -> Warning_ | None:
        """Offer the wrench of the F/T sensor at ``frame`` (see
        ``WholeBodyEstimator.add_wrench``): ``None`` when taken, else the warning."""
        try:
            self.estimator.add_wrench(frame, t, wrench, frame_id)
        except SampleRejected as rejected:
            return self._dropped(rejected, f"wrench of {frame!r}")
        return None

    def _processing_warnings(self) -> list[Warning_]:
        warnings = super()._processing_warnings()
        stopped = self.estimator.stopped_sensors
        if stopped != self._stopped_reported:
            new = [f for f in stopped if f not in self._stopped_reported]
            back = [f for f in self._stopped_reported if f not in stopped]
            if new:
                warnings.append(
                    (
                        "sensor_stopped",
                        f"F/T sensor(s) {new} stopped (no wrench for "
                        f"{self.estimator.config.sensor_timeout_sec:g} s): the rows "
                        "that need their wrenches are dropped",
                    )
                )
            if back:
                warnings.append(("sensor_resumed", f"F/T sensor(s) {back} resumed"))
            self._stopped_reported = stopped
        zero = self.estimator.contacts_reading_zero
        new = [f for f in zero if f not in self._zero_reported]
        if new:
            warnings.append(
                (
                    "contact_zero",
                    f"contact sensor(s) {new} read zero: taken as no "
                    "contact (a foot in the air); were that foot loaded, the sensor "
                    "would be faulty and the base rows wrong",
                )
            )
        self._zero_reported = zero
        return warnings

    def diagnostics(self, now: float | None = None) -> Diagnostics:
        """The shared diagnostics (:meth:`Session.diagnostics`) and the contact sensors reading
        zero: ``contacts_reading_zero`` (frames, now) and ``zero_wrenches.<frame>`` (counts)."""
        diagnostics = super().diagnostics(now)
        estimator = self.estimator
        values = {
            **diagnostics.values,
            "contacts_reading_zero": " ".join(estimator.contacts_reading_zero),
            **{
                f"zero_wrenches.{frame}": str(count)
                for frame, count in estimator.zero_wrenches.items()
            },
        }
        return replace(diagnostics, values=values)

    def _summary(self, estimate: WholeBodyEstimate) -> str:
        counts = Counter(estimate.labels)
        stopped = (
            f"; stopped sensors (rows dropped): {list(estimate.stopped_sensors)}"
            if estimate.stopped_sensors
            else ""
        )
        return (
            f"{estimate.method}: {len(estimate.link_names)} links from "
            f"{estimate.n_samples} samples, residual RMS {estimate.residual_rms:.4g}, "
            f"{estimate.rank} of {estimate.n_params} base parameters; "
            + ", ".join(f"{n} {label}" for label, n in sorted(counts.items()))
            + stopped
        )

    def _estimate_diagnostics(self, estimate: WholeBodyEstimate) -> tuple[dict[str, str], str]:
        counts = Counter(estimate.labels)
        values = {
            "base_parameter_rank": f"{estimate.rank}/{estimate.n_params}",
            "stopped_sensors": " ".join(estimate.stopped_sensors),
            "min_pseudo_inertia_eig": f"{estimate.min_pseudo_inertia_eigs.min():.4g}",
            **{f"links.{label.replace(' ', '_')}": str(n) for label, n in counts.items()},
            **{
                f"noise_sigma.{group}": f"{sigma:.4g}"
                for group, sigma in estimate.noise_sigma.items()
            },
        }
        advice = (
            f"F/T sensor(s) {list(estimate.stopped_sensors)} stopped: their rows are dropped"
            if estimate.stopped_sensors
            else ""
        )
        model, config = self.estimator.model, self.estimator.config
        if estimate.imu_fixed_tilt is not None:
            values["fixed_tilt.imu_deg"] = " ".join(
                f"{a:.2f}" for a in np.degrees(estimate.imu_fixed_tilt)
            )
            apart = tilt_difference(model.fixed_tilt, estimate.imu_fixed_tilt)
            if config.imu_tilt == "check" and apart > TILT_CHECK_TOLERANCE:
                tilted = (
                    f"the IMU tilts the fixed frame {np.degrees(apart):.1f} deg from the given "
                    "fixed_tilt (imu_tilt 'correct' uses the IMU's)"
                )
                advice = "; ".join(filter(None, (advice, tilted)))
        return values, advice


def payload_session(
    kinematics: SensorKinematics,
    *,
    window_sec: float = 10.0,
    method: str = "lmi",
    solver_options: Mapping[str, Any] | None = None,
    estimate_offset: bool = True,
    flip_wrench_sign: bool = False,
    wrench_limits: Sequence[float] | None = None,
    max_input_rate_hz: float = 1000.0,
    detect_payload_change: bool = True,
    payload_change_threshold: float = ChangeDetectorConfig.threshold,
    prior: Sequence[float] | None = None,
    weighting: str = EstimatorConfig.weighting,
    bounding_ellipsoid: np.ndarray | None = None,
) -> PayloadSession:
    """The payload session the node runs for its parameters of the same names (the one place
    they become an estimator and a session; ``inertia-id replay`` uses it too); ``prior`` the
    payload's CAD ``theta`` (10,) in the sensor frame (the node's ``payload_prior``, resolved);
    ``bounding_ellipsoid`` the 4x4 ``Q`` of an ellipsoid holding the payload (sensor frame) or
    ``None``."""
    config = EstimatorConfig(
        window_sec=window_sec,
        method=method,
        solver_options=dict(solver_options or {}),
        estimate_offset=estimate_offset,
        wrench_sign=-1.0 if flip_wrench_sign else 1.0,
        wrench_limits=None if wrench_limits is None else tuple(wrench_limits),
        prior=None if prior is None else tuple(prior),
        weighting=weighting,
        bounding_ellipsoid=bounding_ellipsoid,
        **window_capacities(window_sec, max_input_rate_hz),
    )
    return PayloadSession(
        PayloadEstimator(kinematics, config),
        max_input_rate_hz,
        detect_payload_change,
        payload_change_threshold,
    )


def payload_torque_session(
    links: LinkModel,
    links_x: np.ndarray,
    frame: str,
    *,
    window_sec: float = 10.0,
    method: str = "lmi",
    solver_options: Mapping[str, Any] | None = None,
    estimate_offset: bool = True,
    max_input_rate_hz: float = 1000.0,
    detect_payload_change: bool = True,
    payload_change_threshold: float = ChangeDetectorConfig.threshold,
    prior: Sequence[float] | None = None,
    weighting: str = PayloadTorqueEstimatorConfig.weighting,
    filter_half_width: float = PayloadTorqueEstimatorConfig.filter_half_width,
    bounding_ellipsoid: np.ndarray | None = None,
) -> PayloadTorqueSession:
    """The session of a payload at ``frame`` from joint torques, ``links``'s links and drives
    known as ``links_x`` (the URDF's ``links.prior`` or a fit-links result,
    :func:`~inertia_id_ros.formats.link_result.read_link_result`); the other arguments as
    :func:`payload_session`'s (``prior``: the payload's CAD ``theta`` (10,) in ``frame``;
    ``weighting`` by default each joint by its noise level: the wrist's quieter torques carry
    the inertia). ``filter_half_width`` (s): the joint states' differentiation (as the link
    model's fit, when it comes from one); ``bounding_ellipsoid`` the 4x4 ``Q`` of an ellipsoid
    holding the payload (in ``frame``) or ``None``."""
    config = PayloadTorqueEstimatorConfig(
        frame=frame,
        window_sec=window_sec,
        method=method,
        filter_half_width=filter_half_width,
        solver_options=dict(solver_options or {}),
        estimate_offset=estimate_offset,
        prior=None if prior is None else tuple(prior),
        weighting=weighting,
        bounding_ellipsoid=bounding_ellipsoid,
        **window_capacities(window_sec, max_input_rate_hz),
    )
    return PayloadTorqueSession(
        PayloadTorqueEstimator(links, links_x, config),
        max_input_rate_hz,
        detect_payload_change,
        payload_change_threshold,
    )


def link_session(
    link_model: LinkModel,
    actuators: Mapping[str, ActuatorConfig] | None = None,
    *,
    window_sec: float = 10.0,
    method: str = "lmi",
    solver_options: Mapping[str, Any] | None = None,
    prior_weight: float = DEFAULT_PRIOR_WEIGHT,
    max_input_rate_hz: float = 1000.0,
    weighting: str = LinkEstimatorConfig.weighting,
    bounding_ellipsoids: Sequence[np.ndarray | None] | None = None,
) -> LinkSession:
    """The links session the node runs for its parameters of the same names;
    ``bounding_ellipsoids`` per link ``None`` or its ``Q`` (4x4, link frame), or ``None``."""
    config = LinkEstimatorConfig(
        window_sec=window_sec,
        method=method,
        solver_options=dict(solver_options or {}),
        prior_weight=prior_weight,
        weighting=weighting,
        bounding_ellipsoids=bounding_ellipsoids,
        **window_capacities(window_sec, max_input_rate_hz),
    )
    return LinkSession(LinkEstimator(link_model, config, actuators), max_input_rate_hz)


def whole_body_session(
    model: WholeBodyModel,
    *,
    window_sec: float = 10.0,
    method: str = "lmi",
    solver_options: Mapping[str, Any] | None = None,
    prior_weight: float | None = None,
    with_efforts: bool = False,
    max_input_rate_hz: float = 1000.0,
    sensor_timeout_sec: float | None = None,
    sample_rate_hz: float | None = None,
    weighting: str = WholeBodyEstimatorConfig.weighting,
    imu_tilt: str | None = None,
    bounding_ellipsoids: Sequence[np.ndarray | None] | None = None,
) -> WholeBodySession:
    """The whole-body session the node runs for its parameters of the same names (None: the
    :class:`WholeBodyEstimatorConfig` default; ``sample_rate_hz`` is its
    ``max_sample_rate_hz``; ``bounding_ellipsoids`` per identified link ``None`` or its ``Q``
    (4x4, link frame)). A fixed base's frame and tilt are the ``model``'s."""
    extra = {
        k: v
        for k, v in (
            ("prior_weight", prior_weight),
            ("sensor_timeout_sec", sensor_timeout_sec),
            ("max_sample_rate_hz", sample_rate_hz),
            ("imu_tilt", imu_tilt),
            ("bounding_ellipsoids", bounding_ellipsoids),
        )
        if v is not None
    }
    config = WholeBodyEstimatorConfig(
        window_sec=window_sec,
        method=method,
        solver_options=dict(solver_options or {}),
        with_efforts=with_efforts,
        weighting=weighting,
        **extra,
        **window_capacities(window_sec, max_input_rate_hz),
    )
    return WholeBodySession(WholeBodyEstimator(model, config), max_input_rate_hz)
