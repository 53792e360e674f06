"""Benchmark: one F/T calibration file through the command line's routes (fit, validate, replay).

The simulated Panda's wrist sensor reads through a drifted calibration
(:func:`inertia_id_ros.sim.ft_errors.draw_drift`: gains, cross-coupling, offsets), 12 s at
100 Hz; the calibration file is the drift's inverse. Printed: ``fit-payload``'s mass without and
with ``--ft-calibration``, ``validate``'s RMS error of the calibrated fit on the readings as
logged and through the file, and ``replay``'s final mass through the file (the node's
``wrench_calibration_file``), against the true 1.5 kg.

Run: .venv/bin/python benchmarks/calibration_routes.py
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from pathlib import Path

import numpy as np

from inertia_id_ros import cli
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.formats.ft_calibration import write_ft_calibration
from inertia_id_ros.sim.ft_errors import draw_drift
from inertia_id_ros.sim.payload import PayloadSimulator

FRAME = "panda_link8"


def run(*argv: str) -> int:
    """``inertia-id argv`` in process, its output swallowed; the exit code."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return cli.main(list(argv))


def main() -> int:
    urdf = str(example_robot_urdf("panda"))
    sim = PayloadSimulator.panda(seed=2)
    t, rng = np.arange(0, 12.0, 0.01), np.random.default_rng(0)
    q, dq = sim.measure_joints(t, rng)
    drift = draw_drift([FRAME], rng)[0]
    logged = sim.measure_wrench(t, rng) @ drift.gain.T + drift.offset
    with tempfile.TemporaryDirectory() as directory:
        d = Path(directory)
        names = np.array(sim.joint_names)
        np.savez(d / "wrist.npz", t=t, joint_names=names, q=q, dq=dq, wrench=logged)
        inverse = np.linalg.inv(drift.gain)
        sensor = {"frame": FRAME, "matrix": inverse.tolist()}
        sensor["offset"] = (-inverse @ drift.offset).tolist()
        write_ft_calibration(d / "cal.yaml", {"ft_calibration": {"sensors": [sensor]}})
        data, calibration = str(d / "wrist.npz"), ["--ft-calibration", str(d / "cal.yaml")]
        rows = []
        for label, extra in (("as logged", []), ("calibrated", calibration)):
            out = d / f"fit_{'cal' if extra else 'raw'}.json"
            run(
                "fit-payload",
                "--urdf",
                urdf,
                "--sensor-frame",
                FRAME,
                "--data",
                data,
                *extra,
                "--json",
                str(out),
            )
            rows.append((f"fit-payload, {label}", json.loads(out.read_text())["bodies"][0]))
        fitted = str(d / "fit_cal.json")
        for label, extra in (("as logged", []), ("calibrated", calibration)):
            out = d / f"validate_{'cal' if extra else 'raw'}.json"
            run("validate", fitted, "--data", data, "--urdf", urdf, *extra, "--json", str(out))
            rms = json.loads(out.read_text())["fit"]["rms"]
            rows.append((f"validate the calibrated fit, readings {label}", rms))
        out = d / "replay.json"
        description = d / "wrist.yaml"
        description.write_text(
            f"streams: {{data: {{file: {data}, time: t, time_unit: s}}}}\n"
            "joints: {stream: data, position: {key: q, unit: rad}, velocity: {key: dq}}\n"
            f"ft_sensors: [{{frame: {FRAME}, stream: data, key: wrench, sign: keep}}]\n"
        )
        run(
            "replay",
            "--input",
            str(description),
            "--urdf",
            urdf,
            "--sensor-frame",
            FRAME,
            *calibration,
            "--json",
            str(out),
        )
        rows.append(("replay, calibrated", json.loads(out.read_text())["bodies"][0]))
    print(f"{'route':<48}{'result':>24}")
    for label, value in rows:
        text = (
            f"{value:.4f} N, N m RMS"
            if isinstance(value, float)
            else (f"mass {value['theta'][0]:.4f} kg")
        )
        print(f"{label:<48}{text:>24}")
    print(f"true mass {sim.true_theta[0]:.4f} kg")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
