"""Benchmark: fit-links on a coupled wrist's motor-side log, with and without the coupled motor.

The question behind the link model's coupled motors (issue 33): an arm whose motor 7 turns with
joints 6 and 7 (:mod:`inertia_id_ros.sim.coupled_wrist`: the Panda, ``G`` rows 6 and 7
``[[80, 0], [40, 80]]``) logs motor positions, velocities and currents. ``fit-links`` reads them
through the description's transmission; with it the link model has motor 7's rotor inertia,
viscous and Coulomb friction in the motor's coordinate. Without (the same log converted to joint
side, no transmission) joint 7's armature and friction absorb what they can, and joint 6 sees
motor 7's torque unmodelled.

Per fit: the held-out torque RMS per joint while it moves (|dq| > 0.1 rad/s; exact held-out
states, measured torques), and motor 7's recovered terms against the truth with their standard
errors (:func:`~inertia_id_ros.core.covariance.parameter_covariance` of the fitted data).

Run: .venv/bin/python benchmarks/coupled_wrist.py [--duration 50] [--seed 0]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np

from inertia_id_ros.chain.links import predict_torques
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.formats.source import LogSource
from inertia_id_ros.jobs.fit_links import FitLinksOptions, LinksFit, fit_links
from inertia_id_ros.sim.coupled_wrist import (
    MOTOR7,
    CoupledWristLog,
    motor7_estimate,
    write_coupled_wrist_log,
)

MOVING = 0.1
"""rad/s: a joint moves when faster than this."""
OPTIONS = FitLinksOptions(torque_delay=0.0, estimate_tilt=False)
"""The filter, Coulomb width and prior weight chosen by cross-validation, as by default."""


def held_out_rms(log: CoupledWristLog, result: LinksFit) -> np.ndarray:
    """(7,) N·m: each joint's held-out torque RMS over the samples where it moves."""
    assert result.estimate is not None
    identification = result.estimate
    model = identification.model
    assert model is not None
    held = log.truth.subset(log.t >= log.held_out_from)
    error = predict_torques(model, identification.fit.x, held) - held.efforts
    moving = np.abs(held.velocities) > MOVING
    return np.sqrt(np.sum(np.where(moving, error, 0.0) ** 2, axis=0) / moving.sum(axis=0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=50.0, help="s, the last 10 held out")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    urdf = str(example_robot_urdf("panda"))
    with tempfile.TemporaryDirectory() as folder:
        log = write_coupled_wrist_log(folder, args.duration, seed=args.seed)
        started = time.perf_counter()
        coupled = fit_links(urdf, LogSource(input=str(log.description)), OPTIONS)
        middle = time.perf_counter()
        plain = fit_links(
            urdf, LogSource(data=str(log.joint_npz), held_out_from=log.held_out_from), OPTIONS
        )
        done = time.perf_counter()
    print(
        f"Panda, motor 7 coupled to joints 6 and 7, {args.duration:g} s at 500 Hz "
        f"(last 10 s held out), seed {args.seed}; fits {middle - started:.0f} s and "
        f"{done - middle:.0f} s\n"
    )
    joints = " | ".join(f"j{k}" for k in range(1, 8))
    print(f"| held-out torque RMS while moving (N m) | {joints} |")
    print("| --- " * 8 + "|")
    for name, result in (("with motor 7's terms", coupled), ("without", plain)):
        rms = held_out_rms(log, result)
        print(f"| {name} | " + " | ".join(f"{v:.3f}" for v in rms) + " |")
    assert coupled.estimate is not None and coupled.estimate.model is not None
    fit = coupled.estimate
    values, std = motor7_estimate(fit.model, fit.fit.x, fit.data)
    print(
        "\n| motor 7 (motor side) | true | recovered | standard error | (recovered - true) / se |"
    )
    print("| --- | --- | --- | --- | --- |")
    for term, true in MOTOR7.items():
        value, se = values[term], std[term]
        print(f"| {term} | {true:.3g} | {value:.4g} | {se:.2g} | {(value - true) / se:+.1f} |")


if __name__ == "__main__":
    main()
