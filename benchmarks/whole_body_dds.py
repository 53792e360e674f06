"""The node in whole_body mode over DDS with the simulated iCub, and the held-out F/T prediction of
its published estimate.

Runs ``inertia-id-sim`` (robot ``icub_whole_body``: 32 joints, the head IMU, six internal F/T
sensors, the left sole's contact sensor, 200 Hz, true links differing from the URDF) for the first
70 % of a motion and ``inertia-id-node`` with ``config/icub_whole_body.yaml`` (``--scenario
fixed``: robot ``icub_fixed_whole_body``, iCub on a stand, and ``config/icub_fixed.yaml``: no IMU,
no base rows, the six internal sensors); counts the
published estimates and the inconsistent ones, calls ``identify``. Then, offline, the same
simulated robot's last 30 % (fresh noise) is predicted: per F/T sensor, the force RMS error of the
rows (:class:`~inertia_id_ros.core.whole_body_model.WholeBodyModel`) with the published estimate,
the URDF as given (zero offsets), the URDF with the sensor offsets fitted to the training rows, and
an OLS fit of the same training rows; the yardstick is the error of the true robot (the rows' noise:
the sensor's, the contact's beyond it, the IMU's). ``truth/URDF+off`` is the best ratio any
estimate can reach against the URDF with fitted offsets.
Also the node's cost from ``/diagnostics``: processing per sample, solve, whole update, backlog.

    .venv/bin/python benchmarks/whole_body_dds.py [--duration 60] [--seed 0] [--scenario fixed]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.qos import QoSProfile, ReliabilityPolicy

from inertia_id_ros.chain.whole_body_fit import (
    fit_whole_body,
    prediction_errors,
    prior_with_fitted_offsets,
)
from inertia_id_ros.core.base_motion import BaseMotion, gyro_derivative
from inertia_id_ros.core.filtering import local_polynomial_derivatives
from inertia_id_ros.core.inertia import check_consistency
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.core.whole_body_model import FTSensor, WholeBodyModel, WholeBodySamples
from inertia_id_ros.msg import InertialParametersArray
from inertia_id_ros.ros.conversions import msg_to_thetas, wrench_to_array
from inertia_id_ros.sim import whole_body_robots as wb
from inertia_id_ros.srv import Identify

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_node_dds import script, shut_down, spin_until_done  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RATE = 200.0
TRAIN_FRACTION = 0.7
OFFLINE_RATE = 50.0
"""Samples per second of the offline rows (OLS fit, prediction)."""
SCENARIOS = {
    "floating": ("icub", "icub_whole_body.yaml", "floating"),
    "fixed": ("icub_fixed", "icub_fixed.yaml", "fixed"),
}
"""Scenario -> (simulated robot, node config, base)."""


def run_node(
    scenario: str, duration: float, seed: int, env: dict[str, str]
) -> tuple[list, object, float, list]:
    """Simulator and node over DDS for ``duration`` s: (published arrays, identify response,
    identify wall time (s), the node's diagnostic values per update)."""
    robot, config, _ = SCENARIOS[scenario]
    node = subprocess.Popen(
        [
            script("inertia-id-node"),
            "--ros-args",
            "--params-file",
            str(REPO / "config" / config),
            "-p",
            f"urdf_path:={example_robot_urdf('icub')}",
            "-p",
            "update_rate_hz:=1.0",
            "--log-level",
            "error",
        ],
        env=env,
    )
    rclpy.init()
    peer = rclpy.create_node("inertia_id_whole_body_bench")
    published: list = []
    peer.create_subscription(
        InertialParametersArray,
        "/inertia_id/links",
        published.append,
        QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE),
    )
    diagnostics: list[dict[str, str]] = []
    peer.create_subscription(
        DiagnosticArray,
        "/diagnostics",
        lambda msg: diagnostics.extend(
            {kv.key: kv.value for kv in s.values}
            for s in msg.status
            if s.name.startswith("inertia_id")
        ),
        100,
    )
    client = peer.create_client(Identify, "/inertia_id/identify")
    time.sleep(3.0)
    sim = subprocess.Popen(
        [
            script("inertia-id-sim"),
            "--ros-args",
            "-p",
            f"robot:={robot}_whole_body",
            "-p",
            f"rate_hz:={RATE}",
            "-p",
            f"duration_sec:={duration}",
            "-p",
            f"seed:={seed}",
            "--log-level",
            "error",
        ],
        env=env,
    )
    try:
        spin_until_done(peer, sim)
        client.wait_for_service(timeout_sec=10.0)
        start = time.monotonic()
        future = client.call_async(Identify.Request())
        rclpy.spin_until_future_complete(peer, future, timeout_sec=120.0)
        return published, future.result(), time.monotonic() - start, diagnostics
    finally:
        shut_down((sim, node), peer)


