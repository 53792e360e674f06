"""The local polynomial fit of joint states at query times: ``local_polynomial_derivatives``
(running sums for dense queries on wide windows) against each window gathered and solved apart
(what it does for short windows, sparse queries or non-finite samples), side by side in one run,
on the shapes the node and the offline fits use. Prints a table: milliseconds per call and the
ratio.

    .venv/bin/python benchmarks/bench_filtering.py
"""

from __future__ import annotations

import argparse
import timeit
from math import factorial

import numpy as np

from inertia_id_ros.threads import limit_threads

limit_threads()

from inertia_id_ros.core import filtering  # noqa: E402 (after the BLAS settings)

CASES = (
    # (label, queries, columns, derivatives, half-width s)
    ("node batch: q and dq of 7 joints", 200, 14, 1, 0.05),
    ("node batch: q of 7 joints, twice", 200, 7, 2, 0.05),
    ("node batch, short filter (gathered)", 200, 14, 1, 0.0125),
    ("offline chunk: q and dq of 7 joints", 5000, 14, 1, 0.05),
    ("offline chunk, wide filter", 5000, 14, 1, 0.2),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="timing repeats (best of)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    t = 100.0 + np.cumsum(rng.uniform(0.9e-3, 1.1e-3, 8000))  # 1 kHz with jitter
    x = np.cumsum(rng.standard_normal((t.size, 14)), axis=0) * 1e-3 + 0.5
    print(f"{'case':40s} {'fit ms':>16s} {'gathered ms':>12s} {'ratio':>6s} {'max diff':>9s}")
    for label, queries, columns, derivatives, half_width in CASES:
        t_query = t[1000 : 1000 + queries] + 3e-4
        lo, hi = filtering.fit_window(t, t_query, half_width)
        scale = np.array([factorial(k) / half_width**k for k in range(derivatives + 1)])

        def running() -> np.ndarray:
            return filtering.local_polynomial_derivatives(
                t, x[:, :columns], t_query, half_width, 2, derivatives
            )

        def gathered() -> np.ndarray:
            fit = filtering._gathered_fit(t, x[:, :columns], t_query, lo, hi, half_width, 2)
            return fit[:, : derivatives + 1] * scale[:, None]

        number = max(1, 2000 // queries)
        fast, slow = (
            min(timeit.repeat(f, number=number, repeat=args.repeat)) / number
            for f in (running, gathered)
        )
        diff = np.abs(running() - gathered()).max()
        print(f"{label:40s} {1e3 * fast:16.3f} {1e3 * slow:12.3f} {slow / fast:6.2f} {diff:9.1e}")


if __name__ == "__main__":
    main()
