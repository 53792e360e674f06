"""Savitzky–Golay smoothing and differentiation, on uniform samples and at arbitrary query times.

Online, joint states and wrenches come with their own stamps: :func:`joint_states_at` fits a local
polynomial (least squares over the samples within ``half_width`` seconds of each query time; the
Savitzky–Golay filter generalised to non-uniform stamps) and evaluates it and its derivatives at
the wrench stamps: interpolation and differentiation in one step. The fits' normal equations
come from running sums over the samples, shifted to each query (windows are gathered only where
they are short, the queries sparse or a sample not finite).
:func:`check_coverage` tells which query times the joint states cover without a gap. Offline, on
uniformly sampled data, :func:`savgol_derivatives` wraps ``scipy.signal.savgol_filter``.
"""

from __future__ import annotations

from functools import lru_cache
from math import comb, factorial

import numpy as np

_EDGE_TOLERANCE = 1e-9
"""Relative widening of the fit window so samples exactly at ``t +- half_width`` are included."""

_CHUNK_ELEMENTS = 65536
"""Gathered samples (queries x samples per window x columns) fitted together by
:func:`_gathered_fit`: 512 kB, small enough to stay in the CPU's cache."""

_SHIFT_GROWTH = 1e3
"""Bound on the factor by which shifting running sums to a query multiplies their rounding,
``(span / half_width + 1)^(2 order)`` for queries spanning ``span`` (:func:`_moment_span`): the
fits from running sums stay within about 1e-10 of each window's own least squares."""

_MIN_WINDOWED = 3000
"""A chunk of queries is fitted from running sums only if their windows hold this many samples
in all (the sums' fixed cost is some 0.2 ms) and :data:`_MIN_OVERLAP` times the samples they
span; other chunks (short windows, sparse queries) are gathered (:func:`_gathered_fit`). Both
thresholds measured on 1 kHz joint states, half-widths 0.0125-0.2 s, orders 2 and 4."""

_MIN_OVERLAP = 8.0
"""See :data:`_MIN_WINDOWED`: dense queries, whose windows overlap this many times."""

RECORDED_GAP_STEPS = 10.0
"""A step of recorded (not fitted) signals longer than this many median steps is a gap between
two runs: they are interpolated on either side, never across it."""

COVERAGE_OK = ""
COVERAGE_PENDING = "pending"
COVERAGE_NO_SAMPLES = "no_joint_state"
COVERAGE_GAP = "gap"
COVERAGE_SPARSE = "sparse"


