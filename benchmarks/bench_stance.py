"""Benchmark: a humanoid on one foot, rooted at its stance sole vs a hand-computed pelvis state.

Data: the simulated iCub balancing on its left sole (:func:`inertia_id_ros.sim.whole_body_simulator.
icub_stance`): the sole still on a floor tilted by about 2° and 3°, the pelvis tilting by up to
about 30° through the stance leg, all 32 joints moving, only the four leg F/T sensors logged (with
offsets and noise), the ground's wrench not measured, the head IMU; ``--duration`` s at 200 Hz;
joint velocities and accelerations differentiated from the noisy encoders (as ``fit-whole-body``).

Every row is the same: a fixed base at ``l_sole`` (the stance-leg sensors balance the rest of the
robot, whose pelvis moves); only the base state that enters them differs:

- ``rooted``: the pelvis state from the stance leg's kinematics, the floor's tilt given, no IMU
  (``fit-whole-body --base fixed --fixed-frame l_sole --fixed-tilt 0.03,-0.05``);
- ``rooted, level``: the same, the tilt left at its default (level: the floor's slope unknown);
- ``rooted + IMU``: the tilt corrected at each sample from the IMU's specific force
  (``--imu-tilt correct``);
- ``pelvis orientation``: the true pelvis orientation at each sample (as one would compute it by
  hand) fed as the base state, the pelvis at rest in it;
- ``true pelvis state``: the true pelvis angular velocity, angular acceleration and proper
  acceleration (a perfect floating-base estimator; the yardstick).

Each is fitted (``lmi``) on the first 70 % and predicts the last 30 %: the held-out RMS error of
the measured leg wrenches (force N / torque N m) per sensor, and the links left inconsistent.

Run: .venv/bin/python benchmarks/bench_stance.py [--duration 60] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from inertia_id_ros.threads import limit_threads


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of motion (60)")
    parser.add_argument("--seed", type=int, default=0, help="seed of truth, motion and noise (0)")
    parser.add_argument("--holdout", type=float, default=0.3, help="held-out fraction (0.3)")
    return parser.parse_args()


ARGS = _parse()
limit_threads()

import dataclasses  # noqa: E402

import numpy as np  # noqa: E402
from scipy.spatial.transform import Rotation  # noqa: E402

from inertia_id_ros.chain.whole_body_fit import fit_whole_body, prediction_errors  # noqa: E402
from inertia_id_ros.core.base_motion import BaseMotion  # noqa: E402
from inertia_id_ros.core.inertia import check_consistency  # noqa: E402
from inertia_id_ros.core.robots import STANDARD_GRAVITY, example_robot_urdf  # noqa: E402
from inertia_id_ros.formats.data import with_derivatives  # noqa: E402
from inertia_id_ros.formats.whole_body_log import (  # noqa: E402
    imu_fixed_tilt,
    read_whole_body_file,
    whole_body_inputs,
)
from inertia_id_ros.sim import whole_body_robots as wb  # noqa: E402
from inertia_id_ros.sim.whole_body_simulator import WholeBodyMotion  # noqa: E402

RATE = 200.0
HALF_WIDTH = 0.05
"""The joint states' differentiation half-width (s), ``fit-whole-body``'s default."""


def _pelvis_states(motion: WholeBodyMotion, keep: np.ndarray) -> dict[str, BaseMotion]:
    """The hand-computed pelvis orientation (at rest) and the true pelvis state, at ``keep``."""
    quaternion = motion.q_full[keep, 3:7]  # x, y, z, w: world <- pelvis
    twist, acceleration = motion.v_full[keep, :6], motion.a_full[keep, :6]
    omega = twist[:, 3:]
    rotation = np.array([Rotation.from_quat(q).as_matrix() for q in quaternion])
    up = rotation[:, 2, :] * STANDARD_GRAVITY  # R^T e_z g
    proper = acceleration[:, :3] + np.cross(omega, twist[:, :3]) + up
    return {
        "pelvis orientation": BaseMotion.at_rest(keep.size, quaternion),
        "true pelvis state": BaseMotion(omega, acceleration[:, 3:], proper),
    }


def main() -> None:
    sim = wb.icub_stance(seed=ARGS.seed)
    t = np.arange(int(round(ARGS.duration * RATE))) / RATE
    start = time.perf_counter()
    motion = sim.simulate(t)
    data = sim.measure(
        motion, with_ddq=False, with_effort=False, rng=np.random.default_rng(ARGS.seed + 1)
    )
    pelvis_tilt = np.degrees(
        np.arccos(
            np.clip([Rotation.from_quat(q).as_matrix()[2, 2] for q in motion.q_full[:, 3:7]], -1, 1)
        )
    )
    print(
        f"iCub on its left sole, floor tilt {np.degrees(wb.ICUB_STANCE_TILT).round(2)} deg "
        f"(roll, pitch), pelvis tilt up to {pelvis_tilt.max():.1f} deg; {t.size} samples at "
        f"{RATE:g} Hz, leg F/T sensors {list(wb.ICUB_LEG_SENSORS)} "
        f"(simulated in {time.perf_counter() - start:.1f} s)"
    )
    urdf = example_robot_urdf("icub")
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "stance.npz")
        np.savez(path, **data)
        recording = read_whole_body_file(path)
    without_imu = dataclasses.replace(recording, imu={}, imu_frame=None)
    cases: dict[str, tuple] = {}
    for name, source, tilt, imu_tilt in (
        ("rooted", without_imu, wb.ICUB_STANCE_TILT, "correct"),
        ("rooted, level", without_imu, (0.0, 0.0), "correct"),
        ("rooted + IMU", recording, (0.0, 0.0), "correct"),
    ):
        start = time.perf_counter()
        model, samples = whole_body_inputs(
            source,
            urdf,
            "fixed",
            half_width=HALF_WIDTH,
            fixed_frame=wb.ICUB_STANCE_FRAME,
            fixed_tilt=tilt,
            imu_tilt=imu_tilt,
        )
        cases[name] = (model, samples, time.perf_counter() - start)
    model, rooted, _ = cases["rooted"]
    imu_model = cases["rooted + IMU"][0]
    start = time.perf_counter()
    imu_model.fixed_base_motion(rooted.q, rooted.dq, rooted.ddq)
    elapsed = time.perf_counter() - start
    print(
        f"rooted base motion: {elapsed:.2f} s for {len(rooted)} samples; the IMU's mean tilt "
        f"of {wb.ICUB_STANCE_FRAME}: "
        f"{np.degrees(imu_fixed_tilt(recording, imu_model, HALF_WIDTH)).round(2)} deg"
    )
    keep = np.searchsorted(t, with_derivatives(recording.states, HALF_WIDTH).t)
    for name, base in _pelvis_states(motion, keep).items():
        cases[name] = (model, dataclasses.replace(rooted, base=base), float("nan"))
    split = int(round(len(rooted) * (1.0 - ARGS.holdout)))
    frames = [label.rsplit(".", 1)[0] for label in model.channels()[::6]]
    header = (
        f"{'base state':<20}{'inputs s':>9}{'fit s':>7}"
        + "".join(f"{frame.replace('_ft_sensor', ''):>16}" for frame in frames)
        + f"{'mean':>16}{'inconsistent':>14}"
    )
    print(
        f"held-out last {100 * ARGS.holdout:g} %: RMS error of the measured wrenches "
        "(force N / torque N m) per sensor"
    )
    print(header)
    for name, (case_model, samples, inputs_time) in cases.items():
        train, test = samples.subset(slice(0, split)), samples.subset(slice(split, None))
        fit = fit_whole_body(case_model, train, "lmi")
        errors = prediction_errors(case_model, fit.x, test)
        force = [errors.force[frame] for frame in frames]
        torque = [errors.torque[frame] for frame in frames]
        inconsistent = sum(not check_consistency(theta).fully_consistent for theta in fit.thetas)
        print(
            f"{name:<20}{inputs_time:>9.2f}{fit.solve_time:>7.2f}"
            + "".join(f"{f:>9.3f}/{q:<6.3f}" for f, q in zip(force, torque))
            + f"{np.mean(force):>9.3f}/{np.mean(torque):<6.3f}{inconsistent:>14d}"
        )


if __name__ == "__main__":
    main()
