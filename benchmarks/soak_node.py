"""Soak test of the node over real DDS: the simulator at 1 kHz on both inputs for a long run.

Runs ``inertia-id-sim`` and ``inertia-id-node`` as separate processes for ``--duration`` s
(default 600) and reports, against the targets:

* the node's resident memory (VmRSS, read about 20 times a second, kept as each second's
  minimum: an update's temporaries, mapped and unmapped within milliseconds, are not growth; the
  trend of one raw sample a second is printed too): at the first estimate, once its buffers are
  warm (``--warm`` s into the motion: the window's double buffer has been written through) and at
  the end; growth from warm to end (target < 5 MB) and its trend over the second half (target
  <= 0.02 MB/min), beside the trends of two bare rclpy subscribers to the same topics (same
  minima): one spun by the default executor, one spun as the node spins its inputs (the events
  executor's ``spin_once`` loop), which tell rclpy's own memory trend from the node's;
* the node's CPU share of one core (``/proc/<pid>/stat`` utime + stime over wall time, warm to
  end), beside that of a bare rclpy subscriber to the same two topics (``bare_subscriber.py``,
  same QoS, default executor, count-only callbacks) measured over the same interval, and their
  ratio (target <= 1.3: the floor is rclpy's own per-message cost);
* missed updates: ``update_rate`` x the time from the first to the last estimate received, plus
  one, vs. the estimates received (target 0; the node catches up on late updates);
* the estimate's error vs. the simulator's ground truth over time (mass, COM, inertia about the
  COM, F/T force offset), per sixth of the run;
* samples sent vs. received, and dropped by the node per reason (``/diagnostics``).

    .venv/bin/python benchmarks/soak_node.py [--duration 600] [--update-rate 10] [--window 10]
        [--rss-csv OUT]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import rclpy
from bench_node_dds import script, shut_down
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from inertia_id_ros.core.inertia import inertia_from_theta
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.msg import InertialParameters
from inertia_id_ros.ros.conversions import wrench_to_array

RATE_HZ = 1000.0
"""Rate of both simulated inputs (Hz)."""


def rss_mb(pid: int) -> float:
    """Resident memory (VmRSS) of process ``pid`` (MB)."""
    match = re.search(r"^VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.M)
    return int(match.group(1)) / 1024.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time (s) of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


class Monitor:
    """Subscribes to the node's estimates, its diagnostics and the simulator's ground truth."""

    def __init__(self, peer) -> None:
        latched = QoSProfile(
            depth=1,
            durability=DurabilityPolicy.TRANSIENT_LOCAL,
            reliability=ReliabilityPolicy.RELIABLE,
        )
        self.estimates: list[tuple[float, InertialParameters]] = []  # (arrival (s), message)
        self.truth: InertialParameters | None = None
        self.diagnostics: dict[str, str] = {}
        peer.create_subscription(
            InertialParameters,
            "/inertia_id/estimate",
            lambda msg: self.estimates.append((time.monotonic(), msg)),
            QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE),
        )
        peer.create_subscription(
            InertialParameters, "/inertia_id_sim/ground_truth", self._on_truth, latched
        )
        peer.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 100)

    def _on_truth(self, msg: InertialParameters) -> None:
        self.truth = msg

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            if status.name.startswith("inertia_id"):
                self.diagnostics = {kv.key: kv.value for kv in status.values}


def estimate_errors(msg: InertialParameters, truth: InertialParameters) -> np.ndarray:
    """(mass %, COM mm, inertia about the COM % (Frobenius), force offset N) of an estimate."""
    mass, com, inertia = inertia_from_theta(np.array(truth.theta))
    m, c, i = inertia_from_theta(np.array(msg.theta))
    offset = wrench_to_array(msg.sensor_offset) - wrench_to_array(truth.sensor_offset)
    return np.array(
        [
            100 * abs(m - mass) / mass,
            1e3 * np.linalg.norm(c - com),
            100 * np.linalg.norm(i - inertia) / np.linalg.norm(inertia),
            np.linalg.norm(offset[:3]),
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of motion (600)")
    parser.add_argument("--update-rate", type=float, default=10.0, help="solves per second (10)")
    parser.add_argument("--window", type=float, default=10.0, help="window length, s (10)")
    parser.add_argument(
        "--warm",
        type=float,
        default=30.0,
        help="seconds into the motion when the memory reference is taken (30)",
    )
    parser.add_argument("--method", default="lmi")
    parser.add_argument(
        "--rss-csv", metavar="OUT", help="write the resident-memory series (MB per second) to OUT"
    )
    args = parser.parse_args()
    if not args.duration > args.warm + 10.0:
        parser.error(f"--duration must exceed --warm + 10 s ({args.warm + 10.0:.0f} s)")

    env = dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", PYTHONUNBUFFERED="1")
    env.setdefault("ROS_DOMAIN_ID", str(50 + os.getpid() % 50))
    os.environ.update(env)
    log = tempfile.NamedTemporaryFile("w+", prefix="soak_node_", suffix=".log", delete=False)
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
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    bare_log = tempfile.NamedTemporaryFile("w+", prefix="soak_bare_", suffix=".log", delete=False)
    bare = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("bare_subscriber.py"))],
        env=env,
        stdout=bare_log,
        stderr=subprocess.STDOUT,
    )
    bare_events = subprocess.Popen(  # the node's way of spinning its inputs, for the memory trend
        [
            sys.executable,
            str(Path(__file__).with_name("bare_subscriber.py")),
            "--executor",
            "events",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    rclpy.init()
    peer = rclpy.create_node("inertia_id_soak")
    monitor = Monitor(peer)
    time.sleep(3.0)  # node start-up and discovery before the first sample is sent
    rss_idle = rss_mb(node.pid)
    sim = subprocess.Popen(
        [
            script("inertia-id-sim"),
            "--ros-args",
            "-p",
            f"duration_sec:={args.duration}",
            "-p",
            f"rate_hz:={RATE_HZ}",
            "--log-level",
            "error",
        ],
        env=env,
    )
    rss: list[tuple[float, float, float]] = []  # (wall s since the first estimate, MB, MB)
    bare_rss: list[tuple[float, float]] = []  # the bare subscribers' per-second minima (MB)
    cpu_warm = wall_warm = bare_warm = None
    next_sample = time.monotonic()
    minima = np.full(3, np.inf)  # node, bare, bare (events) over the current second
    try:
        while sim.poll() is None:
            rclpy.spin_once(peer, timeout_sec=0.05)
            now = time.monotonic()
            if not monitor.estimates:
                continue
            sample = [rss_mb(pid) for pid in (node.pid, bare.pid, bare_events.pid)]
            minima = np.minimum(minima, sample)
            if now >= next_sample:
                next_sample = now + 1.0
                since_first = now - monitor.estimates[0][0]
                rss.append((since_first, sample[0], minima[0]))
                bare_rss.append((minima[1], minima[2]))
                minima[:] = np.inf
                if cpu_warm is None and since_first >= args.warm:
                    cpu_warm, bare_warm = cpu_seconds(node.pid), cpu_seconds(bare.pid)
                    wall_warm = now
            if node.poll() is not None:
                raise RuntimeError(f"the node exited with {node.returncode}; log: {log.name}")
        cpu_end, bare_end = cpu_seconds(node.pid), cpu_seconds(bare.pid)
        wall_end = time.monotonic()
        rss_end = rss_mb(node.pid)
        end = time.monotonic() + 3.0
        while time.monotonic() < end:
            rclpy.spin_once(peer, timeout_sec=0.05)
    finally:
        shut_down((sim, node, bare, bare_events), peer)

    if not monitor.estimates or monitor.truth is None or cpu_warm is None:
        print(f"no estimates or no ground truth received; node log: {log.name}")
        return 1
    arrivals = np.array([arrival for arrival, _ in monitor.estimates])
    expected = int(round((arrivals[-1] - arrivals[0]) * args.update_rate)) + 1
    t_rss, mb, mb_min = np.array(rss).T
    if args.rss_csv:
        np.savetxt(
            args.rss_csv,
            np.column_stack([t_rss, mb, mb_min, np.array(bare_rss)]),
            delimiter=",",
            fmt="%.3f",
            header="t_s,node_mb,node_min_mb,bare_min_mb,bare_events_min_mb",
        )
    warm = t_rss >= args.warm
    second_half = t_rss >= t_rss[-1] / 2
    trend_raw = 60.0 * np.polyfit(t_rss[second_half], mb[second_half], 1)[0]
    trend = 60.0 * np.polyfit(t_rss[second_half], mb_min[second_half], 1)[0]
    bare_trend = 60.0 * np.polyfit(t_rss[second_half], np.array(bare_rss)[second_half], 1)[0]
    # (bare_trend: the single-threaded and the events executor's subscriber, MB/min)
    sent = int(round(args.duration * RATE_HZ))
    diagnostics = monitor.diagnostics
    dropped = {
        k[len("dropped.") :]: int(v) for k, v in diagnostics.items() if k.startswith("dropped.")
    }
    bare_counts = re.findall(r"received (\d+) (\d+)", Path(bare_log.name).read_text())
    bare_received = sum(map(int, bare_counts[-1])) if bare_counts else 0
    node_cpu = 100 * (cpu_end - cpu_warm) / (wall_end - wall_warm)
    bare_cpu = 100 * (bare_end - bare_warm) / (wall_end - wall_warm)
    warnings = sum("WARN" in line for line in Path(log.name).read_text().splitlines())

    def row(quantity: str, value: str, target: str = "") -> None:
        print(f"{quantity:<46}{value:>24}  {target}")

    print(
        f"\nsoak: {args.duration:.0f} s at {RATE_HZ:.0f} Hz per input, window "
        f"{args.window:.0f} s, {args.update_rate:.0f} updates/s, method {args.method}"
    )
    row("quantity", "value", "target")
    row("node RSS idle / first estimate (MB)", f"{rss_idle:.1f} / {mb[0]:.1f}")
    row(f"node RSS at {args.warm:.0f} s / end (MB)", f"{mb[warm][0]:.1f} / {rss_end:.1f}")
    row(f"RSS growth {args.warm:.0f} s -> end (MB)", f"{rss_end - mb[warm][0]:.2f}", "< 5")
    row("RSS trend over the second half (MB/min)", f"{trend:.3f}", "<= 0.02")
    row("  the same, of one sample a second", f"{trend_raw:.3f}")
    row("bare subscriber's RSS trend, same interval", f"{bare_trend[0]:.3f}")
    row("  the same, spun as the node spins its inputs", f"{bare_trend[1]:.3f}")
    row(f"node CPU, {args.warm:.0f} s -> end (% of one core)", f"{node_cpu:.1f}")
    row("bare rclpy subscriber CPU, same interval (%)", f"{bare_cpu:.1f}")
    row("node CPU / bare subscriber CPU", f"{node_cpu / bare_cpu:.2f}", "<= 1.3")
    row(
        "updates expected / published / received",
        f"{expected} / {diagnostics.get('published', '?')} / {len(arrivals)}",
    )
    row("missed updates (expected - received)", f"{expected - len(arrivals)}", "0")
    row("joint states sent / received", f"{sent} / {diagnostics.get('received.joint_state', 0)}")
    row("wrenches sent / received", f"{sent} / {diagnostics.get('received.wrench', 0)}")
    row("messages received by the bare subscriber", f"{bare_received} / {2 * sent}")
    row("dropped by the node (reason: count)", str(dropped or 0))
    failed = {
        k[len("failed_solves.") :]: int(v)
        for k, v in diagnostics.items()
        if k.startswith("failed_solves.")
    }
    row("failed solves (reason: count)", str(failed or 0), "0")
    row("warnings in the node's log", str(warnings))

    t_estimate = arrivals - arrivals[0]
    errors = np.array([estimate_errors(msg, monitor.truth) for _, msg in monitor.estimates])
    print(f"\nestimate vs. truth ({len(errors)} estimates; mean per sixth of the run, and max)")
    print(
        f"{'from (s)':>9} {'to (s)':>7} {'mass (%)':>9} {'COM (mm)':>9} {'inertia (%)':>12} "
        f"{'offset (N)':>11}"
    )
    edges = np.linspace(0.0, t_estimate[-1] + 1e-9, 7)
    for lo, hi in zip(edges, edges[1:]):
        part = errors[(t_estimate >= lo) & (t_estimate < hi)]
        if len(part):
            print(
                f"{lo:9.0f} {hi:7.0f} {part[:, 0].mean():9.4f} {part[:, 1].mean():9.3f} "
                f"{part[:, 2].mean():12.2f} {part[:, 3].mean():11.4f}"
            )
    after_first_window = errors[t_estimate >= args.window]
    print(
        f"{'max after the first window':>17} {after_first_window[:, 0].max():9.4f} "
        f"{after_first_window[:, 1].max():9.3f} {after_first_window[:, 2].max():12.2f} "
        f"{after_first_window[:, 3].max():11.4f}"
    )
    print(f"(node log: {log.name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