def samples_of(model: WholeBodyModel, data: dict, select: np.ndarray) -> WholeBodySamples:
    """Rows' samples of a recording at ``select`` (indices), ddq and the gyro's derivative by
    local quadratic fits (without the model's IMU: the base at rest, level)."""
    t = data["t"]
    fit = local_polynomial_derivatives(t, data["q"], t[select], 0.05)
    q, dq, ddq = fit[:, 0], fit[:, 1], fit[:, 2]
    if model.imu_frame is None:
        base = BaseMotion.at_rest(select.size)
    else:
        alpha = gyro_derivative(t, data["imu_angular_velocity"])[select]
        base = model.base_motion_from_imu(
            q,
            dq,
            ddq,
            data["imu_angular_velocity"][select],
            data["imu_linear_acceleration"][select],
            alpha,
        )
    return WholeBodySamples(q, dq, ddq, base, data["ft_wrench"][select])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=60.0, help="whole motion, s (60)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--scenario",
        choices=tuple(SCENARIOS),
        default="floating",
        help="floating: iCub on one sole with the IMU; fixed: on a stand, no IMU",
    )
    args = parser.parse_args()
    robot, _, base = SCENARIOS[args.scenario]
    env = dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", PYTHONUNBUFFERED="1")
    env.setdefault("ROS_DOMAIN_ID", str(50 + os.getpid() % 50))
    os.environ.update(env)
    train = TRAIN_FRACTION * args.duration
    published, response, identify_s, diagnostics = run_node(args.scenario, train, args.seed, env)
    inconsistent = sum(
        not check_consistency(theta).fully_consistent
        for msg in published
        for theta in msg_to_thetas(msg).values()
    )
    print(
        f"\nnode over DDS, {robot} {train:.0f} s at {RATE:.0f} Hz: {len(published)} estimates "
        f"published, {inconsistent} inconsistent bodies"
    )
    if response is None or not response.success or not response.links.bodies:
        print("identify FAILED: " + ("no answer" if response is None else response.message))
        return 1
    print(
        f"identify ok in {identify_s:.2f} s (solve {response.links.bodies[0].solve_time:.3f} "
        f"s, {response.links.bodies[0].num_samples} samples)"
    )

    def median(key: str) -> float:
        values = [float(d[key]) for d in diagnostics if key in d]
        return float(np.median(values)) if values else float("nan")

    backlog = max((int(d.get("pending_samples", 0)) for d in diagnostics), default=0)
    failed = {
        k: v
        for k, v in (diagnostics[-1] if diagnostics else {}).items()
        if k.startswith("failed_solves")
    }
    print(
        f"node cost (median over {len(diagnostics)} updates): processing "
        f"{median('process_us_per_sample') / 1e3:.2f} ms per sample, solve "
        f"{median('solve_ms'):.0f} ms, update {median('update_ms'):.0f} ms; largest backlog "
        f"{backlog} clock stamps; failed solves {failed or 0}"
    )
    counts = {
        label: list(response.links.identifiability).count(label)
        for label in sorted(set(response.links.identifiability))
    }
    print(f"identifiability of the {len(response.links.identifiability)} links: {counts}")

    sim = wb.ROBOTS[robot](seed=args.seed)
    data = sim.record(args.duration, RATE)
    model = WholeBodyModel.from_urdf(
        example_robot_urdf("icub"),
        base,
        [FTSensor(f, k) for f, k in sim.ft_sensors],
        sim.imu_frame if base != "fixed" else None,
    )
    step = int(RATE / OFFLINE_RATE)
    n = data["t"].size
    inner = np.arange(20, n - 20, step)
    train_idx, test_idx = inner[data["t"][inner] < train], inner[data["t"][inner] >= train]
    estimate = msg_to_thetas(response.links)
    offsets = dict(
        zip(
            response.links.sensor_frames,
            (wrench_to_array(w) for w in response.links.sensor_offsets),
        )
    )
    true_offsets = dict(zip(data["ft_frames"], data["true_ft_offset"]))
    x_node = np.concatenate(
        [estimate[b] for b in model.bodies] + [offsets[s] for s in model.offset_sensors]
    )
    x_true = np.concatenate(
        [dict(zip(data["true_links"], data["true_theta"]))[b] for b in model.bodies]
        + [true_offsets[s] for s in model.offset_sensors]
    )
    train_samples = samples_of(model, data, train_idx)
    ols = fit_whole_body(model, train_samples, "ols")
    inconsistent_ols = sum(not check_consistency(t).fully_consistent for t in ols.thetas)
    held_out = samples_of(model, data, test_idx)
    candidates = {
        "node": x_node,
        "URDF": model.prior,
        "URDF+off": prior_with_fitted_offsets(model, train_samples),
        "OLS": ols.x,
        "truth": x_true,
    }
    errors = {name: prediction_errors(model, x, held_out).force for name, x in candidates.items()}
    print(
        f"OLS on the same training rows: {inconsistent_ols} of {len(ols.thetas)} links inconsistent"
    )
    print(
        f"\nheld-out force RMS error (N), last {100 * (1 - TRAIN_FRACTION):.0f} % "
        f"({test_idx.size} samples); URDF: its links and zero offsets, URDF+off: its links "
        "with the offsets fitted to the training rows, truth: the simulated robot (the noise "
        "floor)"
    )
    print(
        f"{'rows':<22}"
        + "".join(f"{name:>9}" for name in errors)
        + f"{'node/URDF':>11}{'node/URDF+off':>15}{'node/OLS':>10}{'node/truth':>12}"
        f"{'truth/URDF+off':>16}"
    )
    for group in errors["node"]:
        e = {name: values[group] for name, values in errors.items()}
        label = "base (l_sole contact)" if group == "base" else group
        print(
            f"{label:<22}"
            + "".join(f"{v:9.3f}" for v in e.values())
            + f"{e['node'] / e['URDF']:11.2f}{e['node'] / e['URDF+off']:15.2f}"
            f"{e['node'] / e['OLS']:10.2f}{e['node'] / e['truth']:12.2f}"
            f"{e['truth'] / e['URDF+off']:16.2f}"
        )
    return 0 if inconsistent == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
