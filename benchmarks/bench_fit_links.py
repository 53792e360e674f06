"""``fit-links``' identification (:func:`~inertia_id_ros.chain.identify.identify_links`, every
choice cross-validated): the code of commit 40759c3 ("old") and of this checkout ("new") side by
side, in one run, on three inputs.

Inputs: the KUKA LWR4+ run 1 (5027 samples at 200 Hz, recorded velocities differentiated once;
``<repo>/../shared/data/kuka_lwr4``, skipped without it), held out its runs 2 and 3; the
simulated Panda arm (:func:`~inertia_id_ros.sim.torques.panda_arm_recording`) for 20 s at 1 kHz
(fitted on the first 12 000 samples, held out the rest) and for 50 s at 100 Hz (fitted on the
first 3 000). Held-out data are differentiated by the chosen filter and paired with the chosen
torque delay, as ``inertia-id validate`` does.

The old code is extracted with ``git archive <commit> inertia_id_ros`` into a temporary
directory and run in a subprocess with that directory first on ``sys.path``; both paths run
each input ``--repeats`` times, alternately, with the BLAS/OpenMP threads ``inertia-id`` would
use (:func:`inertia_id_ros.threads.configured_threads` of this checkout: one unless
``INERTIA_ID_THREADS`` or a library's own variable says otherwise), imposed on both by
``threadpoolctl``. Columns: median compute time (s, the call of ``identify_links`` alone:
imports and data loading excluded) in wall time and in the process's CPU time, each with the
ratio old / new; the target of issue 22 ("compute": judged on the CPU time, which a shared
machine's other work inflates less than the wall time; on an idle machine with one BLAS thread
the two agree), and the held-out torque RMS (N·m) of each; then the choices each made (filter,
torque delay, base tilt, Coulomb width, prior weight).

Run: ``.venv/bin/python benchmarks/bench_fit_links.py [--commit 40759c3] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
KUKA_DIR = REPO.parent / "shared" / "data" / "kuka_lwr4"
INPUTS = ("kuka_run1_200Hz", "panda_12k_1kHz", "panda_3k_100Hz")
TARGETS = {"kuka_run1_200Hz": 1.0, "panda_12k_1kHz": 5.0, "panda_3k_100Hz": 1.0}
"""Compute time (s) each input should take at most (issue 22)."""


def _panda(duration: float, rate: float, n_train: int) -> tuple:
    from inertia_id_ros.chain.links import LinkModel
    from inertia_id_ros.core.robots import example_robot_urdf
    from inertia_id_ros.sim.payload import PANDA_ARM_JOINTS
    from inertia_id_ros.sim.torques import panda_arm_recording

    rec = panda_arm_recording(duration=duration, rate=rate, seed=0)
    model = LinkModel.from_urdf(example_robot_urdf("panda"), PANDA_ARM_JOINTS)
    train = slice(0, n_train)
    held = slice(n_train, None)
    return model, [(rec.t[s], rec.q[s], rec.dq[s], rec.effort[s]) for s in (train, held)]


def _kuka() -> tuple:
    from inertia_id_ros.chain.links import LinkModel

    runs = []
    for index in (1, 2, 3):
        with np.load(KUKA_DIR / f"measurements_{index}.npz") as run:
            runs.append((run["times"], run["positions"], run["velocities"], run["torques"]))
    return LinkModel.from_urdf(KUKA_DIR / "kuka_lwr4.urdf"), runs


def run_input(name: str) -> dict:
    """Identify on input ``name`` with the ``inertia_id_ros`` on ``sys.path``: ``{"seconds",
    "held_out_rms" (one per held-out part)}``."""
    from inertia_id_ros.chain.identify import identify_links
    from inertia_id_ros.chain.links import torque_error

    try:
        from inertia_id_ros.chain.differentiation import derive_torque_data
    except ImportError:  # the old commit's layout: in chain.identify
        from inertia_id_ros.chain.identify import derive_torque_data

    model, runs = {
        "kuka_run1_200Hz": _kuka,
        "panda_12k_1kHz": lambda: _panda(20.0, 1000.0, 12000),
        "panda_3k_100Hz": lambda: _panda(50.0, 100.0, 3000),
    }[name]()
    t, q, dq, effort = runs[0]
    started, cpu = time.perf_counter(), time.process_time()
    identification = identify_links(model, t, q, dq, None, effort)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
    rms = [
        torque_error(
            identification.model,
            identification.fit.x,
            derive_torque_data(
                *run[:3], run[3], identification.differentiation, delay=identification.delay.delay
            ),
        ).overall
        for run in runs[1:]
    ]
    choices = {
        "filter_half_width_s": identification.differentiation.half_width,
        "filter_order": identification.differentiation.order,
        "delay_ms": 1e3 * identification.delay.delay,
        "tilt_deg": (
            []
            if identification.tilt is None
            else [
                float(np.degrees(identification.tilt.roll)),
                float(np.degrees(identification.tilt.pitch)),
            ]
        ),
        "coulomb_velocity": (
            None
            if identification.coulomb_selection is None
            else identification.coulomb_selection.best
        ),
        "prior_weight": identification.fit.prior_weight,
    }
    return {"seconds": seconds, "cpu_seconds": cpu_seconds, "held_out_rms": rms, "choices": choices}


def extract(commit: str, into: Path) -> Path:
    """``inertia_id_ros`` of ``commit`` under ``into``; returns ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", commit, "inertia_id_ros"],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def _threads() -> int | None:
    sys.path.insert(0, str(REPO))
    from inertia_id_ros.threads import configured_threads

    return configured_threads()


