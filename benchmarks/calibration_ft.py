"""The F/T sections of ``bench_calibration.py`` (its docstring says what they print)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.formats.ft_calibration import write_ft_calibration
from inertia_id_ros.formats.source import LogSource
from inertia_id_ros.jobs.calibrate_ft import CalibrateFTOptions, calibrate_ft, calibrate_wrist_ft
from inertia_id_ros.jobs.fit_whole_body import FitWholeBodyOptions, fit_whole_body
from inertia_id_ros.sim.ft_errors import apply_drift, draw_drift

AXES = ("fx", "fy", "fz", "tx", "ty", "tz")
DRIFTED = ("l_leg_ft_sensor", "l_foot_ft_sensor")
STANCE = {"base": "fixed", "fixed_frame": "l_sole", "fixed_tilt": (0.03, -0.05)}


def _stance_recording(path: Path, duration: float, seed: int) -> dict:
    """The drifted stance recording without IMU keys, written to ``path``; its data."""
    from inertia_id_ros.sim.whole_body_robots import icub_stance

    data = icub_stance(seed=seed).record(duration, 100.0)
    apply_drift(data, draw_drift(DRIFTED, np.random.default_rng(seed + 2)))
    for key in ("imu_frame", "imu_orientation", "imu_angular_velocity", "imu_linear_acceleration"):
        data.pop(key)
    np.savez(path, **data)
    return data


def ft_section(duration: float, seed: int, work: Path) -> None:
    """The humanoid's leg and foot sensors: recovered against true, held-out errors, time; then
    the whole-body fit with and without the calibration."""
    urdf = str(example_robot_urdf("icub"))
    path = work / "stance.npz"
    data = _stance_recording(path, duration, seed)
    frames = [str(f) for f in data["ft_frames"]]
    options = CalibrateFTOptions(sensors=DRIFTED, holdout=0.5, **STANCE)  # type: ignore[arg-type]
    started = time.perf_counter()
    result = calibrate_ft(urdf, LogSource(data=str(path)), options)
    elapsed = time.perf_counter() - started
    assert result.estimate is not None and result.held_out is not None
    print(f"ft: iCub on its left sole, no IMU, {duration:g} s at 100 Hz, seed {seed}")
    print(f"calibration time {elapsed:.2f} s (acceptance <= 10 s for 60 s at 100 Hz)")
    print(
        f"{'sensor':<18}{'axis':<6}{'true gain':>10}{'fitted':>9}{'± se':>8}"
        f"{'factory+offs':>14}{'calibrated':>12}{'ratio':>8}"
    )
    worst = 0.0
    for frame in DRIFTED:
        cal, errors = result.estimate[frame], result.held_out[frame]
        truth = data["true_ft_calibration"][frames.index(frame)]
        for i, axis in enumerate(AXES):
            worst = max(worst, float(errors.ratio[i]))
            print(
                f"{frame:<18}{axis:<6}{truth[i, i]:10.3f}{cal.matrix[i, i]:9.3f}"
                f"{cal.matrix_std[i, i]:8.3f}{errors.current[i]:14.3f}{errors.calibrated[i]:12.3f}"
                f"{errors.ratio[i]:8.3f}"
            )
    print(f"worst held-out ratio {worst:.3f} (acceptance <= 0.5 on every sensor and axis)")
    file = work / "cal.yaml"
    write_ft_calibration(file, result.calibration_file)
    for label, calibration in (("factory", None), ("calibrated", str(file))):
        fit = fit_whole_body(
            urdf,
            LogSource(data=str(path), ft_calibration=calibration),
            FitWholeBodyOptions(holdout=0.5, **STANCE),  # type: ignore[arg-type]
        )
        assert fit.estimate is not None and fit.holdout is not None
        inconsistent = sum(not b["fully_consistent"] for b in fit.document["bodies"])
        held = ", ".join(
            f"{group} {row['force']['fit']:.2f}/{row['torque']['fit']:.3f}"
            for group, row in fit.holdout.items()
        )
        print(
            f"fit-whole-body ({label} readings): {inconsistent} links inconsistent; "
            f"held-out N / N m: {held}"
        )


def ft_wrist_section(seed: int, work: Path) -> None:
    """A Panda wrist sensor with a drifted calibration, against its known payload."""
    import json

    from inertia_id_ros.sim.payload import PayloadSimulator

    sim = PayloadSimulator.panda(seed=seed)
    t = np.arange(0, 20.0, 0.01)
    rng = np.random.default_rng(seed)
    q, dq = sim.measure_joints(t, rng)
    drift = draw_drift(["panda_link8"], rng)[0]
    logged = sim.measure_wrench(t, rng) @ drift.gain.T + drift.offset
    path = work / "wrist.npz"
    np.savez(path, t=t, joint_names=np.array(sim.joint_names), q=q, dq=dq, wrench=logged)
    payload = work / "payload.json"
    body = {"name": "payload", "frame": "panda_link8", "theta": sim.true_theta.tolist()}
    payload.write_text(json.dumps({"bodies": [body]}))
    options = CalibrateFTOptions(holdout=0.5)
    urdf = str(example_robot_urdf("panda"))
    result = calibrate_wrist_ft(
        urdf, "panda_link8", str(payload), LogSource(data=str(path)), options
    )
    assert result.estimate is not None and result.held_out is not None
    cal, errors = result.estimate["panda_link8"], result.held_out["panda_link8"]
    truth = np.linalg.inv(drift.gain)
    print("ft wrist: Panda, known 1.5 kg payload, 20 s at 100 Hz")
    for i, axis in enumerate(AXES):
        print(
            f"panda_link8       {axis:<6}{truth[i, i]:10.3f}{cal.matrix[i, i]:9.3f}"
            f"{cal.matrix_std[i, i]:8.3f}{errors.current[i]:14.4f}{errors.calibrated[i]:12.4f}"
            f"{errors.ratio[i]:8.3f}"
        )


def filter_section(duration: float, seed: int, work: Path) -> None:
    """fit-whole-body's derivative filter chosen by cross-validation against five fixed ones, on
    iCub on its left sole without IMU (sensors not drifted), fitted on the first half: the
    held-out mean squared wrench error over the sensors' force and torque rows."""
    from inertia_id_ros.sim.whole_body_robots import icub_stance

    urdf = str(example_robot_urdf("icub"))
    data = icub_stance(seed=seed).record(duration, 100.0)
    for key in ("imu_frame", "imu_orientation", "imu_angular_velocity", "imu_linear_acceleration"):
        data.pop(key)
    path = work / "plain.npz"
    np.savez(path, **data)
    print(f"filter: fit-whole-body on iCub on its left sole, no IMU, {duration:g} s at 100 Hz")
    errors = {}
    for half_width in (None, 0.025, 0.05, 0.1, 0.15, 0.2):
        options = FitWholeBodyOptions(holdout=0.5, filter_half_width=half_width, **STANCE)  # type: ignore[arg-type]
        fit = fit_whole_body(urdf, LogSource(data=str(path)), options)
        assert fit.holdout is not None
        squares = [
            row[kind]["fit"] ** 2 for row in fit.holdout.values() for kind in ("force", "torque")
        ]
        label = "chosen" if half_width is None else f"±{half_width:g} s"
        if half_width is None:
            label += f" (±{fit.document['differentiation']['half_width']:g} s)"
        errors[label] = float(np.mean(squares))
        print(f"{label:<20} held-out mean squared error {errors[label]:.5f}")
    chosen = next(v for k, v in errors.items() if k.startswith("chosen"))
    best = min(v for k, v in errors.items() if not k.startswith("chosen"))
    print(f"chosen / best fixed: {chosen / best:.3f} (acceptance <= 1.05)")