def fit_window(
    t: np.ndarray, t_query: np.ndarray, half_width: float
) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)`` (M,): the samples ``t[lo:hi]`` within ``half_width`` of each query time (edges
    included, with a relative tolerance of 1e-9) are those a local fit uses."""
    reach = half_width * (1.0 + _EDGE_TOLERANCE)
    return (
        np.searchsorted(t, t_query - reach, side="left"),
        np.searchsorted(t, t_query + reach, side="right"),
    )


def local_polynomial_derivatives(
    t: np.ndarray,
    x: np.ndarray,
    t_query: np.ndarray,
    half_width: float,
    order: int = 2,
    n_derivatives: int = 2,
) -> np.ndarray:
    """Local polynomial fit of ``x`` at each query time, and its derivatives there.

    ``t`` (K,) increasing sample times (s), ``x`` (K, n) samples, ``t_query`` (M,) (s). For each
    query ``tq``, a polynomial of degree ``order`` in ``t - tq`` is fitted by least squares to the
    samples with ``|t - tq| <= half_width``; returns (M, n_derivatives + 1, n): the fit's value and
    derivatives 1..n_derivatives (units of x per s^k) at ``tq``. At uniform stamps with ``tq`` on a
    sample this is the Savitzky–Golay filter of window ``2 half_width / dt + 1``. Raises
    ``ValueError`` if a query has fewer than ``order + 1`` samples in its window.
    """
    t = np.asarray(t, dtype=float)
    x = np.asarray(x, dtype=float)
    t_query = np.atleast_1d(np.asarray(t_query, dtype=float))
    if x.ndim == 1:
        return local_polynomial_derivatives(
            t, x[:, None], t_query, half_width, order, n_derivatives
        )[:, :, 0]
    if t.ndim != 1 or x.shape[0] != t.shape[0]:
        raise ValueError(f"t (K,) and x (K, n) must have the same length, got {t.shape}, {x.shape}")
    if not 0 <= n_derivatives <= order:
        raise ValueError(f"n_derivatives must be in [0, order={order}], got {n_derivatives}")
    if not half_width > 0:
        raise ValueError(f"half_width must be positive (s), got {half_width}")
    lo, hi = fit_window(t, t_query, half_width)
    counts = hi - lo
    if t_query.size == 0:
        return np.zeros((0, n_derivatives + 1, x.shape[1]))
    if counts.min() < order + 1:
        bad = t_query[counts < order + 1]
        raise ValueError(
            f"{bad.size} query time(s) (first {bad[0]:.6f} s) have fewer than "
            f"{order + 1} samples within {half_width} s for a degree-{order} fit"
        )
    scale = np.array([factorial(k) / half_width**k for k in range(n_derivatives + 1)])
    order_queries = None if np.all(np.diff(t_query) >= 0) else np.argsort(t_query, kind="stable")
    if order_queries is not None:
        t_query, lo, hi = t_query[order_queries], lo[order_queries], hi[order_queries]
    out = np.empty((t_query.size, n_derivatives + 1, x.shape[1]))
    gathered = np.ones(t_query.size, dtype=bool)
    for start, end in _dense_chunks(t_query, lo, hi, half_width, order):
        part = slice(start, end)
        if np.isfinite(x[lo[start] : hi[end - 1]]).all():
            fit = _moment_fit(t, x, t_query[part], lo[part], hi[part], half_width, order)
            out[part] = fit[:, : n_derivatives + 1] * scale[:, None]  # tau = (t - tq) / h
            gathered[part] = False
    if gathered.any():
        rest = slice(None) if gathered.all() else gathered
        fit = _gathered_fit(t, x, t_query[rest], lo[rest], hi[rest], half_width, order)
        out[rest] = fit[:, : n_derivatives + 1] * scale[:, None]
    if order_queries is not None:
        out[order_queries] = out.copy()
    return out


def _dense_chunks(
    t_query: np.ndarray, lo: np.ndarray, hi: np.ndarray, half_width: float, order: int
) -> list[tuple[int, int]]:
    """``[(start, end)]``: the chunks of the queries ``t_query`` (M,) (s, increasing; their
    windows ``t[lo:hi]``) worth fitting from running sums (:data:`_MIN_WINDOWED`,
    :data:`_MIN_OVERLAP`), each spanning at most :func:`_moment_span` half-widths."""
    cell = (t_query - t_query[0]) // (_moment_span(order) * half_width)
    starts = np.concatenate([[0], np.flatnonzero(np.diff(cell)) + 1])
    ends = np.append(starts[1:], t_query.size)
    windowed = np.add.reduceat(hi - lo, starts)  # samples in the windows of each chunk
    spanned = hi[ends - 1] - lo[starts]  # samples the chunk's windows reach
    dense = (windowed >= _MIN_WINDOWED) & (windowed >= _MIN_OVERLAP * spanned)
    return list(zip(starts[dense].tolist(), ends[dense].tolist()))


def _moment_span(order: int) -> float:
    """Query times fitted from one set of running sums span at most this many half-widths: the
    shift's growth ``(span + 1)^(2 order)`` stays below :data:`_SHIFT_GROWTH` (4.6 for order 2,
    1.4 for order 4; at most 8, for order 1)."""
    return min(8.0, _SHIFT_GROWTH ** (1.0 / (2 * order)) - 1.0)


def _moment_fit(
    t: np.ndarray,
    x: np.ndarray,
    t_query: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    half_width: float,
    order: int,
) -> np.ndarray:
    """(M, order + 1, n) coefficients of the local fits at ``t_query`` (M,) (s, increasing, within
    :func:`_moment_span` half-widths), in ``tau = (t - tq) / half_width``, over the samples
    ``t[lo:hi]`` of each: the normal equations from running sums of ``u^j`` and ``u^j x`` in
    ``u = (t - centre) / half_width``, shifted to each query by the binomial theorem. O(samples +
    queries) instead of gathering every window; ``x`` finite (a NaN would spoil the sums after
    it; a huge finite spike, say 1e5 times the signal, costs every fit of the chunk a few
    digits, not only those whose windows hold it)."""
    a, b = int(lo.min()), int(hi.max())
    centre = 0.5 * (t_query[0] + t_query[-1])
    n_powers = 2 * order + 1
    powers = _powers((t[a:b] - centre) / half_width, n_powers)  # (K, 2 order + 1)
    origin = x[a]  # the fits are affine-equivariant: fitting x - x[a] keeps the sums small
    weighted = powers[:, : order + 1, None] * (x[a:b] - origin)[:, None, :]  # (K, order + 1, n)
    sums = np.zeros((b - a + 1, n_powers))
    np.cumsum(powers, axis=0, out=sums[1:])
    weighted_sums = np.zeros((b - a + 1, order + 1, x.shape[1]))
    np.cumsum(weighted, axis=0, out=weighted_sums[1:])
    first, last = lo - a, hi - a
    # sum of (u - d)^p = sum_j C(p, j) (-d)^(p - j) sum of u^j, with d = (tq - centre) / h
    binomial, exponent = _binomial_shift(n_powers)
    shift = _powers((centre - t_query) / half_width, n_powers)[:, exponent] * binomial
    moments = (shift @ (sums[last] - sums[first])[:, :, None])[:, :, 0]  # (M, 2 order + 1)
    rhs = shift[:, : order + 1, : order + 1] @ (weighted_sums[last] - weighted_sums[first])
    index = np.add.outer(np.arange(order + 1), np.arange(order + 1))
    coefficients = np.linalg.solve(moments[:, index], rhs)
    coefficients[:, 0] += origin
    return coefficients


def _powers(values: np.ndarray, count: int) -> np.ndarray:
    """(M, count) ``values`` (M,) to the powers 0 .. count - 1."""
    out = np.empty((values.size, count))
    out[:, 0] = 1.0
    for k in range(1, count):
        np.multiply(out[:, k - 1], values, out=out[:, k])
    return out


@lru_cache(maxsize=None)
def _binomial_shift(count: int) -> tuple[np.ndarray, np.ndarray]:
    """``(C, e)`` (count, count): ``C[p, j] = binomial(p, j)`` (0 above the diagonal) and
    ``e[p, j] = max(p - j, 0)``, so ``sum (u - d)^p = sum_j C[p, j] (-d)^e[p, j] sum u^j``."""
    p = np.arange(count)
    binomial = np.array([[comb(int(i), int(j)) for j in p] for i in p], dtype=float)
    return binomial, np.maximum(p[:, None] - p[None, :], 0)


def _gathered_fit(
    t: np.ndarray,
    x: np.ndarray,
    t_query: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    half_width: float,
    order: int,
) -> np.ndarray:
    """:func:`_moment_fit` by gathering each query's window of samples and solving its least
    squares apart: a non-finite sample spoils only the fits whose windows hold it."""
    counts = hi - lo
    out = np.empty((t_query.size, order + 1, x.shape[1]))
    step = max(1, _CHUNK_ELEMENTS // (int(counts.max()) * max(x.shape[1], 1)))
    for chunk in range(0, t_query.size, step):  # bounds the (M, K, n) gathered samples
        part = slice(chunk, chunk + step)
        offsets = np.arange(counts[part].max())
        inside = offsets < counts[part, None]  # (M, K)
        index = np.where(inside, lo[part, None] + offsets, lo[part, None])
        tau = np.where(inside, (np.take(t, index) - t_query[part, None]) / half_width, 0.0)
        powers = [inside.astype(float)]
        for _ in range(order):
            powers.append(powers[-1] * tau)
        basis = np.stack(powers, axis=-1)  # (M, K, order + 1), zero rows outside the window
        basis_t = basis.transpose(0, 2, 1)
        out[part] = np.linalg.solve(basis_t @ basis, basis_t @ np.take(x, index, axis=0))
    return out


def joint_states_at(
    t: np.ndarray,
    q: np.ndarray,
    dq: np.ndarray | None,
    t_query: np.ndarray,
    half_width: float,
    order: int = 2,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Joint positions, velocities, accelerations (M, n) at ``t_query`` (M,) (s).

    ``t`` (K,) joint-state stamps, ``q`` (K, n) positions, ``dq`` (K, n) measured velocities or
    ``None``. Positions come from the local polynomial fit of ``q``; velocities from the fit of
    ``dq`` when given (else the fit's derivative of ``q``); accelerations from the derivative of
    the velocity fit (else the second derivative of the ``q`` fit); see
    :func:`local_polynomial_derivatives`.
    """
    q = np.asarray(q, dtype=float)
    n = q.shape[1]
    if dq is None:
        if order < 2:
            raise ValueError(f"differentiating positions twice needs order >= 2, got {order}")
        fit = local_polynomial_derivatives(t, q, t_query, half_width, order, 2)
        return fit[:, 0], fit[:, 1], fit[:, 2]
    dq = np.asarray(dq, dtype=float)
    if dq.shape != q.shape:
        raise ValueError(f"dq must have the shape of q {q.shape}, got {dq.shape}")
    fit = local_polynomial_derivatives(t, np.hstack([q, dq]), t_query, half_width, order, 1)
    return fit[:, 0, :n], fit[:, 0, n:], fit[:, 1, n:]


