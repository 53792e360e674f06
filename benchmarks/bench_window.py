"""Benchmark of :class:`inertia_id_ros.online.window.SlidingWindow`: the time of one
``channel_normal_equations()`` call over the whole window, as an online estimator makes it
(1 kHz samples, 100 appended between calls, i.e. 10 updates a second).

Windows: "payload" (6 rows per sample, 10 parameters: a wrench's rows, the force rows zero in
the inertia's columns, the torque rows in the mass's) and "links" (7 rows, 71 parameters: a
7-joint chain's torques, joint ``j`` zero in the columns of the links before it). Each case
fills the window (``--window`` s), then times ``--calls`` calls, each after appending 100
samples; the table gives the mean time per call of the best of ``--repeats`` runs, and the
first call's (every block's products made once).

Run: .venv/bin/python benchmarks/bench_window.py [--window 10] [--calls 200] [--repeats 5]
BLAS is limited to one thread by default (--threads), as in the node.
"""

from __future__ import annotations

import argparse
import time

from inertia_id_ros.threads import add_threads_option, apply_threads_option


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=float, default=10.0, help="window length (s)")
    parser.add_argument("--calls", type=int, default=200, help="timed calls per run")
    parser.add_argument("--repeats", type=int, default=5, help="runs per case (best kept)")
    add_threads_option(parser)
    return parser.parse_args()


ARGS = _parse()
apply_threads_option(ARGS.threads)

import numpy as np  # noqa: E402  (after the BLAS thread settings)

from inertia_id_ros.online.window import SlidingWindow  # noqa: E402

RATE_HZ = 1000.0
"""Samples a second."""
PER_CALL = 100
"""Samples appended between two calls."""


def payload_pattern() -> np.ndarray:
    """(6, 10) non-zero columns of a wrench's rows: forces (m, m c), torques (m c, I)."""
    used = np.ones((6, 10), dtype=bool)
    used[:3, 4:] = False
    used[3:, 0] = False
    return used


def links_pattern() -> np.ndarray:
    """(7, 71) non-zero columns of a 7-joint chain's torques: the links from the joint on, and a
    last column common to all."""
    used = np.zeros((7, 71), dtype=bool)
    for joint in range(7):
        used[joint, 10 * joint :] = True
    return used


def samples(used: np.ndarray, n: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """``n`` random samples ``(Y (n, r, p), f (n, r))`` zero outside ``used`` (r, p)."""
    Y = rng.normal(size=(n, *used.shape)) * used
    return Y, rng.normal(size=(n, used.shape[0]))


def run(used: np.ndarray, rng: np.random.Generator) -> tuple[float, float]:
    """(first call's time, mean time per later call) (s) of one run."""
    n_fill = int(ARGS.window * RATE_HZ)
    n_total = n_fill + ARGS.calls * PER_CALL
    Y, f = samples(used, n_total, rng)
    t = np.arange(n_total) / RATE_HZ
    window = SlidingWindow(ARGS.window, used.shape[1], 2 * n_fill, rows_per_sample=used.shape[0])
    window.extend(t[:n_fill], Y[:n_fill], f[:n_fill])
    start = time.perf_counter()
    window.channel_normal_equations()
    first = time.perf_counter() - start
    spent = 0.0
    for k in range(n_fill, n_total, PER_CALL):
        window.extend(t[k : k + PER_CALL], Y[k : k + PER_CALL], f[k : k + PER_CALL])
        start = time.perf_counter()
        window.channel_normal_equations()
        spent += time.perf_counter() - start
    return first, spent / ARGS.calls


def main() -> None:
    rng = np.random.default_rng(0)
    print(f"window {ARGS.window:g} s at {RATE_HZ:g} Hz, {PER_CALL} samples appended per call")
    print(f"{'case':<8} {'rows':>4} {'p':>3} {'first call (ms)':>16} {'per call (ms)':>14}")
    for name, used in (("payload", payload_pattern()), ("links", links_pattern())):
        runs = [run(used, rng) for _ in range(ARGS.repeats)]
        first = min(r[0] for r in runs)
        per_call = min(r[1] for r in runs)
        r, p = used.shape
        print(f"{name:<8} {r:>4} {p:>3} {1e3 * first:>16.3f} {1e3 * per_call:>14.4f}")


if __name__ == "__main__":
    main()
