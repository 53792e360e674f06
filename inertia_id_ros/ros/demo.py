"""The live demos: simulator, identification node and a client, as three processes over DDS.

``inertia-id demo`` starts ``inertia-id-sim`` (Panda, payload beyond the flange ``panda_link8``,
1 kHz, noisy F/T with an offset) and ``inertia-id-node``, follows the published estimates as they
converge, calls ``/inertia_id/identify`` once the motion has ended and prints truth vs. estimate.

``inertia-id demo --excite`` (:func:`run_excite_demo`) is the load-identification wizard: the
simulated Panda holds still until the client calls ``/inertia_id/excite`` (a motion designed on
the spot from the measured pose, or a trajectory file); the node ramps in, plays the motion
through the simulator's joint trajectory topic (which it follows with a tracking lag), ramps out,
identifies on the motion's samples and reports on ``/inertia_id/excitation``.

With a ``keystore`` (``inertia-id demo --secure``: a new one in a temporary directory,
:func:`inertia_id_ros.ros.keystore.temporary_keystore`) every process runs under DDS-Security:
the simulator, the node and the client each in its enclave, the client as the operator (who may
call ``~/excite`` and ``~/identify``).

Exit code 0 when the acceptance thresholds hold, 1 otherwise.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import rclpy
from rclpy.client import Client
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState

from inertia_id_ros.core.inertia import check_consistency, inertia_from_theta
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.errors import StartupError
from inertia_id_ros.msg import ExcitationStatus, InertialParameters
from inertia_id_ros.options import EXIT_INTERRUPTED
from inertia_id_ros.ros.conversions import msg_to_theta, wrench_to_array
from inertia_id_ros.ros.keystore import (
    DEFAULT_OPERATOR,
    NODE_ENCLAVE,
    SIMULATOR_ENCLAVE,
    Keystore,
)
from inertia_id_ros.ros.qos import LATCHED
from inertia_id_ros.ros.security import RCLError
from inertia_id_ros.srv import Excite, Identify

SENSOR_FRAME = "panda_link8"

# Acceptance thresholds of the default demo (issue 2).
MASS_REL_TOL = 0.005
COM_TOL = 0.002  # m
INERTIA_REL_TOL = 0.10  # Frobenius, about the COM
OFFSET_FORCE_TOL = 0.1  # N


def executable(name: str, module: str) -> list[str]:
    """The console script ``name`` beside this interpreter, else ``python -m module``."""
    found = shutil.which(name, path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", module]


def ros_environment(keystore: Keystore | None = None) -> dict[str, str]:
    """The environment for the demo's processes: DDS discovery kept on this machine; under
    DDS-Security with ``keystore``."""
    env = dict(os.environ)
    env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    env.setdefault("PYTHONUNBUFFERED", "1")
    if keystore is not None:
        env.update(keystore.environment())
    return env


def _client_node(name: str, keystore: Keystore | None) -> Node:
    """rclpy and the demo client's node, under DDS-Security as the operator with ``keystore``;
    :class:`~inertia_id_ros.errors.StartupError` when the node cannot be created."""
    saved = dict(os.environ)
    os.environ.update(ros_environment(keystore))  # rclpy reads it once, in init
    try:
        rclpy.init(args=None if keystore is None else ["--ros-args", "--enclave", DEFAULT_OPERATOR])
    finally:
        os.environ.clear()
        os.environ.update(saved)
    try:
        return rclpy.create_node(name)
    except RCLError as error:
        rclpy.try_shutdown()
        secured = "under DDS-Security " if keystore is not None else ""
        raise StartupError(f"the client cannot join the ROS graph {secured}({error})") from None


@dataclass
class Errors:
    """Errors of an estimate against the truth (SI units)."""

    mass_rel: float
    com: float
    inertia_rel: float
    offset_force: float

    @classmethod
    def of(
        cls, estimate: InertialParameters, truth: np.ndarray, true_offset: np.ndarray
    ) -> "Errors":
        """Errors of ``estimate`` against ``truth`` (10,) and ``true_offset`` (6,) (N, N m)."""
        m, c, i_com = inertia_from_theta(msg_to_theta(estimate))
        m0, c0, i0 = inertia_from_theta(truth)
        offset = wrench_to_array(estimate.sensor_offset)
        return cls(
            abs(m - m0) / m0,
            float(np.linalg.norm(c - c0)),
            float(np.linalg.norm(i_com - i0) / np.linalg.norm(i0)),
            float(np.linalg.norm(offset[:3] - true_offset[:3])),
        )

    def acceptable(self) -> bool:
        """Whether every error is within the demo's tolerance."""
        return (
            self.mass_rel < MASS_REL_TOL
            and self.com < COM_TOL
            and self.inertia_rel < INERTIA_REL_TOL
            and self.offset_force < OFFSET_FORCE_TOL
        )


