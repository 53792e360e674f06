"""F/T sensors calibrated online, while identifying (the in-situ calibration of
:mod:`inertia_id_ros.chain.ft_calibration`, on a sliding window of the node's own samples).

An estimator hands each batch of samples it adds to its window to :meth:`OnlineFTCalibrator.add`:
per calibrated sensor, the readings ``r`` (N, 6) before any calibration (this package's sign
convention, the sensor frame) and the reference ``ŵ`` (N, 6), the wrench the model of what the
sensor carries predicts (the URDF's links in whole-body mode, a known attached body in payload
mode). Every ``period_sec`` of sample time, :meth:`OnlineFTCalibrator.refit` fits each sensor's
calibration ``ŵ ≈ C r + o`` on the newest ``window_sec`` (regularised toward the configured
calibration, ``λ`` by cross-validation), with its standard errors. It is *applied* (the
estimator calibrates the readings that come after it, and restarts its window, so that no
window mixes calibrations) only when, fitted on the first part of the buffer, it predicts the
last ``HELD_OUT_FRACTION`` better than the calibration in use with its offset refitted: no axis
worse, and on average by ``min_improvement``. The inertial fit stays physically consistent
whatever calibration is applied: the estimators' solvers constrain it, not the readings."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from inertia_id_ros.chain.ft_calibration import (
    FTCalibration,
    HeldOutErrors,
    SensorCalibration,
    fit_ft_calibration,
    held_out_errors,
    smooth_readings,
)
from inertia_id_ros.errors import ProblemError
from inertia_id_ros.online.window import SampleBuffer
from inertia_id_ros.options import (
    FT_CALIBRATION_KINDS,
    ONLINE_CALIBRATION_MIN_IMPROVEMENT,
    ONLINE_CALIBRATION_PERIOD_SEC,
    ONLINE_CALIBRATION_WINDOW_SEC,
)

HELD_OUT_FRACTION = 0.25
"""The newest part of a sensor's buffer on which a refit is judged against the calibration in
use."""


@dataclass(frozen=True)
class OnlineCalibrationConfig:
    """How the node calibrates its F/T ``sensors`` (frames) online: ``kind`` (one of
    :data:`~inertia_id_ros.options.FT_CALIBRATION_KINDS`), the newest ``window_sec`` (s) of
    samples fitted, a refit every ``period_sec`` (s of sample time) once ``min_sec`` (s) are
    held, at most ``max_rate_hz`` samples a second kept, and the held-out improvement
    ``min_improvement`` (fraction of the calibration in use's RMS error, averaged over the six
    axes) a refit needs to be applied. ``filter_half_width`` (s): the readings are smoothed as
    the estimator's derivative filter smooths the joint states (the reference is as smooth)."""

    sensors: tuple[str, ...]
    kind: str = FT_CALIBRATION_KINDS[0]
    window_sec: float = ONLINE_CALIBRATION_WINDOW_SEC
    period_sec: float = ONLINE_CALIBRATION_PERIOD_SEC
    min_sec: float = 10.0
    max_rate_hz: float = 200.0
    min_improvement: float = ONLINE_CALIBRATION_MIN_IMPROVEMENT
    filter_half_width: float = 0.05

    def __post_init__(self) -> None:
        if not self.sensors:
            raise ValueError("online calibration needs at least one F/T sensor to calibrate")
        if self.kind not in FT_CALIBRATION_KINDS:
            raise ValueError(
                f"online calibration kind {self.kind!r} is not one of {FT_CALIBRATION_KINDS}"
            )
        for name in ("window_sec", "period_sec", "min_sec", "max_rate_hz"):
            if not getattr(self, name) > 0:
                raise ValueError(f"online calibration {name} must be > 0")
        if self.min_sec > self.window_sec:
            raise ValueError("online calibration min_sec must be at most window_sec")
        if not 0.0 <= self.min_improvement < 1.0:
            raise ValueError("online calibration min_improvement must be in [0, 1)")


@dataclass(frozen=True)
class CalibrationUpdate:
    """One sensor's refit: its ``calibration`` (the matrix, offset and their standard errors,
    fitted on the whole buffer), the held-out RMS errors per axis (6,) (N, N m) of the
    calibration in use (offset refitted) and of the refit (``held_out``), whether it was
    ``applied``, and the stamps ``t_first``, ``t_last`` (s) of the samples fitted."""

    frame: str
    calibration: FTCalibration
    held_out: HeldOutErrors
    applied: bool
    t_first: float
    t_last: float

    @property
    def as_applied(self) -> SensorCalibration:
        """The calibration as the estimator applies it."""
        return SensorCalibration(self.frame, self.calibration.matrix, self.calibration.offset)


