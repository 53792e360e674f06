"""The drive-gain sections of ``bench_calibration.py`` (its docstring says what they print)."""

from __future__ import annotations

import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

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


FILTER_RATES = (125.0, 250.0, 500.0, 1000.0)
"""Sample rates (Hz) of the filter comparison."""
FILTER_HALF_WIDTHS = (0.02, 0.03, 0.044, 0.06, 0.09, 0.13)
"""Candidate half-widths (s) of the derivative filter that cross-validation chooses among."""
FILTER_FOLDS = 5
"""Held-out time blocks of the cross-validation."""


def _payload_blocks(runs, half_width: float):
    """Per-block normal equations of the differenced runs (loaded minus unloaded) with the
    joint states differentiated over ``half_width`` s, and the differenced data."""
    from inertia_id_ros.chain.payload_from_torques import PayloadTorqueModel, difference_runs
    from inertia_id_ros.formats.data import JointStates
    from inertia_id_ros.jobs.fit_payload_torques import torque_data

    joints = list(runs.links.joint_names)
    data = []
    for recording in (runs.loaded, runs.unloaded):
        states = JointStates(
            recording.t, tuple(joints), recording.q, recording.dq, None, recording.effort
        )
        data.append(torque_data(states, joints, {"half_width": half_width}))
    difference, _ = difference_runs(*data[0], *data[1])
    model = PayloadTorqueModel(runs.links, runs.frame)
    return model.channels(None, difference, FILTER_FOLDS), difference


def _cv_rms(blocks) -> float:
    """Held-out torque RMS (N·m) of least-squares fits on all blocks but one, each in turn."""
    from inertia_id_ros.core.covariance import ChannelNormalEquations

    squares, count = 0.0, 0
    for k, held in enumerate(blocks):
        rest = ChannelNormalEquations.summed([b for i, b in enumerate(blocks) if i != k])
        gram, moment, _, _ = rest.total()
        x = np.linalg.lstsq(gram, moment, rcond=None)[0]
        squares += float(held.squared_residuals(x).sum())
        count += held.n_samples * held.n_channels
    return float(np.sqrt(squares / count))


def _payload_errors(runs, difference) -> tuple[float, float]:
    """(mass error %, inertia-about-COM error % of its Frobenius norm) of the consistent fit."""
    from inertia_id_ros.chain.payload_from_torques import fit_payload
    from inertia_id_ros.core.inertia import inertia_from_theta

    with warnings.catch_warnings():  # poorly determined inertias: the table shows the errors
        warnings.simplefilter("ignore", RuntimeWarning)
        fit = fit_payload(runs.links, None, difference, runs.frame)
    true_mass, _, true_inertia = inertia_from_theta(runs.payload_theta)
    mass, _, inertia = inertia_from_theta(fit.theta)
    return (
        100 * (mass - true_mass) / true_mass,
        100 * np.linalg.norm(inertia - true_inertia) / np.linalg.norm(true_inertia),
    )


def filter_section(duration: float = 20.0, seeds: int = 2) -> list[str]:
    """The payload's derivative filter: cross-validation against the default rule, by rate."""
    from inertia_id_ros.chain.differentiation import payload_half_width
    from inertia_id_ros.sim.torques import panda_payload_torque_runs

    lines = [
        "== filters: fit-payload-torques' derivative filter, default rule against CV ==",
        "  rate  seed  default hw  mass %   inertia %  |  CV hw  mass %   inertia %",
    ]
    for rate in FILTER_RATES:
        for seed in range(seeds):
            runs = panda_payload_torque_runs(duration=duration, rate=rate, seed=seed)
            default = payload_half_width(1.0 / rate)
            scores = {h: _cv_rms(_payload_blocks(runs, h)[0]) for h in FILTER_HALF_WIDTHS}
            chosen = min(scores, key=lambda h: scores[h])
            row = []
            for h in (default, chosen):
                row.append((h, *_payload_errors(runs, _payload_blocks(runs, h)[1])))
            (hd, md, idf), (hc, mc, ic) = row
            lines.append(
                f"  {rate:5.0f} {seed:4d}  {hd:9.3f} {md:+7.2f} {idf:9.1f}  |  {hc:5.3f} "
                f"{mc:+7.2f} {ic:9.1f}"
            )
    return lines