THREADS = _threads()
"""The BLAS/OpenMP threads of both paths (``None``: the libraries' own variables apply)."""


def measure(name: str, source: Path) -> dict:
    """:func:`run_input` in a fresh interpreter with the package at ``source`` first on the
    path (an installed checkout is shadowed)."""
    code = (
        f"import sys; sys.path.insert(0, {str(source)!r}); "
        # loaded first: threadpoolctl limits loaded libraries only
        "import numpy, scipy.linalg; "
        f"from threadpoolctl import threadpool_limits; threadpool_limits({THREADS}); "
        f"sys.path.insert(1, {str(Path(__file__).parent)!r}); "
        "import json, inertia_id_ros, bench_fit_links as b; "
        f"assert inertia_id_ros.__file__.startswith({str(source)!r}), inertia_id_ros.__file__; "
        f"print(json.dumps(b.run_input({name!r})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commit", default="40759c3", help="the old code's commit")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    names = [n for n in INPUTS if n != "kuka_run1_200Hz" or KUKA_DIR.is_dir()]
    with tempfile.TemporaryDirectory() as tmp:
        old_source = extract(args.commit, Path(tmp))
        results = {(n, p): [] for n in names for p in ("old", "new")}
        for _ in range(args.repeats):
            for name in names:
                for path, source in (("old", old_source), ("new", REPO)):
                    results[name, path].append(measure(name, source))
    print(
        f"old: {args.commit}; new: this checkout; BLAS threads {THREADS or 'library default'}; "
        f"median of {args.repeats}"
    )
    print(
        f"{'input':<18}{'old s':>8}{'new s':>8}{'ratio':>7}{'old cpu':>9}{'new cpu':>9}"
        f"{'ratio':>7}{'target':>8}   held-out RMS old -> new (N m)"
    )
    for name in names:
        old, new, old_cpu, new_cpu = (
            float(np.median([r[key] for r in results[name, p]]))
            for key in ("seconds", "cpu_seconds")
            for p in ("old", "new")
        )
        rms = "; ".join(
            f"{a:.4f} -> {b:.4f} ({100 * (b / a - 1):+.2f} %)"
            for a, b in zip(
                results[name, "old"][0]["held_out_rms"], results[name, "new"][0]["held_out_rms"]
            )
        )
        met = "met" if new_cpu <= TARGETS[name] else "MISSED"
        print(
            f"{name:<18}{old:8.2f}{new:8.2f}{old / new:7.2f}{old_cpu:9.2f}{new_cpu:9.2f}"
            f"{old_cpu / new_cpu:7.2f}{TARGETS[name]:7.1f} {met:<6}  {rms}"
        )
    print("choices old -> new:")
    for name in names:
        old, new = (results[name, p][0]["choices"] for p in ("old", "new"))
        print(f"  {name}: " + "; ".join(f"{k} {_show(old[k])} -> {_show(new[k])}" for k in old))
    return 0


def _show(value: object) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(f"{v:.3f}" for v in value) + "]"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


if __name__ == "__main__":
    sys.exit(main())
