"""Sousa & Cortesão (2014)'s WAM experiment in simulation: base parameters, their three methods,
the Table-8-style relative errors (:mod:`inertia_id_ros.sim.sousa2014`).

Run: ``.venv/bin/python benchmarks/sousa_wam.py [seeds]`` (default 10). Prints the table of seed 0
(20 s identification and validation trajectories at 50 Hz), then over ``seeds`` seeds how often
each estimate is feasible and its mean relative error per joint on the validation trajectories.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from inertia_id_ros.sim import sousa2014


def main(n_seeds: int = 10) -> int:
    started = time.perf_counter()
    first = sousa2014.run(seed=0)
    print(sousa2014.format_table(first))
    print(f"({time.perf_counter() - started:.1f} s)\n")
    results = [first] + [sousa2014.run(seed=seed) for seed in range(1, n_seeds)]
    methods = sousa2014.METHODS
    print(
        f"over seeds 0-{n_seeds - 1}: base parameters "
        f"{sorted({r.n_base for r in results})}; mean relative error (%) per joint, "
        "validation trajectories"
    )
    print(f"{'joint':<10}" + "".join(f"{m:>14}" for m in methods))
    for j in range(7):
        print(
            f"{j + 1:<10}"
            + "".join(
                f"{np.mean([r.estimates[m].validation_error[j] for r in results]):14.2f}"
                for m in methods
            )
        )
    print(
        f"{'all joints':<10}"
        + "".join(
            f"{np.mean([r.estimates[m].validation_error for r in results]):14.2f}" for m in methods
        )
    )
    print(
        f"{'feasible':<10}"
        + "".join(
            f"{sum(r.estimates[m].feasible for r in results):>11}/{n_seeds:<2}" for m in methods
        )
    )
    ratio = np.mean(
        [
            r.estimates["constrained"].validation_error.mean()
            / r.estimates["ols"].validation_error.mean()
            for r in results
        ]
    )
    print(f"validation error, feasibility-constrained / OLS (mean over seeds): {ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10))