@dataclass
class DemoClient:
    """Follows ``/inertia_id/estimate`` and the simulator's ground truth."""

    node: Node
    estimates: list[InertialParameters] = field(default_factory=list)
    inconsistent: int = 0
    truth: InertialParameters | None = None

    def __post_init__(self) -> None:
        self.node.create_subscription(
            InertialParameters, "/inertia_id/estimate", self._on_estimate, LATCHED
        )
        self.node.create_subscription(
            InertialParameters, "/inertia_id_sim/ground_truth", self._on_truth, LATCHED
        )
        self.identify: Client[Any, Any] = self.node.create_client(Identify, "/inertia_id/identify")

    def _on_estimate(self, msg: InertialParameters) -> None:
        self.estimates.append(msg)
        if not check_consistency(msg_to_theta(msg)).fully_consistent:
            self.inconsistent += 1

    def _on_truth(self, msg: InertialParameters) -> None:
        self.truth = msg


def _table(
    truth: np.ndarray, estimate: np.ndarray, true_offset: np.ndarray, offset: np.ndarray
) -> str:
    m0, c0, i0 = inertia_from_theta(truth)
    m, c, i = inertia_from_theta(estimate)
    rows = [("mass (kg)", m0, m)]
    rows += [(f"com {a} (mm)", 1e3 * c0[k], 1e3 * c[k]) for k, a in enumerate("xyz")]
    for name, (r, s) in zip(
        ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"), ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))
    ):
        rows.append((f"{name} (g m^2)", 1e3 * i0[r, s], 1e3 * i[r, s]))
    rows += [
        (f"offset {a}", true_offset[k], offset[k])
        for k, a in enumerate(("fx (N)", "fy (N)", "fz (N)", "tx (N m)", "ty (N m)", "tz (N m)"))
    ]
    lines = [f"{'parameter':<16}{'truth':>12}{'estimate':>12}{'error':>12}"]
    lines += [f"{n:<16}{t:>12.4f}{e:>12.4f}{e - t:>12.4f}" for n, t, e in rows]
    return "\n".join(lines)


def _launch(
    sim_args: list[str], node_args: list[str], keystore: Keystore | None
) -> list[subprocess.Popen]:
    """Start the simulator and the node (Panda, payload beyond :data:`SENSOR_FRAME`) with these
    extra parameters (``-p name:=value`` pairs), in their enclaves of ``keystore`` if given."""
    env = ros_environment(keystore)
    urdf = str(example_robot_urdf("panda"))
    sim_enclave, node_enclave = (
        ([], [])
        if keystore is None
        else (["--enclave", SIMULATOR_ENCLAVE], ["--enclave", NODE_ENCLAVE])
    )
    sim = subprocess.Popen(
        executable("inertia-id-sim", "inertia_id_ros.ros.sim_node")
        + ["--ros-args", *sim_enclave, *sim_args, "--log-level", "warn"],
        env=env,
    )
    node = subprocess.Popen(
        executable("inertia-id-node", "inertia_id_ros.ros.node")
        + [
            "--ros-args",
            *node_enclave,
            "-p",
            f"urdf_path:={urdf}",
            "-p",
            f"sensor_frame:={SENSOR_FRAME}",
            "-p",
            "update_rate_hz:=1.0",
            *node_args,
        ],
        env=env,
    )
    return [sim, node]


