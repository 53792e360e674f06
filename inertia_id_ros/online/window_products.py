"""Kept products of blocks of a :class:`~inertia_id_ros.online.window.SlidingWindow`'s rows, so
that the normal equations of any selection of its samples cost a bounded number of rows.

Samples are counted from the buffer's first (their index in appended samples). Each sample's
augmented rows ``[Y f 1]`` (r, p + 2) give per channel the product ``[Y f 1]^T [Y f 1]``
(r, p + 2, p + 2). The products of a selection ``[start, stop)`` are summed from:

* the products of the *coarse* blocks of :data:`PRODUCT_BLOCK` samples wholly selected, kept
  while their samples are held;
* the products of the *fine* blocks of :data:`FINE_BLOCK` samples inside the (at most two)
  coarse blocks the selection holds only part of, its ends: made once each, and kept only while
  their coarse block is an end of the last selection (at most ``2 PRODUCT_BLOCK / FINE_BLOCK``
  fine products);
* the products of the fewer than :data:`FINE_BLOCK` samples left at each extreme, computed.

A coarse block's product is the sum of its fine blocks' (in order), whether they were kept or
are made for it, and every product is made from the rows alone: the sums are the same whatever
the calls before (no running sums, nothing subtracted; products dense, see
:func:`augmented_products`). In the steady state of an online
estimator (the selection's both ends move forward), a call computes the fine blocks completed
since the last (the new samples), the head's coarse block's fine blocks once per
:data:`PRODUCT_BLOCK` samples it moves, and at most ``2 (FINE_BLOCK - 1)`` rows.
"""

from __future__ import annotations

import numpy as np

PRODUCT_BLOCK = 512
"""Samples per coarse block whose products are kept while held: they take
``(p + 2) / PRODUCT_BLOCK`` of the rows' memory (a 7-joint arm's links: 14 %)."""
FINE_BLOCK = 64
"""Samples per fine block (a divisor of :data:`PRODUCT_BLOCK`). Measured with
``benchmarks/bench_window.py`` (10 s at 1 kHz, 100 samples per call; payload 6 x 10, links
7 x 71): 32 is clearly slower for the links (twice the fine products to make and sum: 2.8 ms a
call against 1.7), 64, 128 and 256 are within the noise of each other; 64 computes the fewest
rows at the extremes (under 2 x 64) and keeps at most 16 fine products."""