def joint_states_at_mixed(
    t: np.ndarray,
    q: np.ndarray,
    dq: np.ndarray,
    has_dq: np.ndarray,
    t_query: np.ndarray,
    half_width: float,
    order: int = 2,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`joint_states_at` for joint states that carry measured velocities only sometimes.

    ``t`` (K,) stamps (s), ``q`` (K, n), ``dq`` (K, n) (any value where absent), ``has_dq`` (K,)
    whether sample ``k`` has measured velocities. Returns positions, velocities, accelerations
    (M, n) at ``t_query`` (M,): from the fit of the measured velocities for the queries whose whole
    fit window has them, else by differentiating the positions. Only the samples within some
    query's fit window are read (an online estimator's history is longer than its batch's reach).
    """
    lo, hi = fit_window(t, t_query, half_width)
    if lo.size:  # the same fits on the samples they reach: lo and hi shift alike
        reach = slice(int(lo.min()), int(hi.max()))
        t, q, dq, has_dq = t[reach], q[reach], dq[reach], has_dq[reach]
        lo, hi = lo - reach.start, hi - reach.start
    missing = np.concatenate([[0], np.cumsum(np.asarray(has_dq) == 0)])
    with_velocity = (missing[hi] - missing[lo]) == 0
    shape = (np.size(t_query), np.shape(q)[1])
    out = (np.empty(shape), np.empty(shape), np.empty(shape))
    for use_dq in (True, False):
        select = with_velocity if use_dq else ~with_velocity
        if select.any():
            values = joint_states_at(
                t, q, dq if use_dq else None, t_query[select], half_width, order
            )
            for array, value in zip(out, values):
                array[select] = value
    return out


def derivatives_at_samples(
    t: np.ndarray,
    q: np.ndarray,
    dq: np.ndarray | None,
    half_width: float,
    order: int = 2,
    trim: float | None = None,
    chunk: int = 5000,
    delay: float = 0.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Zero-phase differentiation of a recording at its own stamps (offline).

    ``t`` (K,) increasing stamps (s), ``q`` (K, n), ``dq`` (K, n) recorded velocities or ``None``.
    The local polynomial of degree ``order`` over ``half_width`` s on each side of every sample
    (:func:`joint_states_at`: a recorded ``dq`` is differentiated once, else ``q`` twice) is
    centred on the sample, so no signal is delayed. Samples within ``trim`` s (default
    ``half_width``) of either end, or of a gap (a step longer than ``half_width``: between two
    runs of a log, :func:`inside_segments`), are dropped (their fits would be one-sided or
    span the gap). Returns
    ``(keep (M,) indices, q_fit, dq_fit, ddq)`` (M, n): the fitted positions and velocities
    (smoothed) and the accelerations at ``t[keep]``; ``chunk`` samples are fitted at once.
    With ``delay`` (s) they are those at ``t[keep] - delay`` (the motion ``delay`` before each
    sample's stamp, for efforts that lag the motion).
    """
    t = np.asarray(t, dtype=float)
    trim = half_width if trim is None else trim
    keep = np.flatnonzero(inside_segments(t, t - delay, trim, half_width))
    fitted = [
        joint_states_at(t, q, dq, t[keep[start : start + chunk]] - delay, half_width, order)
        for start in range(0, keep.size, chunk)
    ]
    if not fitted:
        n = np.shape(q)[1]
        return keep, np.zeros((0, n)), np.zeros((0, n)), np.zeros((0, n))
    return (keep,) + tuple(np.vstack([f[k] for f in fitted]) for k in range(3))


def inside_segments(t: np.ndarray, times: np.ndarray, trim: float, max_step: float) -> np.ndarray:
    """(M,) bool: whether each of ``times`` (M,) s lies at least ``trim`` s inside one segment
    of the stamps ``t`` (K,) s (increasing), the segments split where a step exceeds
    ``max_step`` s (a gap: a fit or an interpolation there would span two runs). One segment
    (no gap): ``t[0] + trim <= time <= t[-1] - trim``."""
    t = np.asarray(t, dtype=float)
    times = np.asarray(times, dtype=float)
    breaks = np.flatnonzero(np.diff(t) > max_step)
    starts = np.concatenate([t[:1], t[breaks + 1]])
    ends = np.concatenate([t[breaks], t[-1:]])
    k = np.searchsorted(starts, times, side="right") - 1
    inside = k >= 0
    k = np.clip(k, 0, None)
    return inside & (times - trim >= starts[k]) & (times + trim <= ends[k])


def check_coverage(
    t: np.ndarray, t_query: np.ndarray, half_width: float, max_gap: float, order: int = 2
) -> np.ndarray:
    """Whether the samples at ``t`` (K,) (s, increasing) support a fit at each of ``t_query`` (M,).

    Returns (M,) strings: ``""`` ready; ``"pending"`` the newest sample is before
    ``tq + half_width`` (wait for more); ``"no_joint_state"`` no sample at or before
    ``tq - half_width``; ``"gap"`` two consecutive samples around the window
    ``[tq - half_width, tq + half_width]`` (bracketing samples included) are more than
    ``max_gap`` s apart (the fit never spans a gap); ``"sparse"`` fewer than ``order + 1`` samples
    in the window.
    """
    t = np.asarray(t, dtype=float)
    t_query = np.atleast_1d(np.asarray(t_query, dtype=float))
    reach = half_width * (1.0 + _EDGE_TOLERANCE)
    status = np.full(t_query.shape, COVERAGE_OK, dtype=object)
    if t.size == 0:
        status[:] = COVERAGE_PENDING
        return status
    first = np.searchsorted(t, t_query - reach, side="right") - 1  # last sample <= tq - h
    last = np.searchsorted(t, t_query + half_width * (1.0 - _EDGE_TOLERANCE), side="left")
    lo, hi = fit_window(t, t_query, half_width)
    counts = hi - lo
    gaps = np.flatnonzero(np.diff(t) > max_gap)  # gap i is between samples i and i + 1
    end = np.minimum(last, t.size - 1)
    spans_gap = (
        np.searchsorted(gaps, end, side="left")
        - np.searchsorted(gaps, np.maximum(first, 0), side="left")
    ) > 0
    status[counts < order + 1] = COVERAGE_SPARSE
    status[last >= t.size] = COVERAGE_PENDING
    status[spans_gap] = COVERAGE_GAP
    status[first < 0] = COVERAGE_NO_SAMPLES
    return status


def savgol_derivatives(
    x: np.ndarray, dt: float, window_length: int, polyorder: int = 2
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Savitzky–Golay smoothing and first two derivatives of uniform samples ``x`` (N, ...) along
    axis 0, sample period ``dt`` (s); ``window_length`` odd (samples). Returns
    ``(x_smooth, dx/dt, d2x/dt2)`` (``scipy.signal.savgol_filter``, ``mode="interp"``)."""
    from scipy.signal import savgol_filter  # here: scipy.signal takes ~1 s to import

    x = np.asarray(x, dtype=float)
    if window_length % 2 != 1 or window_length <= polyorder:
        raise ValueError(
            f"window_length must be odd and > polyorder={polyorder}, got {window_length}"
        )
    if x.shape[0] < window_length:
        raise ValueError(f"need at least window_length={window_length} samples, got {x.shape[0]}")
    smooth, first, second = (
        savgol_filter(x, window_length, polyorder, deriv=k, delta=dt, axis=0, mode="interp")
        for k in range(3)
    )
    return smooth, first, second
