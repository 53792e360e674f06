"""Unweighted vs weighted (Gautier, per noise group) whole-body fits on the simulated iCub.

Run: ``OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/whole_body_weighting.py [--seeds N]``

The recording of ``inertia-id sim-whole-body D.npz --robot icub`` (60 s at 200 Hz, seed s):
fit (``lmi``) on the first 70 %, predict the last 30 %. Per sensor: the held-out force RMS
against the measured wrenches (N; the noise is in it: internal sensors 0.2 N, the sole's contact
0.5 N) and against the noise-free wrenches ("model", N: what the fit gets wrong); the same for
the torques (N m). Two cases: the
simulator's noise, and the same with ``l_arm_ft_sensor``'s wrench noise made 10 times larger (a
worn sensor). Solve time: the solver's, summed over the weighted fit's iterations; fit time: the
whole call (normal equations included). Online: the node's session, warm solve per update.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from inertia_id_ros.chain.whole_body_fit import fit_whole_body, prediction_errors
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.core.whole_body_model import FTSensor, WholeBodyModel
from inertia_id_ros.formats.whole_body_log import read_whole_body_file, whole_body_inputs
from inertia_id_ros.online.whole_body_session import whole_body_session
from inertia_id_ros.sim import whole_body_robots as wb

HOLDOUT = 0.3
NOISY_SENSOR, NOISE_FACTOR = "l_arm_ft_sensor", 10.0


def _inputs(data: dict, wrench: np.ndarray, folder: Path, name: str):
    path = folder / f"{name}.npz"
    np.savez(path, **{**data, "ft_wrench": wrench})
    return whole_body_inputs(read_whole_body_file(path), example_robot_urdf("icub"))


def run_case(data: dict, measured: np.ndarray, folder: Path) -> dict:
    """``{weighting: (force RMS {group: N}, model RMS {group: N}, solve s, fit s, iterations)}``."""
    model, samples = _inputs(data, measured, folder, "measured")
    _, clean = _inputs(data, data["true_ft_wrench"] + data["true_ft_offset"], folder, "clean")
    split = int(round(len(samples) * (1.0 - HOLDOUT)))
    train = samples.subset(slice(0, split))
    test, test_clean = samples.subset(slice(split, None)), clean.subset(slice(split, None))
    out = {}
    for weighting in ("none", "channel"):
        start = time.perf_counter()
        fit = fit_whole_body(model, train, "lmi", weighting=weighting)
        elapsed = time.perf_counter() - start
        assert fit.fully_consistent
        measured_errors = prediction_errors(model, fit.x, test)
        model_errors = prediction_errors(model, fit.x, test_clean)
        out[weighting] = (
            (measured_errors.force, measured_errors.torque),
            (model_errors.force, model_errors.torque),
            fit.solve_time,
            elapsed,
            1 if fit.weights is None else fit.weights.iterations,
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2, help="simulated recordings (2)")
    parser.add_argument("--online-only", action="store_true", help="only the online part")
    args = parser.parse_args()
    if args.online_only:
        online()
        return
    results: dict[str, list[dict]] = {"simulator noise": [], f"{NOISY_SENSOR} noise x10": []}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.seeds):
            sim = wb.icub(seed=seed)
            data = sim.record(60.0, 200.0)
            frames = [str(f) for f in data["ft_frames"]]
            results["simulator noise"].append(run_case(data, data["ft_wrench"], Path(tmp)))
            extra = np.zeros_like(data["ft_wrench"])
            k = frames.index(NOISY_SENSOR)
            scale = np.sqrt(NOISE_FACTOR**2 - 1.0) * data["ft_noise_std"][k]
            extra[:, k] = np.random.default_rng(100 + seed).normal(size=extra[:, k].shape) * scale
            results[f"{NOISY_SENSOR} noise x10"].append(
                run_case(data, data["ft_wrench"] + extra, Path(tmp))
            )
            print(f"seed {seed} done", flush=True)
    for case, runs in results.items():
        print(
            f"\n{case}: held-out RMS, mean over {len(runs)} seeds (lmi, fit on 70 %); "
            "force (N) and torque (N m), measured / model (against the noise-free wrenches)"
        )
        print(
            f"{'rows':<18}"
            + "".join(
                f"{title:>16}"
                for title in (
                    "force none",
                    "force channel",
                    "ratio",
                    "torque none",
                    "torque channel",
                    "ratio",
                )
            )
        )
        for group in runs[0]["none"][0][0]:
            line = f"{group:<18}"
            for axis in (0, 1):  # force, torque
                cells = [
                    tuple(np.mean([r[w][kind][axis][group] for r in runs]) for kind in (0, 1))
                    for w in ("none", "channel")
                ]
                ratio = (cells[1][0] / cells[0][0], cells[1][1] / cells[0][1])
                line += "".join(f"{a:8.4f}/{b:<7.4f}" for a, b in (*cells, ratio))
            print(line)
        for weighting in ("none", "channel"):
            solve = np.mean([r[weighting][2] for r in runs])
            fit = np.mean([r[weighting][3] for r in runs])
            iterations = np.mean([r[weighting][4] for r in runs])
            print(f"{weighting:<8} solve {solve:.3f} s, fit {fit:.2f} s, {iterations:.1f} solves")
    online()


def online(duration: float = 30.0, window: float = 10.0) -> None:
    """The node's session (samples at 50 Hz, 1 s blocks) updated once a second on a recording of
    ``duration`` s: the warm solve times once the ``window`` s window is full."""
    sim = wb.icub(seed=3)
    data = sim.record(duration, 200.0)
    model = WholeBodyModel.from_urdf(
        example_robot_urdf("icub"),
        "floating",
        [FTSensor(f, k) for f, k in sim.ft_sensors],
        sim.imu_frame,
    )
    names, frames = list(data["joint_names"]), [str(f) for f in data["ft_frames"]]
    print(
        f"\nonline: {duration:g} s at 200 Hz, {window:g} s window, an update per second; warm "
        "solve time (s, median / max, every solve of the update)"
    )
    for weighting in ("none", "channel"):
        session = whole_body_session(
            model, window_sec=window, max_input_rate_hz=200.0, weighting=weighting
        )
        times = []
        for second in range(1, int(duration)):
            for i in range((second - 1) * 200, second * 200):
                t = data["t"][i]
                session.add_joint_state(t, names, data["q"][i], data["dq"][i])
                session.add_imu(
                    t,
                    data["imu_angular_velocity"][i],
                    data["imu_linear_acceleration"][i],
                    sim.imu_frame,
                )
                for k, frame in enumerate(frames):
                    session.add_wrench(frame, t, data["ft_wrench"][i, k], frame)
            update = session.update(now=float(second))
            if update.ok and second > window:
                times.append(update.estimate.solve_time)
        print(f"{weighting:<8} {np.median(times):.3f} / {np.max(times):.3f} ({len(times)} updates)")


if __name__ == "__main__":
    main()