class BlockProducts:
    """The kept coarse and fine block products of one buffer's rows (see the module docstring).
    Indices are the buffer's sample indices (``SampleBuffer.first_index`` and on); a buffer
    whose indices restart needs a new instance. Not thread-safe."""

    def __init__(self) -> None:
        self.coarse: dict[int, np.ndarray] = {}
        """Coarse block ``k`` (samples ``k B .. (k + 1) B - 1``, ``B`` = :data:`PRODUCT_BLOCK`)
        -> its product (r, p + 2, p + 2)."""
        self.fine: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        """Coarse block ``k`` (an end of the last selection) -> the products of its fine blocks
        (B / b, r, p + 2, p + 2) (fine block ``i``: samples ``k B + i b .. k B + (i + 1) b - 1``,
        ``b`` = :data:`FINE_BLOCK`) and which are made (B / b,) (the others: undefined)."""

    def clear(self) -> None:
        """Forget every kept product."""
        self.coarse.clear()
        self.fine.clear()

    def products(self, rows: np.ndarray, first: int, start: int, stop: int) -> np.ndarray:
        """(r, p + 2, p + 2) per-channel ``[Y f 1]^T [Y f 1]`` of the samples ``start`` to
        ``stop - 1`` (indices), of the held ``rows`` (N, r, p + 1) ``[Y f]`` whose first is
        sample ``first`` (``first <= start <= stop <= first + N``)."""
        size = PRODUCT_BLOCK
        for k in [k for k in self.coarse if k * size < first]:  # blocks no longer held
            del self.coarse[k]
        width = rows.shape[2] + 1
        total = np.zeros((rows.shape[1], width, width))
        ends = set()
        for k in range(start // size, -(-stop // size)):
            a, c = max(start, k * size), min(stop, (k + 1) * size)
            if c - a == size:
                total += self._coarse_product(rows, first, k)
            else:
                total += self._part_product(rows, first, k, a, c)
                ends.add(k)
        for k in [k for k in self.fine if k not in ends]:
            del self.fine[k]
        return total

    def _coarse_product(self, rows: np.ndarray, first: int, k: int) -> np.ndarray:
        """The product of coarse block ``k`` (wholly held), the sum of its fine blocks' in order
        (those kept used, the others made), made once."""
        product = self.coarse.get(k)
        if product is None:
            per = PRODUCT_BLOCK // FINE_BLOCK
            if k in self.fine:
                fine = self._fine_products(rows, first, k, 0, per)
            else:  # not an end: its fine products are not kept
                block = rows[k * PRODUCT_BLOCK - first : (k + 1) * PRODUCT_BLOCK - first]
                fine = augmented_products(block, per)
            product = self.coarse[k] = fine.sum(axis=0)
        return product

    def _fine_products(self, rows: np.ndarray, first: int, k: int, lo: int, hi: int) -> np.ndarray:
        """(hi - lo, r, p + 2, p + 2) the products of fine blocks ``lo`` to ``hi - 1`` of coarse
        block ``k`` (counted in it; wholly held), kept for ``k``, the missing ones made."""
        per, size = PRODUCT_BLOCK // FINE_BLOCK, FINE_BLOCK
        if k not in self.fine:
            width = rows.shape[2] + 1
            self.fine[k] = np.empty((per, rows.shape[1], width, width)), np.zeros(per, bool)
        products, made = self.fine[k]
        missing = np.flatnonzero(~made[lo:hi])
        if missing.size:
            m0, m1 = lo + int(missing[0]), lo + int(missing[-1]) + 1
            start = k * PRODUCT_BLOCK + m0 * size - first
            products[m0:m1] = augmented_products(rows[start : start + (m1 - m0) * size], m1 - m0)
            made[m0:m1] = True
        return products[lo:hi]

    def _part_product(self, rows: np.ndarray, first: int, k: int, a: int, c: int) -> np.ndarray:
        """The product of samples ``a`` to ``c - 1``, part of coarse block ``k``: the rows' at
        both extremes, and the sum of the fine blocks' between (kept for ``k``)."""
        size, base = FINE_BLOCK, k * PRODUCT_BLOCK
        lo, hi = -(-(a - base) // size), (c - base) // size  # the whole fine blocks, in k
        if hi <= lo:
            return augmented_products(rows[a - first : c - first])[0]
        total = self._fine_products(rows, first, k, lo, hi).sum(axis=0)
        if a < base + lo * size:
            total += augmented_products(rows[a - first : base + lo * size - first])[0]
        if base + hi * size < c:
            total += augmented_products(rows[base + hi * size - first : c - first])[0]
        return total


def augmented_products(rows: np.ndarray, blocks: int = 1) -> np.ndarray:
    """(blocks, r, p + 2, p + 2) per-channel ``[Y f 1]^T [Y f 1]`` of each of ``blocks`` equal
    consecutive blocks of samples' ``rows`` (N, r, p + 1) ``[Y f]``: the last row and column
    hold ``sum Y``, ``sum f`` and the block's sample count (zeros if N = 0). One batched dense
    product per block and channel: on fine blocks, skipping the columns zero in every sample
    (``channel_grams``) costs more than it saves (64 samples: 7 against 176 us for a payload's
    6 x 12, 113 against 266 us for the links' 7 x 73), and it is a block's whatever the others."""
    n, r, width = rows.shape[0] // blocks, rows.shape[1], rows.shape[2] + 1
    augmented = np.concatenate([rows, np.ones((*rows.shape[:2], 1))], axis=2)
    augmented = augmented.reshape(blocks, n, r, width)
    return augmented.transpose(0, 2, 3, 1) @ augmented.transpose(0, 2, 1, 3)