class OnlineFTCalibrator:
    """The online calibration of ``config.sensors``, each starting from its calibration in
    ``configured`` (by frame; without one: its readings are the wrench, the identity).
    Thread-safe: :meth:`add` runs in the estimator's processing, :meth:`refit` in the update."""

    def __init__(
        self, configured: Mapping[str, SensorCalibration], config: OnlineCalibrationConfig
    ) -> None:
        self.frames = frames = config.sensors
        self.config = config
        self.configured = {
            f: configured.get(f, SensorCalibration(f, np.eye(6), np.zeros(6))) for f in frames
        }
        self.in_use: dict[str, SensorCalibration] = dict(self.configured)
        """Per frame, the calibration the estimator applies now."""
        capacity = int(np.ceil(config.window_sec * config.max_rate_hz)) + 1
        self._pairs = {f: SampleBuffer(capacity, t=(), r=(6,), w=(6,)) for f in frames}
        self._last_bin = dict.fromkeys(frames, -np.inf)
        """Per frame, the newest kept sample's bin of ``1 / max_rate_hz`` s."""
        self._newest_t = dict.fromkeys(frames, -np.inf)
        self._next_refit: float | None = None
        self.frozen = False
        """No more samples are taken (the reference stopped holding, e.g. a payload change);
        the calibration in use stays."""
        self.latest: dict[str, CalibrationUpdate] = {}
        """Per frame, its newest refit."""
        self.applied = 0
        """Refits applied so far."""
        self._lock = threading.Lock()

    def readings(self, frame: str, wrenches: np.ndarray) -> np.ndarray:
        """(N, 6) the readings ``r`` of the calibrated ``wrenches`` (N, 6) of ``frame``, as
        calibrated by :attr:`in_use` (its inverse)."""
        use = self.in_use[frame]
        return np.linalg.solve(use.matrix, (np.asarray(wrenches) - use.offset).T).T

    def add(self, frame: str, t: np.ndarray, readings: np.ndarray, reference: np.ndarray) -> None:
        """Take the samples stamped ``t`` (N,) s of ``frame``: ``readings`` and ``reference``
        (N, 6) (see the module docstring). Non-finite samples are skipped, and of each bin of
        ``1 / max_rate_hz`` s only the first is kept."""
        if self.frozen:
            return
        t = np.asarray(t, dtype=float)
        finite = np.isfinite(readings).all(axis=1) & np.isfinite(reference).all(axis=1)
        t, readings, reference = t[finite], readings[finite], reference[finite]
        bins = np.floor(t * self.config.max_rate_hz)
        with self._lock:
            first = np.diff(bins, prepend=self._last_bin[frame]) > 0
            chosen = np.flatnonzero(first & (bins > self._last_bin[frame]))
            if chosen.size:
                self._pairs[frame].extend(t=t[chosen], r=readings[chosen], w=reference[chosen])
                self._last_bin[frame] = float(bins[chosen[-1]])
                self._newest_t[frame] = float(t[chosen[-1]])
                if self._next_refit is None:
                    self._next_refit = float(t[chosen[0]]) + self.config.min_sec

    def due(self) -> bool:
        """Whether the newest sample reached the next refit's stamp."""
        with self._lock:
            newest = max(self._newest_t.values())
            return self._next_refit is not None and newest >= self._next_refit

    def refit(self) -> list[CalibrationUpdate]:
        """Refit every sensor with at least ``min_sec`` of samples (see the module docstring);
        the updates, those to apply with ``applied`` set (and :attr:`in_use` moved to them)."""
        with self._lock:
            self._next_refit = max(self._newest_t.values()) + self.config.period_sec
            held = {f: self._newest(f) for f in self.frames}
        updates = []
        for frame, (t, r, w) in held.items():
            if t.size < 2 or t[-1] - t[0] < self.config.min_sec:
                continue
            try:
                update = self._refit_one(frame, t, r, w)
            except ProblemError:  # too few samples or a degenerate motion: no refit yet
                continue
            updates.append(update)
        with self._lock:
            for update in updates:
                self.latest[update.frame] = update
                if update.applied:
                    self.in_use[update.frame] = update.as_applied
                    self.applied += 1
        return updates

    def _newest(self, frame: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Copies of the samples of ``frame`` within ``window_sec`` of its newest (lock held)."""
        pairs = self._pairs[frame]
        t = pairs["t"]
        start = int(np.searchsorted(t, t[-1] - self.config.window_sec)) if t.size else 0
        return t[start:].copy(), pairs["r"][start:].copy(), pairs["w"][start:].copy()

    def _refit_one(
        self, frame: str, t: np.ndarray, r: np.ndarray, w: np.ndarray
    ) -> CalibrationUpdate:
        config = self.config
        period = float(np.median(np.diff(t)))
        smooth = smooth_readings(r, period, config.filter_half_width)
        current = self.configured[frame].matrix
        split = int(round(len(t) * (1.0 - HELD_OUT_FRACTION)))
        train, test = (smooth[:split], w[:split]), (smooth[split:], w[split:])
        trial = fit_ft_calibration(*train, current=current, kind=config.kind)
        in_use = self.in_use[frame]
        # the refit against the calibration in use, each offset fitted on the training part
        errors = held_out_errors(replace(trial, current=in_use.matrix), train, test)
        ratio = errors.ratio
        better = bool(np.all(ratio <= 1.0) and np.mean(ratio) <= 1.0 - config.min_improvement)
        calibration = fit_ft_calibration(smooth, w, current=current, kind=config.kind)
        return CalibrationUpdate(frame, calibration, errors, better, float(t[0]), float(t[-1]))
