"""The node's CPU and memory against rclpy's floors, in every mode, side by side in one run.

For each mode, at its shipped config's rates, runs as separate processes: the simulator, the node
(one per ``--paths`` entry: ``raw``, its default input path, and ``typed``, the fallback, each in
its own namespace) and two bare subscribers to the node's input topics with the node's QoS that
only count messages (``bare_subscriber.py``), both spun as the node spins its inputs (the events
executor's ``spin_once`` loop): one taking serialized messages (``raw``: rclpy's floor) and one
typed messages. Prints, per mode, each process's CPU (% of one core, ``/proc/<pid>/stat`` utime
+ stime over the same wall interval, ``--warm`` s into the motion to its end) and the node's
ratio to each floor; the messages sent, received by each node (its ``/diagnostics`` after the
motion, once they count every message or stop changing for 5 s, at most 30 s) and by each
floor; and the resident memory (each second's minimum of about 20 reads, as ``soak_node.py``):
growth from ``--warm`` s to the end and the trend over the second half (MB/min), the node's
beside the floors'.

Modes (the simulator's robot, the config, the rates):

- ``payload``: ``panda``, ``config/panda_payload.yaml`` with a 10 s window and 10 updates/s,
  joint states and wrenches at 1 kHz each;
- ``links``: ``panda_torques`` without a payload, ``config/panda_links.yaml``, joint states with
  efforts at 1 kHz;
- ``payload_torques``: ``panda_torques``, ``config/panda_payload_torques.yaml``, 1 kHz;
- ``whole_body``: ``icub_stance_whole_body`` (four F/T sensors and an IMU),
  ``config/icub_stance.yaml``, every input at 200 Hz (the iCub configs' rate).

    .venv/bin/python benchmarks/bench_node_cpu.py [--modes payload links ...] [--duration 60]
        [--warm 15] [--paths raw typed] [--repeat 1]

A 10-minute memory run: ``--modes payload --duration 600 --warm 30``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import rclpy
from bench_node_dds import script, shut_down
from diagnostic_msgs.msg import DiagnosticArray
from soak_node import cpu_seconds, rss_mb

from inertia_id_ros.core.robots import example_robot_urdf

REPO = Path(__file__).resolve().parents[1]
JOINT_STATE, WRENCH, IMU = (
    "sensor_msgs/msg/JointState",
    "geometry_msgs/msg/WrenchStamped",
    "sensor_msgs/msg/Imu",
)
ICUB_LEG_SENSORS = ("l_leg_ft_sensor", "r_leg_ft_sensor", "l_foot_ft_sensor", "r_foot_ft_sensor")


@dataclass(frozen=True)
class Setup:
    """A mode's run: the simulator's parameters, the node's config file, URDF and overrides, the
    input topics (topic -> type) and their rate (Hz)."""

    sim: dict[str, str]
    config: str
    robot: str
    topics: dict[str, str]
    rate_hz: float
    overrides: dict[str, str] = field(default_factory=dict)


SETUPS = {
    "payload": Setup(
        {"robot": "panda"},
        "panda_payload.yaml",
        "panda",
        {"/joint_states": JOINT_STATE, "/ft_sensor/wrench": WRENCH},
        1000.0,
        {"window_sec": "10.0", "update_rate_hz": "10.0"},
    ),
    "links": Setup(
        {"robot": "panda_torques", "payload_mass": "0.0"},
        "panda_links.yaml",
        "panda",
        {"/joint_states": JOINT_STATE},
        1000.0,
    ),
    "payload_torques": Setup(
        {"robot": "panda_torques"},
        "panda_payload_torques.yaml",
        "panda",
        {"/joint_states": JOINT_STATE},
        1000.0,
    ),
    "whole_body": Setup(
        {"robot": "icub_stance_whole_body"},
        "icub_stance.yaml",
        "icub",
        {
            "/joint_states": JOINT_STATE,
            "/imu": IMU,
            **{f"/{frame}/wrench": WRENCH for frame in ICUB_LEG_SENSORS},
        },
        200.0,
    ),
}


def ros_args(values: dict[str, str]) -> list[str]:
    """``-p name:=value`` for each of ``values``."""
    return [arg for name, value in values.items() for arg in ("-p", f"{name}:={value}")]


class Diagnostics:
    """The newest ``/diagnostics`` values of each node, by its ``input_path``."""

    def __init__(self, peer) -> None:
        self.values: dict[str, dict[str, str]] = {}
        peer.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 100)

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            if status.name.startswith("inertia_id"):
                values = {kv.key: kv.value for kv in status.values}
                self.values[values.get("input_path", "?")] = values

    def received(self, path: str) -> int:
        """The messages the node on ``path`` counted as received, all inputs."""
        values = self.values.get(path, {})
        return sum(int(v) for k, v in values.items() if k.startswith("received."))


def trend(t: np.ndarray, mb: np.ndarray) -> float:
    """The slope of ``mb`` over the second half of ``t`` (MB/min)."""
    half = t >= t[-1] / 2
    return 60.0 * float(np.polyfit(t[half], mb[half], 1)[0])


def run_mode(name: str, setup: Setup, args, env: dict[str, str]) -> dict:
    """One run of mode ``name``: the processes' CPU, memory and counts (see the module
    docstring)."""
    logs = Path(tempfile.mkdtemp(prefix=f"bench_node_cpu_{name}_"))
    processes: dict[str, subprocess.Popen] = {}

    def start(key: str, command: list[str]) -> None:
        processes[key] = subprocess.Popen(
            command, env=env, stdout=(logs / f"{key}.log").open("w"), stderr=subprocess.STDOUT
        )

    for path in args.paths:
        start(
            f"node {path}",
            [
                script("inertia-id-node"),
                "--ros-args",
                "-r",
                f"__ns:=/{path}",
                "--params-file",
                str(REPO / "config" / setup.config),
                *ros_args(
                    {
                        "urdf_path": str(example_robot_urdf(setup.robot)),
                        "input_path": path,
                        **setup.overrides,
                    }
                ),
            ],
        )
    topics = [arg for t, msgtype in setup.topics.items() for arg in ("--topic", f"{t}={msgtype}")]
    bare = [sys.executable, str(Path(__file__).with_name("bare_subscriber.py"))]
    start("floor raw", [*bare, "--executor", "events", "--raw", *topics])
    start("floor typed", [*bare, "--executor", "events", *topics])
    rclpy.init()
    peer = rclpy.create_node("inertia_id_bench_cpu")
    diagnostics = Diagnostics(peer)
    time.sleep(5.0)  # start-up and discovery before the first sample is sent
    sim = subprocess.Popen(
        [
            script("inertia-id-sim"),
            "--ros-args",
            *ros_args(
                {**setup.sim, "rate_hz": str(setup.rate_hz), "duration_sec": str(args.duration)}
            ),
            "--log-level",
            "error",
        ],
        env=env,
    )
    pids = {key: p.pid for key, p in processes.items()}
    series: list[list[float]] = []  # per second: t, then each process's minimum RSS (MB)
    cpu_warm: dict[str, float] = {}
    wall_warm = 0.0
    start_wall = time.monotonic()
    next_sample = start_wall + 1.0
    minima = np.full(len(pids), np.inf)
    try:
        while sim.poll() is None:
            rclpy.spin_once(peer, timeout_sec=0.05)
            now = time.monotonic()
            minima = np.minimum(minima, [rss_mb(pid) for pid in pids.values()])
            if now >= next_sample:
                next_sample = now + 1.0
                series.append([now - start_wall, *minima])
                minima[:] = np.inf
                if not cpu_warm and now - start_wall >= args.warm:
                    cpu_warm = {key: cpu_seconds(pid) for key, pid in pids.items()}
                    wall_warm = now
            for key, process in processes.items():
                if process.poll() is not None:
                    raise RuntimeError(f"{key} exited with {process.returncode}; logs: {logs}")
        cpu_end = {key: cpu_seconds(pid) for key, pid in pids.items()}
        wall_end = time.monotonic()
        sent = int(round(args.duration * setup.rate_hz)) * len(setup.topics)
        end, last, counts = time.monotonic() + 30.0, time.monotonic(), None
        while time.monotonic() < min(end, last + 5.0):  # until the nodes' counts settle
            rclpy.spin_once(peer, timeout_sec=0.05)
            now_counts = [diagnostics.received(path) for path in args.paths]
            if now_counts != counts:
                counts, last = now_counts, time.monotonic()
            if all(count >= sent for count in now_counts):
                break
    finally:
        shut_down((sim, *processes.values()), peer)
    if not cpu_warm:
        raise RuntimeError(f"the run ended before --warm; logs: {logs}")
    data = np.array(series)
    t, rss = data[:, 0], data[:, 1:]
    warm = t >= args.warm
    floors = {}
    for key in ("floor raw", "floor typed"):
        counts = re.findall(r"received ([\d ]+)", (logs / f"{key}.log").read_text())
        floors[key] = sum(map(int, counts[-1].split())) if counts else 0
    return {
        "cpu": {key: 100 * (cpu_end[key] - cpu_warm[key]) / (wall_end - wall_warm) for key in pids},
        "growth": {key: rss[-1, i] - rss[warm, i][0] for i, key in enumerate(pids)},
        "trend": {key: trend(t, rss[:, i]) for i, key in enumerate(pids)},
        "sent": sent,
        "received": {
            **{f"node {path}": diagnostics.received(path) for path in args.paths},
            **floors,
        },
        "dropped": {
            path: {
                k[len("dropped.") :]: v
                for k, v in diagnostics.values.get(path, {}).items()
                if k.startswith("dropped.") and v != "0"
            }
            for path in args.paths
        },
        "logs": logs,
    }


def report(name: str, setup: Setup, result: dict, args) -> None:
    """Print one run's table."""
    print(
        f"\n{name}: {args.duration:.0f} s, {len(setup.topics)} inputs at {setup.rate_hz:.0f} Hz "
        f"(config/{setup.config}{''.join(f', {k} {v}' for k, v in setup.overrides.items())})"
    )
    print(
        f"{'process':<14}{'CPU %':>8}{'/ raw floor':>12}{'/ typed floor':>14}"
        f"{'received':>18}{'RSS growth MB':>15}{'trend MB/min':>14}"
    )
    cpu, raw, typed = result["cpu"], result["cpu"]["floor raw"], result["cpu"]["floor typed"]
    for key in cpu:
        print(
            f"{key:<14}{cpu[key]:8.1f}{cpu[key] / raw:12.2f}{cpu[key] / typed:14.2f}"
            f"{result['received'][key]:>10d} / {result['sent']:<6d}"
            f"{result['growth'][key]:15.2f}{result['trend'][key]:14.3f}"
        )
    for path, dropped in result["dropped"].items():
        print(f"dropped by node {path}: {dropped or 0}")
    print(f"(logs: {result['logs']})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", nargs="+", choices=list(SETUPS), default=list(SETUPS))
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of motion (60)")
    parser.add_argument(
        "--warm", type=float, default=15.0, help="seconds into the motion CPU is counted from (15)"
    )
    parser.add_argument(
        "--paths",
        nargs="+",
        choices=("raw", "typed"),
        default=["raw", "typed"],
        help="the nodes' input paths, one node each (default: raw typed)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs of each mode (1)")
    args = parser.parse_args()
    if not args.duration > args.warm + 10.0:
        parser.error(f"--duration must exceed --warm + 10 s ({args.warm + 10.0:.0f} s)")
    env = dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", PYTHONUNBUFFERED="1")
    env.setdefault("ROS_DOMAIN_ID", str(50 + os.getpid() % 50))
    os.environ.update(env)
    ratios: dict[str, list[float]] = {}
    for _ in range(args.repeat):
        for name in args.modes:
            result = run_mode(name, SETUPS[name], args, env)
            report(name, SETUPS[name], result, args)
            for path in args.paths:
                ratio = result["cpu"][f"node {path}"] / result["cpu"]["floor raw"]
                ratios.setdefault(f"{name} {path}", []).append(ratio)
    print("\nnode CPU / raw events floor, per run")
    for key, values in ratios.items():
        print(f"{key:<24}" + " ".join(f"{v:6.2f}" for v in values))
    return 0


if __name__ == "__main__":
    sys.exit(main())
