"""Time windows of regressor rows, with the normal equations of the samples in them: every row
(:class:`SlidingWindow`), or normal equations per block of samples (:class:`BlockWindow`); both
are a :class:`Window`, what the estimators hold."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from inertia_id_ros.core.covariance import ChannelNormalEquations
from inertia_id_ros.online.window_products import BlockProducts
from inertia_id_ros.solvers import Problem

WRENCH_ROWS = 6
"""Rows of ``Y`` per sample (one wrench)."""


class Window(Protocol):
    """What an online estimator needs of its window (:class:`SlidingWindow`, :class:`BlockWindow`):
    samples ``(t_i, Y_i (r, p), f_i (r,))`` added in time order, forgotten when older than
    ``window_sec`` (s) behind the newest, counted and stamped over the newest ``duration`` s
    (0: all) or up to a stamp ``until`` (s; a window that cannot select a past interval raises
    ValueError). Not thread-safe (the estimator locks around it)."""

    @property
    def window_sec(self) -> float:
        """Length of the window (s)."""

    @property
    def capacity(self) -> int:
        """Samples held at most (0: no per-sample storage)."""

    @property
    def rows_per_sample(self) -> int:
        """Rows ``r`` of a sample."""

    @property
    def n_params(self) -> int | None:
        """Columns ``p`` of the regressor (``None`` until known)."""

    @property
    def t_last(self) -> float | None:
        """Stamp of the newest sample (s), ``None`` when empty."""

    def __len__(self) -> int: ...

    def clear(self) -> None:
        """Drop all samples."""

    def drop_before(self, t: float) -> None:
        """Drop the samples stamped before ``t`` (s)."""

    def resize(self, window_sec: float, capacity: int) -> None:
        """A new length (s) and capacity (samples), keeping the newest samples that fit."""

    def extend(self, t: np.ndarray, Y: np.ndarray, f: np.ndarray) -> int:
        """Add samples stamped ``t`` (N,) (s), rows ``Y`` (N, r, p), measurements ``f`` (N, r);
        returns how many samples still within ``window_sec`` were dropped for capacity."""

    def count(self, duration: float = 0.0, until: float | None = None) -> int:
        """Samples in the newest ``duration`` s (0: all), or in the ``duration`` s up to
        ``until`` (s)."""

    def stamps(self, duration: float = 0.0, until: float | None = None) -> np.ndarray:
        """Stamps (N,) (s) of the samples :meth:`count` counts, oldest first (valid until the
        next change)."""


class SampleBuffer:
    """Bounded FIFO of samples with named fields, kept contiguous in memory.

    ``fields``: name -> per-sample shape; ``buffer[name]`` is a view (N, *shape) of the samples
    held, oldest first, valid until the next change. Preallocated for ``2 capacity`` samples
    (appending moves the live samples to the front when the end is reached, so they stay one
    slice); adding beyond ``capacity`` drops the oldest. Not thread-safe.
    """

    def __init__(self, capacity: int, **fields: tuple[int, ...]) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1 sample, got {capacity}")
        self.capacity = int(capacity)
        self._arrays = {
            name: np.empty((2 * self.capacity, *shape)) for name, shape in fields.items()
        }
        self._start = 0
        self._end = 0
        self.appended = 0
        """Samples appended since the buffer was made (the newest's index + 1)."""

    def __len__(self) -> int:
        return self._end - self._start

    @property
    def first_index(self) -> int:
        """Index of the oldest sample held, counted in appended samples."""
        return self.appended - len(self)

    def __getitem__(self, name: str) -> np.ndarray:
        return self._arrays[name][self._start : self._end]

    def clear(self) -> None:
        """Drop all samples."""
        self._start = self._end = 0

    def drop_front(self, count: int) -> None:
        """Drop the ``count`` oldest samples."""
        self._start = min(self._start + max(int(count), 0), self._end)

    def append(self, **values: np.ndarray | float) -> int:
        """Append one sample (every field, of its per-sample shape); returns how many of the
        oldest were dropped (0 or 1)."""
        if self._end == 2 * self.capacity:  # move the newest samples to the front
            keep = len(self)
            for array in self._arrays.values():
                array[:keep] = array[self._end - keep : self._end]
            self._start, self._end = 0, keep
        for name, array in self._arrays.items():
            array[self._end] = values[name]
        self._end += 1
        self.appended += 1
        if len(self) > self.capacity:
            self._start += 1
            return 1
        return 0

    def extend(self, **values: np.ndarray) -> int:
        """Append N samples (every field, shape (N, *shape)); returns how many of the oldest were
        dropped to stay within ``capacity``."""
        if set(values) != set(self._arrays):
            raise ValueError(f"need the fields {sorted(self._arrays)}, got {sorted(values)}")
        n = len(next(iter(values.values())))
        if n > self.capacity:
            values = {name: value[-self.capacity :] for name, value in values.items()}
            skipped, n = n - self.capacity, self.capacity
        else:
            skipped = 0
        if self._end + n > 2 * self.capacity:  # move the newest samples to the front
            keep = min(len(self), 2 * self.capacity - n)
            for array in self._arrays.values():
                array[:keep] = array[self._end - keep : self._end]
            self._start, self._end = 0, keep
        for name, array in self._arrays.items():
            array[self._end : self._end + n] = values[name]
        self._end += n
        self.appended += n
        overflow = max(len(self) - self.capacity, 0)
        self._start += overflow
        return skipped + overflow


class SlidingWindow:
    """The samples ``(t_i, Y_i (r, p), f_i (r,))`` of the last ``window_sec`` seconds.

    ``r = rows_per_sample``: 6 for a wrench (default), ``n`` for the torques of ``n`` joints.
    Samples older than ``window_sec`` behind the newest one are dropped; so are the oldest ones
    beyond ``capacity`` samples (bounded memory, a :class:`SampleBuffer`). Each sample is stored
    as the augmented rows ``[Y_i | f_i]`` (r, p + 1), contiguous, so the normal equations are one
    product ``A^T A`` of the stacked rows. Products of blocks of samples are kept
    (:class:`~inertia_id_ros.online.window_products.BlockProducts`), so that normal equations
    over the window cost the samples added since and a bounded number of rows, not the window.
    ``p`` is fixed by ``n_params`` or by the first sample. Not thread-safe (the estimator locks
    around it).
    """

    def __init__(
        self,
        window_sec: float,
        n_params: int | None = None,
        capacity: int = 20000,
        rows_per_sample: int = WRENCH_ROWS,
    ) -> None:
        if not window_sec > 0:
            raise ValueError(f"window_sec must be positive (s), got {window_sec}")
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1 sample, got {capacity}")
        if rows_per_sample < 1:
            raise ValueError(f"rows_per_sample must be at least 1, got {rows_per_sample}")
        self.window_sec = float(window_sec)
        self.capacity = int(capacity)
        self.rows_per_sample = int(rows_per_sample)
        self._block_products = BlockProducts()
        """The kept products of blocks of the buffer's samples."""
        self._buffer = None if n_params is None else self._allocate(n_params)

    def _allocate(self, n_params: int) -> SampleBuffer:
        """An empty buffer for samples of ``n_params`` columns (no block products kept)."""
        self._block_products = BlockProducts()
        return SampleBuffer(self.capacity, t=(), rows=(self.rows_per_sample, n_params + 1))

    @property
    def n_params(self) -> int | None:
        """Columns ``p`` of the regressor (``None`` before the first sample)."""
        return None if self._buffer is None else self._buffer["rows"].shape[2] - 1

    def __len__(self) -> int:
        return 0 if self._buffer is None else len(self._buffer)

    @property
    def t_first(self) -> float | None:
        """Stamp of the oldest sample (s), ``None`` when empty."""
        t = self.stamps()
        return float(t[0]) if t.size else None

    @property
    def t_last(self) -> float | None:
        """Stamp of the newest sample (s), ``None`` when empty."""
        t = self.stamps()
        return float(t[-1]) if t.size else None

    def clear(self) -> None:
        """Drop all samples (the parameter count stays)."""
        if self._buffer is not None:
            self._buffer.clear()
        self._block_products.clear()

    def drop_before(self, t: float) -> None:
        """Drop the samples stamped before ``t`` (s)."""
        if self._buffer is not None:
            self._buffer.drop_front(int(np.searchsorted(self._buffer["t"], t, side="left")))

    def resize(self, window_sec: float, capacity: int) -> None:
        """Change the window's length (s) and capacity (samples), keeping the newest samples that
        fit both."""
        if not (window_sec > 0 and np.isfinite(window_sec)):
            raise ValueError(f"window_sec must be positive and finite (s), got {window_sec}")
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1 sample, got {capacity}")
        old = self._buffer
        self.window_sec, self.capacity = float(window_sec), int(capacity)
        if old is None:
            return
        t, rows = old["t"], old["rows"]
        keep = max(
            int(np.searchsorted(t, t[-1] - self.window_sec, side="left")) if t.size else 0,
            t.size - self.capacity,
        )
        self._buffer = self._allocate(rows.shape[2] - 1)
        self._buffer.extend(t=t[keep:], rows=rows[keep:])

    def append(self, t: float, Y: np.ndarray, f: np.ndarray) -> None:
        """Add one sample: stamp ``t`` (s), regressor ``Y`` (r, p), measurement ``f`` (r,)."""
        self.extend(
            np.array([t], dtype=float),
            np.asarray(Y, dtype=float)[None],
            np.asarray(f, dtype=float)[None],
        )

    def extend(self, t: np.ndarray, Y: np.ndarray, f: np.ndarray) -> int:
        """Add samples with non-decreasing stamps ``t`` (N,) (s, not older than the newest held),
        regressors ``Y`` (N, r, p) and measurements ``f`` (N, r) (wrenches, torques). Returns how
        many samples still within ``window_sec`` were dropped because ``capacity`` was reached
        (inputs faster than the window was sized for)."""
        t = np.asarray(t, dtype=float).reshape(-1)
        Y = np.asarray(Y, dtype=float)
        f = np.asarray(f, dtype=float)
        n = t.shape[0]
        r = self.rows_per_sample
        if Y.ndim != 3 or Y.shape[:2] != (n, r) or f.shape != (n, r):
            raise ValueError(
                f"need Y (N, {r}, p) and f (N, {r}) for N={n} stamps, got {Y.shape} and {f.shape}"
            )
        buffer = self._allocate(Y.shape[2]) if self._buffer is None else self._buffer
        self._buffer = buffer
        if Y.shape[2] != self.n_params:
            raise ValueError(f"Y has {Y.shape[2]} columns, the window holds {self.n_params}")
        if n == 0:
            return 0
        if np.any(np.diff(t) < 0) or (len(buffer) and t[0] < buffer["t"][-1]):
            raise ValueError("stamps must be non-decreasing and not older than the newest sample")
        overflow = buffer.extend(t=t, rows=np.concatenate([Y, f[:, :, None]], axis=2))
        stamps = buffer["t"]
        buffer.drop_front(int(np.searchsorted(stamps, stamps[-1] - self.window_sec, side="left")))
        return overflow

    def _slice(self, duration: float, until: float | None = None) -> slice:
        """The samples stamped in ``[end - duration, end]``, ``end`` = ``until`` (s) or the
        newest stamp; ``duration`` 0: every sample up to ``end``."""
        if duration < 0:
            raise ValueError(f"duration must be >= 0 (s; 0 = the whole window), got {duration}")
        if self._buffer is None or not len(self._buffer):
            return slice(0, 0)
        stamps = self._buffer["t"]
        stop = len(stamps) if until is None else int(np.searchsorted(stamps, until, side="right"))
        if duration == 0 or stop == 0:
            return slice(0, stop)
        end = stamps[stop - 1] if until is None else until
        return slice(int(np.searchsorted(stamps, end - duration, side="left")), stop)

    def count(self, duration: float = 0.0, until: float | None = None) -> int:
        """Samples in the newest ``duration`` seconds (0: the whole window), or in the
        ``duration`` s up to the stamp ``until`` (s) when given."""
        s = self._slice(duration, until)
        return s.stop - s.start

    def stamps(self, duration: float = 0.0, until: float | None = None) -> np.ndarray:
        """Stamps (N,) (s) of the samples :meth:`count` counts (a view, valid until the next
        change)."""
        if self._buffer is None:
            return np.zeros(0)
        return self._buffer["t"][self._slice(duration, until)]

    def samples(
        self, duration: float = 0.0, copy: bool = True, until: float | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(t (N,), Y (N, r, p), f (N, r))`` of the newest ``duration`` seconds (0: the whole
        window), or of the ``duration`` s up to the stamp ``until`` (s) when given; copies, or
        views valid until the next change if ``copy`` is false."""
        if self._buffer is None:
            r = self.rows_per_sample
            return np.zeros(0), np.zeros((0, r, 0)), np.zeros((0, r))
        s = self._slice(duration, until)
        rows = self._buffer["rows"][s]
        t, Y, f = self._buffer["t"][s], rows[:, :, :-1], rows[:, :, -1]
        return (t.copy(), Y.copy(), f.copy()) if copy else (t, Y, f)

    def normal_equations(
        self, duration: float = 0.0, until: float | None = None
    ) -> tuple[np.ndarray, np.ndarray, float, int]:
        """``(Y^T Y (p, p), Y^T y (p,), y^T y, rows)`` of the stacked rows of the newest
        ``duration`` seconds (0: the whole window), or of the ``duration`` s up to the stamp
        ``until`` (s) when given."""
        product = self._products(duration, until).sum(axis=0)
        p = product.shape[0] - 2
        n = int(round(product[p + 1, p + 1]))
        return product[:p, :p], product[:p, p].copy(), float(product[p, p]), n

    def channel_normal_equations(
        self,
        duration: float = 0.0,
        until: float | None = None,
        offset: np.ndarray | None = None,
    ) -> ChannelNormalEquations:
        """The per-channel normal equations of the samples :meth:`samples` selects, of the
        measurements less ``offset`` (r,) when given (a known sensor offset)."""
        product = self._products(duration, until)
        p = product.shape[1] - 2
        gram, moment, yty = product[:, :p, :p], product[:, :p, p].copy(), product[:, p, p].copy()
        n = int(round(product[0, p + 1, p + 1]))
        if offset is not None:  # sum (f - o)^2 and Y^T (f - o), from sum f and sum Y
            offset = np.asarray(offset, dtype=float)
            moment -= offset[:, None] * product[:, :p, p + 1]
            yty += offset * (n * offset - 2.0 * product[:, p, p + 1])
        return ChannelNormalEquations(gram=gram, moment=moment, yty=yty, n_samples=n)

    def _products(self, duration: float, until: float | None) -> np.ndarray:
        """(r, p + 2, p + 2) per-channel ``[Y f 1]^T [Y f 1]`` of the samples :meth:`samples`
        selects, from the kept block products."""
        if self._buffer is None:
            raise ValueError("the window has never held a sample (unknown parameter count)")
        buffer = self._buffer
        first, selected = buffer.first_index, self._slice(duration, until)
        return self._block_products.products(
            buffer["rows"], first, first + selected.start, first + selected.stop
        )

    def problem(self, duration: float = 0.0, n_bodies: int = 1, **problem_fields: Any) -> Problem:
        """:class:`~inertia_id_ros.solvers.Problem` of the newest ``duration`` seconds (0: the
        whole window); ``problem_fields`` are its other fields (``prior``, ``nonnegative``, ...)."""
        gram, moment, yty, rows = self.normal_equations(duration)
        return Problem(
            gram=gram, moment=moment, yty=yty, n_rows=rows, n_bodies=n_bodies, **problem_fields
        )


class BlockWindow:
    """Sliding time window kept as normal equations per block of ``block_sec`` of samples, for
    problems too large to keep their rows (a humanoid: 40 rows x 400 parameters per sample).

    A :class:`Window` with :meth:`normal_equations` as :class:`SlidingWindow`'s, at block
    granularity (no rows are kept): a block leaves the window when its newest sample is older
    than ``window_sec`` behind the newest sample; ``duration`` selects the blocks with a sample
    in the newest ``duration`` s. Memory: about ``window_sec / block_sec + 1`` blocks of
    ``(p + 1)^2`` floats. ``row_groups``: ``(rows, columns)`` pairs, each a group of a sample's
    rows and the only columns they can be non-zero in (covering every row): the products are
    then accumulated per group (a whole-body problem's sensors touch only their subtrees).
    ``channels``: the rows of each channel of a weighted fit (each within one row group,
    covering every row once), e.g. a sensor's force rows; each block then keeps one product per
    channel, on its row group's columns, for :meth:`channel_normal_equations` (memory: the sum
    of their sizes instead of one ``(p + 1)^2``). Not thread-safe.

    The window's sums cost a few additions a call, not one per block, and subtract nothing: the
    closed blocks (all but the newest) not yet summed keep a running sum; when the oldest of them
    must leave, they are turned in place into their suffix sums (each block holding its sum with
    every newer closed one), which then leave one by one. One extra sum in memory.
    """

    def __init__(
        self,
        window_sec: float,
        n_params: int,
        rows_per_sample: int,
        block_sec: float = 1.0,
        row_groups: list[tuple[np.ndarray, np.ndarray]] | None = None,
        channels: list[np.ndarray] | None = None,
    ) -> None:
        if not window_sec > 0 or not block_sec > 0:
            raise ValueError(
                f"window_sec and block_sec must be positive (s), got {window_sec}, {block_sec}"
            )
        self.window_sec = float(window_sec)
        self.block_sec = float(block_sec)
        self.n_params = int(n_params)
        self.rows_per_sample = int(rows_per_sample)
        self.capacity = 0
        """No per-sample storage (:attr:`Window.capacity`)."""
        self._blocks: list[dict[str, Any]] = []
        """Oldest first: ``t`` (n,) and ``products``, a block's products (one, or per channel);
        the first :attr:`_summed` hold suffix sums instead (see the class docstring)."""
        self._summed = 0
        self._running: list[np.ndarray] | None = None
        """The sum of the closed blocks after the first :attr:`_summed` (``None``: none)."""
        every = (np.arange(rows_per_sample), np.arange(n_params))
        self._groups = [
            (
                np.asarray(rows, dtype=int),
                np.append(np.asarray(columns, dtype=int), n_params),
            )  # and the data
            for rows, columns in (row_groups or [every])
        ]
        self._channels: list[tuple[np.ndarray, np.ndarray]] | None = None
        """Per channel: its rows and its row group's columns (and the data's)."""
        if channels is not None:
            group_of = {int(r): columns for rows, columns in self._groups for r in rows}
            self._channels = [
                (np.asarray(rows, dtype=int), group_of[int(rows[0])]) for rows in channels
            ]
            covered = np.sort(np.concatenate([rows for rows, _ in self._channels]))
            if not np.array_equal(covered, np.arange(rows_per_sample)):
                raise ValueError("channels must cover each row of a sample once")

    def __len__(self) -> int:
        return sum(block["t"].size for block in self._blocks)

    @property
    def t_last(self) -> float | None:
        """Stamp of the newest sample (s), ``None`` when empty."""
        return float(self._blocks[-1]["t"][-1]) if self._blocks else None

    def clear(self) -> None:
        """Drop all samples."""
        self._blocks.clear()
        self._summed, self._running = 0, None

    def drop_before(self, t: float) -> None:
        """Drop the blocks with a sample stamped before ``t`` (s)."""
        self._drop_oldest(sum(1 for block in self._blocks if block["t"][0] < t))

    def _drop_oldest(self, count: int) -> None:
        """Drop the ``count`` oldest blocks, turning the closed ones into suffix sums first if
        the running sum holds some of them."""
        if count >= len(self._blocks):
            self.clear()
            return
        if count > self._summed:
            del self._blocks[: self._summed]
            count -= self._summed
            closed = self._blocks[:-1]
            for older, newer in zip(closed[-2::-1], closed[:0:-1]):
                for total, product in zip(older["products"], newer["products"]):
                    total += product
            self._summed, self._running = len(closed), None
        del self._blocks[:count]
        self._summed -= count

    def resize(self, window_sec: float, capacity: int | None = None) -> None:
        """A new window length (s); ``capacity`` is ignored."""
        if not (window_sec > 0 and np.isfinite(window_sec)):
            raise ValueError(f"window_sec must be positive and finite (s), got {window_sec}")
        self.window_sec = float(window_sec)
        self._expire()

    def extend(self, t: np.ndarray, Y: np.ndarray, f: np.ndarray) -> int:
        """Add samples with increasing stamps ``t`` (N,) (s), rows ``Y`` (N, r, p) and
        measurements ``f`` (N, r); returns 0 (nothing is dropped for capacity)."""
        t = np.asarray(t, dtype=float).reshape(-1)
        r, p = self.rows_per_sample, self.n_params
        if Y.shape != (t.size, r, p) or f.shape != (t.size, r):
            raise ValueError(
                f"need Y (N, {r}, {p}) and f (N, {r}) for N={t.size} stamps, got "
                f"{Y.shape} and {f.shape}"
            )
        start = 0
        while start < t.size:
            block = self._blocks[-1] if self._blocks else None
            if block is None or t[start] >= block["t"][0] + self.block_sec:
                if block is not None:  # closed: into the running sum
                    if self._running is None:
                        self._running = [product.copy() for product in block["products"]]
                    else:
                        for total, product in zip(self._running, block["products"]):
                            total += product
                sizes = [p + 1] if self._channels is None else [c.size for _, c in self._channels]
                block = {"t": np.zeros(0), "products": [np.zeros((k, k)) for k in sizes]}
                self._blocks.append(block)
            stop = start + int(
                np.searchsorted(
                    t[start:],
                    block["t"][0] + self.block_sec
                    if block["t"].size
                    else t[start] + self.block_sec,
                )
            )
            augmented = np.concatenate([Y[start:stop], f[start:stop, :, None]], axis=2)
            if self._channels is None:
                for rows, columns in self._groups:
                    part = augmented[:, rows][:, :, columns].reshape(-1, columns.size)
                    block["products"][0][np.ix_(columns, columns)] += part.T @ part
            else:
                for (rows, columns), product in zip(self._channels, block["products"]):
                    part = augmented[:, rows][:, :, columns].reshape(-1, columns.size)
                    product += part.T @ part
            block["t"] = np.concatenate([block["t"], t[start:stop]])
            start = stop
        self._expire()
        return 0

    def _expire(self) -> None:
        if self._blocks:
            oldest_kept = self._blocks[-1]["t"][-1] - self.window_sec
            self._drop_oldest(sum(1 for b in self._blocks if b["t"][-1] < oldest_kept))

    def _selected(self, duration: float, until: float | None = None) -> list[dict[str, Any]]:
        return self._blocks[self._first_selected(duration, until) :]

    def _first_selected(self, duration: float, until: float | None = None) -> int:
        """Index of the oldest block with a sample in the newest ``duration`` s (0: all)."""
        if until is not None:
            raise ValueError("a window of blocks solves on its newest blocks only (no until=)")
        if duration < 0:
            raise ValueError(f"duration must be >= 0 (s; 0 = the whole window), got {duration}")
        if duration == 0 or not self._blocks:
            return 0
        oldest_kept = self._blocks[-1]["t"][-1] - duration
        return sum(1 for b in self._blocks if b["t"][-1] < oldest_kept)

    def _sums(self, duration: float) -> list[np.ndarray]:
        """The products of the blocks of the newest ``duration`` s (0: all), summed (new
        arrays); from the suffix and running sums, so a few additions whatever the blocks."""
        first = self._first_selected(duration)
        if not self._blocks:
            return []
        newest = self._blocks[-1]["products"]
        if first < self._summed:
            parts = [self._blocks[first]["products"], self._running, newest]
        elif first == self._summed:
            parts = [self._running, newest]
        else:
            parts = [b["products"] for b in self._blocks[first:]]
        summed = [part for part in parts if part is not None]
        totals = [product.copy() for product in summed[0]]
        for part in summed[1:]:
            for total, product in zip(totals, part):
                total += product
        return totals

    def count(self, duration: float = 0.0, until: float | None = None) -> int:
        """Samples in the blocks of the newest ``duration`` seconds (0: the whole window;
        ``until`` must be ``None``)."""
        return sum(block["t"].size for block in self._selected(duration, until))

    def stamps(self, duration: float = 0.0, until: float | None = None) -> np.ndarray:
        """Stamps (N,) (s) of the samples of the blocks of the newest ``duration`` seconds
        (``until`` must be ``None``)."""
        blocks = self._selected(duration, until)
        return np.concatenate([b["t"] for b in blocks]) if blocks else np.zeros(0)

    def normal_equations(self, duration: float = 0.0) -> tuple[np.ndarray, np.ndarray, float, int]:
        """``(Y^T Y (p, p), Y^T y (p,), y^T y, rows)`` of the selected blocks."""
        p = self.n_params
        rows = self.rows_per_sample * self.count(duration)
        if not self._blocks:
            return np.zeros((p, p)), np.zeros(p), 0.0, rows
        if self._channels is None:
            product = self._sums(duration)[0]
        else:
            product = self._channel_products(self._channels, self._sums(duration)).sum(axis=0)
        return product[:p, :p].copy(), product[:p, p].copy(), float(product[p, p]), rows

    def channel_normal_equations(self, duration: float = 0.0) -> ChannelNormalEquations:
        """The normal equations of the selected blocks per channel (the window's ``channels``;
        ``ValueError`` without)."""
        if self._channels is None:
            raise ValueError("this window keeps no per-channel products (channels=None)")
        p = self.n_params
        products = self._channel_products(self._channels, self._sums(duration))
        return ChannelNormalEquations(
            gram=products[:, :p, :p],
            moment=products[:, :p, p],
            yty=products[:, p, p].copy(),
            n_samples=self.count(duration),
            rows_per_channel=np.array([rows.size for rows, _ in self._channels]),
        )

    def _channel_products(self, channels: list[Any], sums: list[np.ndarray]) -> np.ndarray:
        """(channels, p + 1, p + 1): each channel's ``[Y f]^T [Y f]``, its sum on its columns."""
        out = np.zeros((len(channels), self.n_params + 1, self.n_params + 1))
        for k, ((_, columns), total) in enumerate(zip(channels, sums)):
            out[k][np.ix_(columns, columns)] = total
        return out
