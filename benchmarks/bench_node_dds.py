"""Benchmark of the node over real DDS: 1 kHz joint states + 1 kHz wrenches from the simulator.

Runs ``inertia-id-sim`` and ``inertia-id-node`` as separate processes and reads the node's
``/diagnostics`` after every update. Prints a table of: samples sent vs. received (dropped), the
per-sample processing cost (interpolation, filtering, kinematics, regressor), the consistent
solve time and the whole update (process + solve), median and p99.

    .venv/bin/python benchmarks/bench_node_dds.py [--duration 30] [--update-rate 10]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray

from inertia_id_ros.core.robots import example_robot_urdf


def script(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def spin_until_done(peer, process, linger: float = 3.0) -> None:
    """Spin ``peer`` while ``process`` (``subprocess.Popen``) runs, then ``linger`` s more for
    the last messages."""
    while process.poll() is None:
        rclpy.spin_once(peer, timeout_sec=0.05)
    end = time.monotonic() + linger
    while time.monotonic() < end:
        rclpy.spin_once(peer, timeout_sec=0.05)


def shut_down(processes, peer) -> None:
    """Interrupt the ``processes`` (``subprocess.Popen``) still running and wait for them (killed,
    with a note, if one has not ended 10 s later), then destroy this process's ``peer`` node and
    shut rclpy down."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            print(f"killed {process.args[:2]}: still running 10 s after SIGINT", file=sys.stderr)
            process.kill()
            process.wait()
    peer.destroy_node()
    rclpy.try_shutdown()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of motion (30)")
    parser.add_argument("--update-rate", type=float, default=10.0, help="solves per second (10)")
    parser.add_argument("--window", type=float, default=10.0, help="window length, s (10)")
    parser.add_argument("--method", default="lmi")
    args = parser.parse_args()

    env = dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", PYTHONUNBUFFERED="1")
    env.setdefault("ROS_DOMAIN_ID", str(50 + os.getpid() % 50))
    os.environ.update(env)
    node = subprocess.Popen(
        [
            script("inertia-id-node"),
            "--ros-args",
            "-p",
            f"urdf_path:={example_robot_urdf('panda')}",
            "-p",
            "sensor_frame:=panda_link8",
            "-p",
            f"window_sec:={args.window}",
            "-p",
            f"update_rate_hz:={args.update_rate}",
            "-p",
            f"method:={args.method}",
            "--log-level",
            "error",
        ],
        env=env,
    )
    rclpy.init()
    peer = rclpy.create_node("inertia_id_bench")
    updates: dict[int, dict[str, str]] = {}
    last: dict[str, str] = {}

    def on_diagnostics(msg: DiagnosticArray) -> None:
        for status in msg.status:
            if status.name.startswith("inertia_id"):
                values = {kv.key: kv.value for kv in status.values}
                last.clear()
                last.update(values)
                if "solve_ms" in values:
                    updates[int(values["published"])] = values

    peer.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 100)
    time.sleep(3.0)  # node start-up and discovery before the first sample is sent
    sim = subprocess.Popen(
        [
            script("inertia-id-sim"),
            "--ros-args",
            "-p",
            f"duration_sec:={args.duration}",
            "--log-level",
            "error",
        ],
        env=env,
    )
    try:
        spin_until_done(peer, sim)
    finally:
        shut_down((sim, node), peer)

    sent = int(round(args.duration * 1000.0))
    received_js = int(last.get("received.joint_state", 0))
    received_w = int(last.get("received.wrench", 0))
    dropped_reasons = {
        k[len("dropped.") :]: int(v) for k, v in last.items() if k.startswith("dropped.")
    }
    solve = np.array([float(u["solve_ms"]) for u in updates.values()])
    update = np.array([float(u["update_ms"]) for u in updates.values()])
    per_sample = np.array(
        [
            float(u["process_us_per_sample"])
            for u in updates.values()
            if "process_us_per_sample" in u
        ]
    )

    def stats(x: np.ndarray) -> str:
        return f"{np.median(x):10.3f} {np.percentile(x, 99):10.3f}" if len(x) else "       n/a"

    print(
        f"\nnode over DDS: {args.duration:.0f} s at 1 kHz per input, window {args.window:.0f} s, "
        f"{args.update_rate:.0f} updates/s, method {args.method}, {len(updates)} updates"
    )
    print(f"{'quantity':<40}{'value':>22}")
    print(f"{'joint states sent / received':<40}{sent:>10d} / {received_js:<9d}")
    print(f"{'wrenches sent / received':<40}{sent:>10d} / {received_w:<9d}")
    print(f"{'dropped in transport (both inputs)':<40}{2 * sent - received_js - received_w:>22d}")
    print(f"{'dropped by the node (reason: count)':<40}{str(dropped_reasons or 0):>22}")
    print(f"{'':<40}{'median':>10} {'p99':>10}")
    print(f"{'processing per sample (us)':<40}{stats(per_sample)}")
    print(f"{'consistent solve (ms)':<40}{stats(solve)}")
    print(f"{'whole update: process + solve (ms)':<40}{stats(update)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
