"""Sliding time window of regressor rows, with the normal equations of the samples in it."""

from __future__ import annotations

from typing import Any

import numpy as np

WRENCH_ROWS = 6
"""Rows of ``Y`` per sample (one wrench)."""


class SlidingWindow:
    """The samples ``(t_i, Y_i (6, p), f_i (6,))`` of the last ``window_sec`` seconds.

    Samples older than ``window_sec`` behind the newest one are dropped; so are the oldest ones
    beyond ``capacity`` samples (bounded memory: preallocated buffers of ``2 capacity`` samples,
    kept contiguous so the normal equations are one matrix product). ``p`` is fixed by
    ``n_params`` or by the first sample. Not thread-safe (the estimator locks around it).
    """

    def __init__(self, window_sec: float, n_params: int | None = None,
                 capacity: int = 20000) -> None:
        if not window_sec > 0:
            raise ValueError(f"window_sec must be positive (s), got {window_sec}")
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1 sample, got {capacity}")
        self.window_sec = float(window_sec)
        self.capacity = int(capacity)
        self._start = 0
        self._end = 0
        self._t = np.empty(2 * self.capacity)
        self._Y: np.ndarray | None = None
        self._f = np.empty((2 * self.capacity, WRENCH_ROWS))
        if n_params is not None:
            self._allocate(n_params)

    def _allocate(self, n_params: int) -> None:
        self._Y = np.empty((2 * self.capacity, WRENCH_ROWS, n_params))

    @property
    def n_params(self) -> int | None:
        """Columns ``p`` of the regressor (``None`` before the first sample)."""
        return None if self._Y is None else self._Y.shape[2]

    def __len__(self) -> int:
        return self._end - self._start

    @property
    def t_first(self) -> float | None:
        """Stamp of the oldest sample (s), ``None`` when empty."""
        return float(self._t[self._start]) if len(self) else None

    @property
    def t_last(self) -> float | None:
        """Stamp of the newest sample (s), ``None`` when empty."""
        return float(self._t[self._end - 1]) if len(self) else None

    def clear(self) -> None:
        """Drop all samples (the parameter count stays)."""
        self._start = self._end = 0

    def append(self, t: float, Y: np.ndarray, f: np.ndarray) -> None:
        """Add one sample: stamp ``t`` (s), regressor ``Y`` (6, p), wrench ``f`` (6,)."""
        Y = np.asarray(Y, dtype=float)
        self.extend(np.array([t], dtype=float), Y[None], np.asarray(f, dtype=float)[None])

    def extend(self, t: np.ndarray, Y: np.ndarray, f: np.ndarray) -> None:
        """Add samples with non-decreasing stamps ``t`` (N,) (s, not older than the newest held),
        regressors ``Y`` (N, 6, p) and wrenches ``f`` (N, 6)."""
        t = np.asarray(t, dtype=float).reshape(-1)
        Y = np.asarray(Y, dtype=float)
        f = np.asarray(f, dtype=float)
        n = t.shape[0]
        if Y.ndim != 3 or Y.shape[:2] != (n, WRENCH_ROWS) or f.shape != (n, WRENCH_ROWS):
            raise ValueError(f"need Y (N, 6, p) and f (N, 6) for N={n} stamps, got {Y.shape} "
                             f"and {f.shape}")
        if self._Y is None:
            self._allocate(Y.shape[2])
        if Y.shape[2] != self.n_params:
            raise ValueError(f"Y has {Y.shape[2]} columns, the window holds {self.n_params}")
        if n == 0:
            return
        if np.any(np.diff(t) < 0) or (len(self) and t[0] < self._t[self._end - 1]):
            raise ValueError("stamps must be non-decreasing and not older than the newest sample")
        if n > self.capacity:
            t, Y, f = t[-self.capacity:], Y[-self.capacity:], f[-self.capacity:]
            n = self.capacity
        if self._end + n > 2 * self.capacity:  # move the live samples to the front
            keep = min(len(self), self.capacity)
            src = slice(self._end - keep, self._end)
            self._t[:keep], self._Y[:keep], self._f[:keep] = self._t[src], self._Y[src], self._f[src]
            self._start, self._end = 0, keep
        new = slice(self._end, self._end + n)
        self._t[new], self._Y[new], self._f[new] = t, Y, f
        self._end += n
        oldest_kept = np.searchsorted(self._t[self._start:self._end],
                                      self._t[self._end - 1] - self.window_sec, side="left")
        self._start = max(self._start + int(oldest_kept), self._end - self.capacity)

    def _slice(self, duration: float) -> slice:
        if duration < 0:
            raise ValueError(f"duration must be >= 0 (s; 0 = the whole window), got {duration}")
        start = self._start
        if duration > 0 and len(self):
            start += int(np.searchsorted(self._t[self._start:self._end],
                                         self._t[self._end - 1] - duration, side="left"))
        return slice(start, self._end)

    def count(self, duration: float = 0.0) -> int:
        """Samples in the newest ``duration`` seconds (0: the whole window)."""
        s = self._slice(duration)
        return s.stop - s.start

    def samples(self, duration: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Copies ``(t (N,), Y (N, 6, p), f (N, 6))`` of the newest ``duration`` seconds
        (0: the whole window)."""
        s = self._slice(duration)
        if self._Y is None:
            return np.zeros(0), np.zeros((0, WRENCH_ROWS, 0)), np.zeros((0, WRENCH_ROWS))
        return self._t[s].copy(), self._Y[s].copy(), self._f[s].copy()

    def normal_equations(self, duration: float = 0.0) -> tuple[np.ndarray, np.ndarray, float, int]:
        """``(Y^T Y (p, p), Y^T y (p,), y^T y, rows)`` of the stacked rows of the newest
        ``duration`` seconds (0: the whole window)."""
        if self._Y is None:
            raise ValueError("the window has never held a sample (unknown parameter count)")
        s = self._slice(duration)
        Y = self._Y[s].reshape(-1, self.n_params)
        y = self._f[s].reshape(-1)
        return Y.T @ Y, Y.T @ y, float(y @ y), Y.shape[0]

    def problem(self, duration: float = 0.0, n_bodies: int = 1, **problem_fields: Any):
        """:class:`inertia_id_ros.solvers.Problem` of the newest ``duration`` seconds (0: the whole
        window); ``problem_fields`` are its other fields (``prior``, ``nonnegative``, ...)."""
        from inertia_id_ros.solvers import Problem

        gram, moment, yty, rows = self.normal_equations(duration)
        return Problem(gram=gram, moment=moment, yty=yty, n_rows=rows, n_bodies=n_bodies,
                       **problem_fields)
