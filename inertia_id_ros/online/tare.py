"""Tare: the F/T sensor's offset from a short recording, and how it enters the estimation.

**Recording.** With the payload removed (``theta_known = 0``) or a known payload ``theta_known``
(10,), a short static or moving recording of wrenches ``f_i`` (6,) with regressor rows ``Y_i``
(6, p >= 10; the first 10 columns are ``body_regressor``) gives::

    offset = mean_i (f_i - Y_i[:, :10] theta_known)      (N, N m, sensor frame)

with standard error ``noise_std / sqrt(N)``. Without a payload the rows are not needed: the
offset is the mean wrench.

**Reconciliation with the jointly estimated offset** (the rule): the tare does not replace the
offset in the joint problem ``[theta, offset]`` (``estimate_offset=True``); it becomes a Gaussian
prior on it, whose variance grows with the tare's age as the sensor drifts::

    minimise ||Y x - y||^2 + sum_c W_c (offset_c - tare_c)^2,   W_c = sigma_c^2 / v_c(age)
    v_c(age) = offset_std_c^2 + (drift_rate_c * age)^2

``sigma_c`` is the residual standard deviation of the window's channel-c rows (each row of
``||Y x - y||^2`` has weight 1, so the tare counts as ``sigma_c^2 / v_c`` extra samples measuring
``offset_c`` directly; fresh and with ``sigma`` equal to the recording's noise, as many as it
averaged). The estimator uses the recording's own ``noise_std`` for ``sigma`` (the window's
residuals are known only after the solve); when the motion adds model error to the window's
residuals, this weights the tare a little less than the rule. Consequences:

* Right after a tare the offset is known whatever the motion: a motion that does not tilt the
  sensor identifies the mass (to about ``offset_std / g``), so while the tare's force offset is
  known to ``EstimatorConfig.tare_max_force_std`` (its ``offset_std_at(t)``) the estimator does
  not refuse with ``offset_not_identifiable``. Beyond that age it refuses again: without tilts
  the data cannot separate the offset from the weight, so the tare alone fixes that direction,
  however small its weight, and its drift since would bias the mass unnoticed.
* As the tare ages its weight fades and data that identify the offset (tilts about two axes)
  take over: with such data a stale tare cannot bias the payload for long.
* A new tare replaces the previous one. Resetting the estimator's window (a payload change)
  keeps the tare: it describes the sensor, not the payload; so does a clock reset, the tare's
  age carried over into the new time base.
* Without offset estimation (``estimate_offset=False``) the tare is the known offset: it is
  subtracted from the wrenches (and zero until a tare is set).

``drift_rate`` (6,) (N/s, N m/s) is the sensor's assumed offset drift; the default,
:data:`DEFAULT_OFFSET_DRIFT_RATE` (0.02 N and 1 mN m per minute), halves a 1 s, 1 kHz tare's
weight (sigma 0.1 N) in about 10 s and makes it one sample's worth after about 5 minutes; set it
from the sensor's data sheet or from the spread of repeated tares.

**Joint torques** (a payload from joint torques,
:class:`~inertia_id_ros.online.payload_torque_estimator.PayloadTorqueEstimator`): the same rule
with the joints' torque offsets in place of the F/T offset. The recording's "wrenches" are the
torques the link model leaves, ``tau - tau_links`` (n,) (N·m), the offsets are the parameters'
offset changes (``offset_slice``), and the drift rate and noise floor are per joint
(:data:`~inertia_id_ros.online.payload_torque_estimator.TORQUE_OFFSET_DRIFT_RATE`,
:data:`~inertia_id_ros.online.payload_torque_estimator.TORQUE_NOISE_STD_FLOOR`).

Use: each payload estimator holds an :class:`OffsetTare`; its :meth:`OffsetTare.set` (the
node's ``~/tare`` service, through the session) records the tare from the newest seconds of the
estimator's window, and every solve then applies it (``with_tare``, or subtracting it when the
offset is not estimated); by hand, ``tare = tare_from_window(estimator.window, theta_known)``,
then ``with_tare(problem, tare, t_now, sigma)`` instead of ``problem`` in each solve.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol, TypeVar

import numpy as np

from inertia_id_ros.core.inertia import N_BODY_PARAMS
from inertia_id_ros.errors import EstimateUnavailable, ProblemError
from inertia_id_ros.online.window import SlidingWindow
from inertia_id_ros.solvers import Problem

T = TypeVar("T")

DEFAULT_OFFSET_DRIFT_RATE = np.array([0.02, 0.02, 0.02, 0.001, 0.001, 0.001]) / 60.0
"""Assumed drift rate (6,) of the F/T offset (N/s, N m/s): 0.02 N and 0.001 N m per minute."""

NOISE_STD_FLOOR = np.array([0.01, 0.01, 0.01, 5e-4, 5e-4, 5e-4])
"""Lower bound (6,) of a tare's ``noise_std`` (N, N m), about the resolution of a good F/T sensor:
a channel that reads constant (a noise-free simulated sensor, a 3-axis load cell's torques)
must not make the tare infinitely certain."""


@dataclass(frozen=True)
class Tare:
    """A tared F/T offset (or joint torque offsets: (n,) in place of (6,), N·m).

    ``offset`` (6,) ``[fx, fy, fz, tx, ty, tz]`` (N, N m, sensor frame); ``offset_std`` (6,) its
    standard error when recorded (``noise_std / sqrt(n_samples)``); ``noise_std`` (6,) the
    standard deviation of ``f - Y theta_known`` over the recording (N, N m; at least
    the noise floor, :data:`NOISE_STD_FLOOR`); ``n_samples``
    wrenches recorded, the newest stamped ``t`` (s); ``theta_known`` (10,) the payload assumed.
    """

    offset: np.ndarray
    offset_std: np.ndarray
    noise_std: np.ndarray
    n_samples: int
    t: float
    theta_known: np.ndarray

    def offset_std_at(
        self, t: float, drift_rate: np.ndarray = DEFAULT_OFFSET_DRIFT_RATE
    ) -> np.ndarray:
        """(6,) standard deviation of the tared offset at time ``t`` (s):
        ``sqrt(offset_std^2 + (drift_rate * age)^2)``, age ``max(t - self.t, 0)``."""
        age = max(float(t) - self.t, 0.0)
        return np.hypot(self.offset_std, np.asarray(drift_rate, dtype=float) * age)


def tare_offset(
    t: np.ndarray,
    f: np.ndarray,
    Y: np.ndarray | None = None,
    theta_known: np.ndarray | None = None,
    noise_floor: np.ndarray = NOISE_STD_FLOOR,
) -> Tare:
    """Tare from a recording: stamps ``t`` (N,) (s), wrenches ``f`` (N, 6) (N, N m, sensor
    frame, in the estimator's sign convention), and, with a known payload ``theta_known`` (10,),
    its regressor rows ``Y`` (N, 6, p >= 10). ``theta_known=None``: the payload is removed.
    ``noise_floor`` (r,): the lower bound of ``noise_std``; its length is the channels' (joint
    torques: ``f`` (N, n), ``Y`` (N, n, p))."""
    t = np.asarray(t, dtype=float).reshape(-1)
    f = np.asarray(f, dtype=float)
    r = np.size(noise_floor)
    if f.shape != (t.size, r):
        raise ValueError(f"need f (N, {r}) for N={t.size} stamps, got {f.shape}")
    if t.size < 2:
        raise ValueError(f"a tare needs at least 2 samples, got {t.size}")
    if not (np.isfinite(t).all() and np.isfinite(f).all()):
        raise ValueError("the tare recording has non-finite stamps or wrenches")
    if theta_known is None:
        theta_known = np.zeros(N_BODY_PARAMS)
        residual = f
    else:
        theta_known = np.asarray(theta_known, dtype=float).reshape(-1)
        if theta_known.shape != (N_BODY_PARAMS,) or not np.isfinite(theta_known).all():
            raise ValueError(f"theta_known must be 10 finite values, got {theta_known}")
        if Y is None:
            raise ValueError("a tare with a known payload needs its regressor rows Y")
        Y = np.asarray(Y, dtype=float)
        if Y.ndim != 3 or Y.shape[:2] != (t.size, r) or Y.shape[2] < N_BODY_PARAMS:
            raise ValueError(
                f"need regressor rows Y (N, {r}, p >= 10) for N={t.size}, got {Y.shape}"
            )
        residual = f - Y[:, :, :N_BODY_PARAMS] @ theta_known
    noise_std = np.maximum(residual.std(axis=0, ddof=1), noise_floor)
    return Tare(
        offset=residual.mean(axis=0),
        offset_std=noise_std / np.sqrt(t.size),
        noise_std=noise_std,
        n_samples=int(t.size),
        t=float(t.max()),
        theta_known=theta_known,
    )


def tare_from_window(
    window: SlidingWindow, theta_known: np.ndarray | None = None, duration: float = 0.0
) -> Tare:
    """:func:`tare_offset` of the newest ``duration`` s (0: all) of an estimator's window (its
    rows, with or without offset columns, and wrenches)."""
    t, Y, f = window.samples(duration)
    return tare_offset(t, f, Y, theta_known)


def with_tare(
    problem: Problem,
    tare: Tare,
    t: float,
    sigma: np.ndarray | None = None,
    drift_rate: np.ndarray = DEFAULT_OFFSET_DRIFT_RATE,
) -> Problem:
    """``problem`` (one body, ``x = [theta (10,), offset (r,)]``: the F/T offset, r = 6, or the
    joints' torque offset changes) with the tare as a prior on the offset at time ``t`` (s):
    weights ``W_c = sigma_c^2 / v_c`` (see the module docstring); ``sigma`` (r,) the window's
    per-channel residual standard deviation (N, N m; default the tare's ``noise_std``);
    ``drift_rate`` (r,). A prior the problem already has on ``theta`` is kept."""
    r = tare.offset.size
    offsets = slice(N_BODY_PARAMS, N_BODY_PARAMS + r)
    if problem.n_bodies != 1 or problem.n_params != N_BODY_PARAMS + r:
        raise ProblemError(
            f"a tare of {r} offsets applies to a payload problem estimating them "
            f"(one body, {N_BODY_PARAMS + r} parameters: estimate_offset=True), "
            f"got {problem.n_bodies} bodies and {problem.n_params} parameters"
        )
    sigma = tare.noise_std if sigma is None else np.asarray(sigma, dtype=float).reshape(-1)
    if sigma.shape != (r,) or not np.all(np.isfinite(sigma) & (sigma > 0)):
        raise ValueError(f"sigma must be {r} finite values > 0 (N, N m), got {sigma}")
    offset_weight = (sigma / np.maximum(tare.offset_std_at(t, drift_rate), 1e-12)) ** 2
    prior = np.zeros(problem.n_params) if problem.prior is None else problem.prior.copy()
    prior[offsets] = tare.offset
    if not problem.has_prior_term:
        weight = np.zeros(problem.n_params)
        weight[offsets] = offset_weight
    else:
        weight = problem.weight_matrix.copy()
        if np.any(weight[offsets, :] != 0) or np.any(weight[:, offsets] != 0):
            raise ProblemError(
                "the problem's prior already weights the offsets; a tare would replace it"
            )
        weight[offsets, offsets] = np.diag(offset_weight)
    return dataclasses.replace(problem, prior=prior, prior_weight=weight)


class TareHost(Protocol):
    """What an :class:`OffsetTare` needs of the estimator that holds it (an
    :class:`~inertia_id_ros.online.estimator.OnlineEstimator` whose window is a
    :class:`~inertia_id_ros.online.window.SlidingWindow`)."""

    def process(self) -> int:
        """Turn the buffered samples into window rows."""

    def read_window(self, read: Callable[[SlidingWindow], T]) -> T:
        """``read(window)`` under the estimator's lock."""

    def restart(self) -> None:
        """Forget the samples (the window, the buffered inputs) and the previous solution."""


class OffsetTare:
    """The offset tare a payload estimator's solves use (one at a time; the rule of this
    module), recorded from the newest samples of the window of ``host``. ``noise_floor`` (r,):
    the floor of the tare's ``noise_std``, one per channel (:func:`tare_offset`);
    ``sample_name``: the window's samples, plural, in messages (``"wrenches"``); ``inputs``: what
    must stream for them (``"the inputs"``)."""

    def __init__(
        self,
        host: TareHost,
        noise_floor: np.ndarray = NOISE_STD_FLOOR,
        sample_name: str = "wrenches",
        inputs: str = "the inputs",
    ) -> None:
        self._host = host
        self.noise_floor = np.asarray(noise_floor, dtype=float)
        self.sample_name = sample_name
        self.inputs = inputs
        self._tare: Tare | None = None

    @property
    def current(self) -> Tare | None:
        """The tare every solve uses, or ``None``."""
        return self._tare

    def set(self, duration: float = 1.0, theta_known: np.ndarray | None = None) -> Tare:
        """Tare the offsets from the newest ``duration`` s (> 0) of the window's samples (the
        buffered ones are processed first), recorded with the payload removed
        (``theta_known=None``) or with the known payload ``theta_known`` (10,) attached (about
        the payload's frame). Replaces the previous tare. With the payload removed the
        estimator restarts: its window's samples belong to the payload that was removed.

        Raises :class:`~inertia_id_ros.errors.EstimateUnavailable` (``too_few_samples``) when
        the window holds less than half of ``duration``, ValueError for an invalid ``duration``
        or ``theta_known``.
        """
        if not (duration > 0 and np.isfinite(duration)):
            raise ValueError(f"the tare duration must be positive (s), got {duration}")
        self._host.process()
        tare = self._host.read_window(lambda window: self._record(window, duration, theta_known))
        if theta_known is None:
            self._host.restart()
        return tare

    def _record(
        self, window: SlidingWindow, duration: float, theta_known: np.ndarray | None
    ) -> Tare:
        """The tare of the newest ``duration`` s of ``window``, kept (the host's lock held)."""
        t, Y, y = window.samples(duration, copy=False)
        span = float(t[-1] - t[0]) if t.size else 0.0
        if t.size < 2 or span < 0.5 * duration:
            raise EstimateUnavailable(
                "too_few_samples",
                (
                    f"the window holds {t.size} {self.sample_name} over {span:.2f} s "
                    f"for a {duration:g} s tare: keep the payload removed (or the known "
                    "one attached) "
                    f"that long with {self.inputs} streaming, then tare"
                ),
            )
        self._tare = tare_offset(t, y, Y, theta_known, noise_floor=self.noise_floor)
        return self._tare

    def clear(self) -> None:
        """Forget the tare."""
        self._tare = None

    def carry_over(self, t: float, newest: Iterable[float | None]) -> None:
        """A clock reset: the sample stamped ``t`` (s) starts a new time base after inputs
        stamped up to ``newest`` (s, each input's newest; ``None``: none yet) in the old one.
        The tare stays, as old as it was."""
        tare = self._tare
        if tare is not None:
            latest = max(v for v in (*newest, tare.t) if v is not None)
            self._tare = dataclasses.replace(tare, t=t - (latest - tare.t))
