"""Online detection of a payload change: a CUSUM of normalised wrench residuals.

While the payload stays the same, the residual ``r = f - Y[:, :10] theta - offset`` (6,) of each
new sample against the current estimate (``theta`` (10,) about and in the sensor frame,
``offset`` (6,) the F/T offset; N, N m) has per-channel standard deviations ``sigma`` (6,) that
the window's own residuals measure: sensor noise *and* the estimate's model error (filter lag,
unmodelled effects), so an imperfect model does not raise alarms. Each sample's score is its
mean normalised squared residual ``z = mean_c (r_c / sigma_c)^2`` (about 1 without a change), and
a one-sided CUSUM (Page 1954) accumulates its excess::

    S_i = max(0, S_{i-1} + min(z_i, z_max) - 1 - drift),   alarm when S_i >= threshold,
    z_max = 1 + drift + threshold / min_samples

Parameters (:class:`ChangeDetectorConfig`):

* ``drift`` (k, default 1): allowance per sample. Without a change ``z - 1 - k`` averages ``-k``,
  so noise and model error whose normalised power stays below ``1 + k`` times the window's do not
  accumulate. A change is detectable when its residual ``delta`` (6,) makes
  ``sum_c (delta_c / sigma_c)^2 > 6 k``: e.g. 0.25 N of force alone with sigma = 0.1 N.
* ``threshold`` (h, default 50): the alarm level; sets the false-alarm rate and the delay.
* ``min_samples`` (default 10): fewest samples that can raise an alarm (each adds at most
  ``h / min_samples``): a glitch of fewer samples (a spike, a corrupt packet) cannot.
* ``min_reference_sec`` (default 5 s): a reference estimated from samples spanning less than
  this does not arm the detector: the first estimates of a filling window extrapolate poorly to
  new motion. (The span is the reference's own; a hold-off counted on incoming samples instead
  would depend on how fast samples arrive relative to the solves: a backlog, a bag replayed fast.)

``sigma`` comes from :func:`residual_sigma`: the largest per-channel rms over ten parts of the
window, because the model error varies along the motion (with the window's average instead, the
hardest phase of a motion raised alarms when the derivative filter was too wide).

Expected detection delay: ``h / (min(mean z, z_max) - 1 - k)`` samples after the change, at
least ``min_samples``; an external force held for that long (a contact) looks like a change.
Measured on the simulated Panda at 1 kHz (:mod:`~inertia_id_ros.sim.payload` defaults: 1.5 kg
payload, COM 8 cm from the flange, F/T noise 0.1 N / 0.005 N m, encoder noise; 10 s window),
median over 3 seeds of the delay (ms) after a point mass is added at the payload's COM::

    added mass   h = 25   h = 50   h = 100
    10 g           n/d      n/d      n/d     (mean z < 1 + k)
    15 g           110      n/d      n/d
    20 g            22       36       80
    50 g or more     9        9        9     (min_samples samples)

(n/d: not detected within 2 s.) A node solving at ``update_rate_hz`` sees the alarm at its next
update. Without a change, 10 min at 200 Hz keep S below 3 (h = 50), also when the filter's model
error makes the torque residuals 2-3 times the sensor noise
(``test/unit/online/test_change_detection.py``).

The same test serves a payload identified from joint torques
(:class:`~inertia_id_ros.online.payload_session.PayloadTorqueSession`): its channels are the ``n``
joints' torques, its residual ``r = tau - tau_links - Y_p theta - offset_change`` (n,) (N·m), and
:attr:`ChangeDetectorConfig.sigma_floor` has one entry per joint.

Use: :class:`~inertia_id_ros.online.payload_session.PayloadSession` runs the detector on every
batch of rows the estimator adds, restarts the window on an alarm and re-arms it with each new
estimate (the node, replay and the tests all drive that session; the rules are written there only).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from inertia_id_ros.core.inertia import N_BODY_PARAMS
from inertia_id_ros.core.regressors import N_WRENCH_CHANNELS
from inertia_id_ros.online.window import SlidingWindow
from inertia_id_ros.options import PAYLOAD_CHANGE_THRESHOLD


@dataclass
class ChangeDetectorConfig:
    """Settings of :class:`PayloadChangeDetector` (see the module docstring for their effect)."""

    drift: float = 1.0
    """CUSUM allowance k per sample, in units of the normalised squared residual (>= 0)."""
    threshold: float = PAYLOAD_CHANGE_THRESHOLD
    """Alarm level h of the CUSUM statistic (> 0)."""
    min_samples: int = 10
    """Fewest samples that can raise an alarm (>= 1): each adds at most ``threshold /
    min_samples``."""
    min_reference_sec: float = 5.0
    """Shortest span of samples (s) a reference must be estimated from to arm the detector
    (>= 0)."""
    sigma_floor: np.ndarray = field(
        default_factory=lambda: np.array([0.01, 0.01, 0.01, 5e-4, 5e-4, 5e-4])
    )
    """Lower bound (r,) of the per-channel residual standard deviations (a wrench's 6: N, N m;
    joint torques: N·m each): a near-perfect fit (noise-free data, few samples) must not make
    every sample look abnormal. Its length is the number of channels."""
    measurement: str = "wrench"
    """What the channels measure, for the alarm's text: ``"wrench"`` (an F/T sensor's
    ``[fx, fy, fz, tx, ty, tz]``) or ``"joint torques"``."""

    def __post_init__(self) -> None:
        if not self.drift >= 0:
            raise ValueError(f"ChangeDetectorConfig.drift must be >= 0, got {self.drift!r}")
        if not self.threshold > 0:
            raise ValueError(f"ChangeDetectorConfig.threshold must be > 0, got {self.threshold!r}")
        if int(self.min_samples) != self.min_samples or self.min_samples < 1:
            raise ValueError(
                f"ChangeDetectorConfig.min_samples must be an integer >= 1, got "
                f"{self.min_samples!r}"
            )
        if not self.min_reference_sec >= 0:
            raise ValueError(
                f"ChangeDetectorConfig.min_reference_sec must be >= 0 (s), got "
                f"{self.min_reference_sec!r}"
            )
        self.sigma_floor = np.array(self.sigma_floor, dtype=float).reshape(-1)
        if self.sigma_floor.size == 0 or not np.all(self.sigma_floor > 0):
            raise ValueError(
                f"ChangeDetectorConfig.sigma_floor must be > 0 per channel, got {self.sigma_floor}"
            )

    @property
    def n_channels(self) -> int:
        """Channels per sample (6 for a wrench, one per joint for joint torques)."""
        return self.sigma_floor.size

    @property
    def max_score(self) -> float:
        """``z_max``: the largest normalised squared residual one sample contributes."""
        return 1.0 + self.drift + self.threshold / self.min_samples


@dataclass(frozen=True)
class ChangeEvent:
    """An alarm: the wrenches no longer fit the reference payload.

    ``t_detected``: stamp of the sample that raised it (s); ``t_onset``: stamp of the first
    sample of the CUSUM excursion, the estimated start of the change (Page's estimate);
    ``n_samples`` samples from onset to detection; ``statistic``: the CUSUM value;
    ``mean_score``: mean normalised squared residual over those samples (unclipped);
    ``residual_mean`` (r,): their mean residual ``f - Y theta - offset`` (a wrench: N, N m,
    sensor frame; joint torques: N·m); ``measurement``: what the channels measure
    (:attr:`ChangeDetectorConfig.measurement`).
    """

    t_detected: float
    t_onset: float
    n_samples: int
    statistic: float
    mean_score: float
    residual_mean: np.ndarray
    measurement: str = "wrench"

    def __str__(self) -> str:
        if self.measurement == "wrench":
            force = float(np.linalg.norm(self.residual_mean[:3]))
            torque = float(np.linalg.norm(self.residual_mean[3:]))
            departure = f"the wrench departs from the estimate by {force:.3g} N / {torque:.3g} N m"
        else:
            departure = (
                f"the {self.measurement} depart from the estimate by "
                f"{float(np.linalg.norm(self.residual_mean)):.3g} N m"
            )
        return (
            f"payload change detected at {self.t_detected:.3f} s (onset {self.t_onset:.3f} s, "
            f"{self.n_samples} samples): {departure} on average, {self.mean_score:.3g} times "
            "the window's residual power"
        )


def _predicted_wrench(Y: np.ndarray, theta: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """(N, r) ``Y[:, :, :10] @ theta + offset`` for rows ``Y`` (N, r, p >= 10)."""
    return Y[:, :, :N_BODY_PARAMS] @ theta + offset


def _check_rows(
    t: np.ndarray, Y: np.ndarray, f: np.ndarray, n_channels: int = N_WRENCH_CHANNELS
) -> tuple[np.ndarray, ...]:
    t = np.asarray(t, dtype=float).reshape(-1)
    Y = np.asarray(Y, dtype=float)
    f = np.asarray(f, dtype=float)
    n, r = t.size, n_channels
    if Y.ndim != 3 or Y.shape[:2] != (n, r) or Y.shape[2] < N_BODY_PARAMS or f.shape != (n, r):
        raise ValueError(
            f"need Y (N, {r}, p >= 10) and f (N, {r}) for N={n} stamps, got {Y.shape} and {f.shape}"
        )
    return t, Y, f


def _check_reference(
    theta: np.ndarray, offset: np.ndarray, n_channels: int = N_WRENCH_CHANNELS
) -> tuple[np.ndarray, np.ndarray]:
    theta = np.asarray(theta, dtype=float).reshape(-1)
    offset = np.asarray(offset, dtype=float).reshape(-1)
    if theta.shape != (N_BODY_PARAMS,) or offset.shape != (n_channels,):
        raise ValueError(
            f"need theta (10,) and offset ({n_channels},), got {theta.shape} and {offset.shape}"
        )
    if not (np.isfinite(theta).all() and np.isfinite(offset).all()):
        raise ValueError("theta and offset must be finite")
    return theta, offset


def residual_sigma(
    Y: np.ndarray, f: np.ndarray, theta: np.ndarray, offset: np.ndarray, n_segments: int = 10
) -> np.ndarray:
    """(r,) per-channel residual scale (N, N m) of the samples ``Y`` (N, r, p >= 10), ``f``
    (N, r), in time order (e.g. the window the estimate was solved on), against ``theta`` (10,),
    ``offset`` (r,) (a wrench: r = 6; joint torques: one per joint): the largest rms of
    ``f - Y[:, :, :10] theta - offset`` over ``n_segments`` consecutive equal parts. The model
    error varies along the motion; the worst part of the window, not its average, is what new
    samples of the same payload may show."""
    r = np.shape(f)[-1]
    theta, offset = _check_reference(theta, offset, r)
    _, Y, f = _check_rows(np.zeros(len(f)), Y, f, r)
    if len(f) == 0:
        raise ValueError("need at least one sample to measure the residuals")
    if int(n_segments) != n_segments or n_segments < 1:
        raise ValueError(f"n_segments must be an integer >= 1, got {n_segments!r}")
    squared = (f - _predicted_wrench(Y, theta, offset)) ** 2
    parts = np.array_split(squared, min(int(n_segments), len(f)))
    return np.sqrt(np.max([part.mean(axis=0) for part in parts], axis=0))


def window_residual_sigma(
    window: SlidingWindow, t_first: float, theta: np.ndarray, offset: np.ndarray
) -> np.ndarray | None:
    """:func:`residual_sigma` of the samples of ``window`` stamped from ``t_first`` (s) on (those
    an estimate ``theta``, ``offset`` was solved on), or ``None`` when it holds none."""
    t, Y, f = window.samples(copy=False)
    first = int(np.searchsorted(t, t_first, side="left"))
    if first == t.size:
        return None
    return residual_sigma(Y[first:], f[first:], theta, offset)


class PayloadChangeDetector:
    """CUSUM test of new samples against a reference estimate (see the module docstring).

    States: *disarmed* (initially, after :meth:`reset` and after an alarm: :meth:`update`
    ignores samples) and *armed* (by :meth:`set_reference` with a long enough reference). Not
    thread-safe.
    """

    def __init__(self, config: ChangeDetectorConfig | None = None) -> None:
        self.config = config or ChangeDetectorConfig()
        self._theta: np.ndarray | None = None
        self._offset = np.zeros(self.config.n_channels)
        self._sigma = np.ones(self.config.n_channels)
        self._clear_statistic()

    def _clear_statistic(self) -> None:
        self.statistic = 0.0
        """Current CUSUM value S (dimensionless)."""
        self._run_n = 0
        self._run_t0 = np.nan
        self._run_score = 0.0
        self._run_residual = np.zeros(self.config.n_channels)

    @property
    def armed(self) -> bool:
        """Whether samples are being tested (a reference is set and no alarm since)."""
        return self._theta is not None

    def reset(self) -> None:
        """Disarm and clear the statistic (e.g. when the estimator's window is reset)."""
        self._theta = None
        self._clear_statistic()

    def set_reference(
        self, theta: np.ndarray, offset: np.ndarray, sigma: np.ndarray, span: float
    ) -> bool:
        """Test from now on against ``theta`` (10,), ``offset`` (r,) (N, N m) with per-channel
        residual standard deviations ``sigma`` (r,) (N, N m; raised to ``sigma_floor``), e.g.
        the latest estimate and :func:`residual_sigma` of its window, estimated from samples
        spanning ``span`` (s). Ignored (returns False) when ``span < min_reference_sec``;
        otherwise arms a disarmed detector, and an armed one keeps its statistic."""
        r = self.config.n_channels
        theta, offset = _check_reference(theta, offset, r)
        sigma = np.asarray(sigma, dtype=float).reshape(-1)
        if sigma.shape != (r,) or not np.all(np.isfinite(sigma) & (sigma >= 0)):
            raise ValueError(f"sigma must be {r} finite values >= 0 (N, N m), got {sigma}")
        if not span >= self.config.min_reference_sec:
            return False
        if not self.armed:
            self._clear_statistic()
        self._theta, self._offset = theta, offset
        self._sigma = np.maximum(sigma, self.config.sigma_floor)
        return True

    def scores(self, Y: np.ndarray, f: np.ndarray) -> np.ndarray:
        """(N,) normalised squared residuals ``z`` of samples ``Y`` (N, 6, p >= 10), ``f`` (N, 6)
        against the reference (unclipped; about 1 without a change)."""
        self._reference_theta()
        _, Y, f = _check_rows(np.zeros(len(f)), Y, f, self.config.n_channels)
        return self._scores(Y, f)[0]

    def _reference_theta(self) -> np.ndarray:
        """The reference's ``theta`` (10,); RuntimeError when disarmed."""
        if self._theta is None:
            raise RuntimeError("no reference: call set_reference first")
        return self._theta

    def _scores(self, Y: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        residual = f - _predicted_wrench(Y, self._reference_theta(), self._offset)
        return np.mean((residual / self._sigma) ** 2, axis=1), residual

    def update(self, t: np.ndarray, Y: np.ndarray, f: np.ndarray) -> ChangeEvent | None:
        """Test new samples, in time order: stamps ``t`` (N,) (s), regressor rows ``Y``
        (N, 6, p >= 10) (the window's, with or without offset columns) and wrenches ``f`` (N, 6)
        (N, N m). Returns the :class:`ChangeEvent` of the first alarm (the detector is then
        disarmed, the remaining samples ignored) or ``None``. Ignores samples while disarmed."""
        t, Y, f = _check_rows(t, Y, f, self.config.n_channels)
        if not self.armed or t.size == 0:
            return None
        config = self.config
        z, residual = self._scores(Y, f)
        increments = np.minimum(z, config.max_score) - 1.0 - config.drift
        # Lindley's recursion S_i = max(0, S_{i-1} + s_i), vectorised: S_i = C_i - min(-S_0,
        # min_{j <= i} C_j) with C the cumulative sum of the increments.
        cumulative = np.cumsum(increments)
        S = cumulative - np.minimum.accumulate(np.minimum(cumulative, -self.statistic))
        alarms = np.flatnonzero(S >= config.threshold)
        end = int(alarms[0]) + 1 if alarms.size else t.size
        zeros = np.flatnonzero(S[:end] == 0.0)
        if zeros.size:  # the excursion restarted within these samples
            self._clear_statistic()
            first = int(zeros[-1]) + 1
        else:
            first = 0
        if first < end:
            if self._run_n == 0:
                self._run_t0 = float(t[first])
            self._run_n += end - first
            self._run_score += float(z[first:end].sum())
            self._run_residual += residual[first:end].sum(axis=0)
        self.statistic = float(S[end - 1])
        if not alarms.size:
            return None
        event = ChangeEvent(
            t_detected=float(t[end - 1]),
            t_onset=self._run_t0,
            n_samples=self._run_n,
            statistic=self.statistic,
            mean_score=self._run_score / self._run_n,
            residual_mean=self._run_residual / self._run_n,
            measurement=self.config.measurement,
        )
        self.reset()
        return event