def _shutdown(client_node: Node, processes: list[subprocess.Popen]) -> None:
    """Stop the client and the processes (SIGINT, then kill after 10 s)."""
    client_node.destroy_node()
    rclpy.try_shutdown()
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
    for process in processes:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def _run_client(
    client_node: Node, processes: list[subprocess.Popen], run: Callable[[], int]
) -> int:
    """A demo's exit code: ``run()``'s (the client's part), or ``EXIT_INTERRUPTED`` on Ctrl-C;
    the client node and the ``processes`` shut down either way."""
    try:
        return run()
    except (KeyboardInterrupt, ExternalShutdownException):  # Ctrl-C
        print("demo: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        _shutdown(client_node, processes)


def _call(client_node: Node, service: Client, request: Any, timeout_sec: float) -> Any:
    """Call ``service`` with ``request``, spinning ``client_node``; the response, or ``None``
    without one within ``timeout_sec`` s."""
    future = service.call_async(request)
    rclpy.spin_until_future_complete(client_node, future, timeout_sec=timeout_sec)
    return future.result()


def _verdict(ok: bool) -> int:
    """Print whether the demo passed (``ok``); its exit code (0: passed, 1: failed)."""
    print("demo: PASS" if ok else "demo: FAIL")
    return 0 if ok else 1


def _report(estimate: InertialParameters, truth_msg: InertialParameters) -> Errors:
    """Print truth vs. ``estimate`` and the errors against the thresholds; the errors."""
    truth = msg_to_theta(truth_msg)
    true_offset = wrench_to_array(truth_msg.sensor_offset)
    err = Errors.of(estimate, truth, true_offset)
    print(
        f"\nidentify ({estimate.method}, {estimate.num_samples} samples, solve "
        f"{1e3 * estimate.solve_time:.1f} ms, min eig J = "
        f"{estimate.min_pseudo_inertia_eig:.3g}):"
    )
    print(
        _table(truth, msg_to_theta(estimate), true_offset, wrench_to_array(estimate.sensor_offset))
    )
    print(
        f"\nmass error {100 * err.mass_rel:.3f} % (< {100 * MASS_REL_TOL} %), "
        f"COM error {1e3 * err.com:.3f} mm (< {1e3 * COM_TOL} mm), "
        f"inertia error {100 * err.inertia_rel:.2f} % (< {100 * INERTIA_REL_TOL} %), "
        f"offset force error {err.offset_force:.4f} N (< {OFFSET_FORCE_TOL} N)"
    )
    return err


def run_demo(
    motion_sec: float = 30.0,
    method: str = "lmi",
    seed: int = 0,
    timeout_sec: float = 120.0,
    keystore: Keystore | None = None,
) -> int:
    """Run the demo (under DDS-Security with ``keystore``); returns the exit code (0: estimate
    within the acceptance thresholds)."""
    client_node = _client_node("inertia_id_demo", keystore)
    processes = _launch(
        ["-p", f"duration_sec:={motion_sec}", "-p", f"seed:={seed}"],
        ["-p", f"window_sec:={motion_sec + 5.0}", "-p", f"method:={method}"],
        keystore,
    )
    sim, node = processes
    client = DemoClient(client_node)
    print(
        f"demo: Panda with a payload beyond '{SENSOR_FRAME}', {motion_sec:.0f} s of motion at "
        "1 kHz, method " + method,
        flush=True,
    )

    def run() -> int:
        deadline = time.monotonic() + timeout_sec
        last_print = 0.0
        true_offset = None
        while sim.poll() is None and time.monotonic() < deadline:
            rclpy.spin_once(client_node, timeout_sec=0.1)
            if node.poll() is not None:
                print(f"demo: the node exited with code {node.returncode}", file=sys.stderr)
                return 1
            if client.truth is not None and true_offset is None:
                true_offset = wrench_to_array(client.truth.sensor_offset)
            if (
                client.estimates
                and client.truth is not None
                and true_offset is not None
                and time.monotonic() - last_print > 3
            ):
                last_print = time.monotonic()
                e = client.estimates[-1]
                err = Errors.of(e, msg_to_theta(client.truth), true_offset)
                print(
                    f"  {len(client.estimates):3d} estimates | m = {e.inertia.m:7.4f} kg "
                    f"({100 * err.mass_rel:5.2f} %) | com err {1e3 * err.com:6.2f} mm | "
                    f"I_com err {100 * err.inertia_rel:5.1f} % | offset err "
                    f"{err.offset_force:6.3f} N | {e.num_samples} samples",
                    flush=True,
                )
        if client.truth is None:
            print("demo: no ground truth received from the simulator", file=sys.stderr)
            return 1
        if not client.identify.wait_for_service(timeout_sec=10.0):
            print("demo: /inertia_id/identify is not available", file=sys.stderr)
            return 1
        response = _call(client_node, client.identify, Identify.Request(method=method), 60.0)
        if response is None or not response.success:
            print(
                f"demo: identify failed: {response.message if response else 'no answer'}",
                file=sys.stderr,
            )
            return 1
        err = _report(response.estimate, client.truth)
        print(f"published estimates: {len(client.estimates)}, inconsistent: {client.inconsistent}")
        ok = err.acceptable() and client.inconsistent == 0 and len(client.estimates) > 0
        return _verdict(ok)

    return _run_client(client_node, processes, run)


FINAL_STATES = ("done", "stopped", "failed")
"""``ExcitationStatus.state`` values that end an excitation."""

PROGRESS_PERIOD_SEC = 5.0
"""The excite demo prints the motion's progress this often (s)."""


def _follow_excitation(node: Node, statuses: list[ExcitationStatus], deadline: float) -> None:
    """Spin ``node`` until the excitation's last status (``statuses``, as they arrive) is final
    or the monotonic clock passes ``deadline`` (s), printing each new state and, within one,
    its progress every :data:`PROGRESS_PERIOD_SEC`."""
    shown, state, printed = 0, "", -np.inf
    while time.monotonic() < deadline and not (statuses and statuses[-1].state in FINAL_STATES):
        rclpy.spin_once(node, timeout_sec=0.1)
        for status in statuses[shown:]:
            if status.state != state:
                print(f"  {status.state}: {status.message}", flush=True)
            elif time.monotonic() - printed >= PROGRESS_PERIOD_SEC:
                print(
                    f"  {status.state}: {status.elapsed:.1f} of {status.duration:.1f} s",
                    flush=True,
                )
            else:
                continue
            state, printed = status.state, time.monotonic()
        shown = len(statuses)


def run_excite_demo(
    duration: float = 15.0,
    speed_scale: float = 1.0,
    trajectory_file: str = "",
    method: str = "lmi",
    seed: int = 0,
    timeout_sec: float = 240.0,
    keystore: Keystore | None = None,
) -> int:
    """Run the wizard demo: one ``~/excite`` call (a ``duration`` s motion designed on the spot,
    or ``trajectory_file``, at ``speed_scale``), under DDS-Security with ``keystore``; returns
    the exit code (0: the estimate is within the acceptance thresholds)."""
    client_node = _client_node("inertia_id_excite_demo", keystore)
    processes = _launch(
        ["-p", "motion:=hold", "-p", f"seed:={seed}"],
        ["-p", f"method:={method}", "-p", "allow_motion:=true", "--log-level", "error"],
        keystore,
    )
    client = DemoClient(client_node)
    statuses: list[ExcitationStatus] = []
    client_node.create_subscription(
        ExcitationStatus, "/inertia_id/excitation", statuses.append, LATCHED
    )
    joint_states: list[JointState] = []
    client_node.create_subscription(
        JointState,
        "/joint_states",
        lambda msg: joint_states.append(msg) if not joint_states else None,
        qos_profile_sensor_data,
    )
    excite: Client[Any, Any] = client_node.create_client(Excite, "/inertia_id/excite")
    what = trajectory_file or f"a {duration:g} s motion designed on the spot"
    print(
        f"demo --excite: Panda with a payload beyond '{SENSOR_FRAME}', at rest; ~/excite with "
        f"{what}, speed_scale {speed_scale:g}, method {method}",
        flush=True,
    )

    def run() -> int:
        deadline = time.monotonic() + timeout_sec
        while not joint_states and time.monotonic() < deadline:
            rclpy.spin_once(client_node, timeout_sec=0.1)
        if not excite.wait_for_service(timeout_sec=20.0):
            print("demo: /inertia_id/excite is not available", file=sys.stderr)
            return 1
        time.sleep(1.0)  # the node sees the joint states too
        response = _call(
            client_node,
            excite,
            Excite.Request(  # a simulated robot: no dry run
                trajectory_file=trajectory_file,
                duration=duration,
                speed_scale=speed_scale,
                skip_dry_run=True,
            ),
            30.0,
        )
        if response is None or not response.accepted:
            print(
                f"demo: excite refused: {response.reason if response else 'no answer'}",
                file=sys.stderr,
            )
            return 1
        _follow_excitation(client_node, statuses, deadline)
        if not statuses or statuses[-1].state != "done" or client.truth is None:
            state = statuses[-1].state if statuses else "no status"
            print(f"demo: the excitation did not identify ({state})", file=sys.stderr)
            return 1
        err = _report(statuses[-1].estimate, client.truth)
        return _verdict(err.acceptable())

    return _run_client(client_node, processes, run)
