"""Calibrations against simulated truth.

``drives``: a simulated Panda logging motor currents whose gains are off the datasheet's by 5 to
20 % (:func:`~inertia_id_ros.sim.torques.panda_current_runs`). For each robot (``--robots``
gain seeds), ``calibrate-drives`` (the job, from Python) on one unloaded/loaded pair with a
weighed 2.8 kg payload, 60 s at 100 Hz (timed); then ``fit-payload-torques`` (differencing) on
three other pairs of the same arm with 1.0, 2.0 and 4.0 kg, with the calibrated gains and with
the nominal ones. Prints each gain recovered against the truth (in standard errors) and each
held-out mass's error (the acceptance: within 5 % with the calibrated gains; calibration
≤ 10 s).

Run: .venv/bin/python benchmarks/bench_calibration.py [--robots N] [--duration S]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

CALIBRATION_MASS = 2.8
"""The weighed payload of the calibration pair (kg)."""
HELD_OUT_MASSES = (1.0, 2.0, 4.0)
"""The payloads fitted with the calibrated gains (kg)."""
RATE = 100.0
"""Sample rate of the simulated logs (Hz)."""


def _write_pair(directory: Path, name: str, runs) -> tuple[str, str]:
    """The runs' unloaded and loaded recordings as package files (currents as efforts)."""
    from inertia_id_ros.formats.data import JointStates, write_joint_file

    paths = []
    for kind, recording in (("unloaded", runs.unloaded), ("loaded", runs.loaded)):
        path = directory / f"{name}_{kind}.npz"
        states = JointStates(
            recording.t, runs.links.joint_names, recording.q, recording.dq, None, recording.effort
        )
        write_joint_file(path, states)
        paths.append(str(path))
    return paths[0], paths[1]


def drives_robot(robot: int, duration: float, directory: Path) -> list[str]:
    """Table lines of one simulated robot (gain seed ``robot``)."""
    from inertia_id_ros.core.robots import example_robot_urdf
    from inertia_id_ros.formats.source import LogSource
    from inertia_id_ros.jobs.calibrate_drives import calibrate_drives
    from inertia_id_ros.jobs.fit_payload_torques import (
        FitPayloadTorquesOptions,
        fit_payload_torques,
    )
    from inertia_id_ros.sim.torques import PANDA_FLANGE, panda_current_runs, true_gains

    urdf = example_robot_urdf("panda")
    gains = true_gains(robot)
    calibration = panda_current_runs(
        CALIBRATION_MASS, gains, duration, RATE, seed=1, robot_seed=robot
    )
    unloaded, loaded = _write_pair(directory, f"r{robot}_cal", calibration.runs)
    start, cpu = time.perf_counter(), time.process_time()
    result = calibrate_drives(
        urdf, [(LogSource(data=unloaded), LogSource(data=loaded))], PANDA_FLANGE, CALIBRATION_MASS
    )
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    fit = result.estimate
    assert fit is not None
    lines = [
        f"robot {robot}: calibration {elapsed:.2f} s wall, {cpu:.2f} s CPU "
        f"({duration:g} s at {RATE:g} Hz, one pair)"
    ]
    lines.append("  joint           true    nominal  calibrated ± std      (cal-true)/std")
    for j, joint in enumerate(fit.joint_names):
        value = (
            f"{fit.gains[j]:8.4f} ± {fit.gain_std[j]:.4f}"
            if fit.determined[j]
            else "not determined    "
        )
        z = (fit.gains[j] - gains[j]) / fit.gain_std[j] if fit.determined[j] else float("nan")
        lines.append(
            f"  {joint:14s} {gains[j]:7.4f} {calibration.nominal[j]:8.4f}  {value}  {z:+6.2f}"
        )
    lines.append("  held-out mass   calibrated gains   nominal gains")
    for k, mass in enumerate(HELD_OUT_MASSES):
        runs = panda_current_runs(mass, gains, 30.0, RATE, seed=10 + k, robot_seed=robot)
        unloaded, loaded = _write_pair(directory, f"r{robot}_m{k}", runs.runs)
        errors = []
        for constants in (fit.gains, calibration.nominal):
            options = FitPayloadTorquesOptions(unloaded=unloaded, torque_constants=list(constants))
            payload = fit_payload_torques(urdf, LogSource(data=loaded), PANDA_FLANGE, options)
            assert payload.estimate is not None
            errors.append(100 * (payload.estimate.mass - mass) / mass)
        lines.append(f"  {mass:5.2f} kg        {errors[0]:+7.2f} %          {errors[1]:+7.2f} %")
    return lines


def drives_section(robots: int, duration: float) -> list[str]:
    """The ``drives`` section: every robot's lines."""
    import inertia_id_ros.chain.drive_gains  # noqa: F401  # imports out of the timing

    lines = ["== drives: gains from a weighed payload (Panda logging currents) =="]
    with tempfile.TemporaryDirectory() as directory:
        for robot in range(robots):
            lines += drives_robot(robot, duration, Path(directory))
    return lines


def main() -> None:
    """Print every section's table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", type=int, default=3, help="simulated robots (gain seeds)")
    parser.add_argument("--duration", type=float, default=60.0, help="calibration log (s)")
    args = parser.parse_args()
    print("\n".join(drives_section(args.robots, args.duration)))


if __name__ == "__main__":
    main()
