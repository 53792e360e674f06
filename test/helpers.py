"""Helpers shared by the tests (import as ``from helpers import ...``; ``test/`` is on the
test path). Fixtures live in ``conftest.py``."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from inertia_id_ros.core.inertia import check_consistency
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.io.data import JointStates
from inertia_id_ros.sim.payload import PANDA_HOME, PayloadSimulator

REPO = Path(__file__).resolve().parents[1]


SHARED_DATA = REPO.parent / "shared" / "data"


def shared_data(name: str) -> Path:
    """``../shared/data/<name>`` or skip the test, saying why."""
    path = SHARED_DATA / name
    if not path.exists():
        pytest.skip(f"real-robot data {path} is absent (it lives beside the repository in "
                    "../shared/data, which a user's clone does not have)")
    return path


def console_script(name: str, module: str) -> list[str]:
    """``.venv/bin/<name>`` as users run it, else ``python -m module``."""
    script = Path(sys.executable).parent / name
    return [str(script)] if script.exists() else [sys.executable, "-m", module]


class Process:
    """A child process whose output goes to a log file, stopped with SIGINT."""

    def __init__(self, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.log_path = log
        self._log = open(log, "w")
        self.popen = subprocess.Popen(argv, env=env, stdout=self._log, stderr=subprocess.STDOUT)

    def output(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text()

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, timeout: float = 10.0) -> int:
        if self.alive():
            self.popen.send_signal(signal.SIGINT)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self._log.close()
        return self.popen.returncode


def spin_until(node, predicate, timeout: float) -> bool:
    """Spin ``node`` until ``predicate()`` is true or ``timeout`` (s) passes."""
    import rclpy

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
        if predicate():
            return True
    return predicate()


def solve_while_feeding(estimator, add_sample, n: int, allowed: tuple[str, ...]) -> int:
    """Call ``add_sample(k)`` for ``k < n`` from a producer thread while this thread processes
    and solves ``estimator``; halfway the producer waits for a successful solve, so the rest
    arrives while solves run, however the threads are scheduled. Every failed solve must have a
    reason in ``allowed``; returns the successful solves (> 0); re-raises the producer's error."""
    import threading

    from inertia_id_ros.errors import EstimateUnavailable

    failures: list[BaseException] = []
    solved = threading.Event()

    def produce() -> None:
        try:
            for k in range(n):
                if k == n // 2 and not solved.wait(timeout=60.0):
                    raise TimeoutError("no successful solve within 60 s")
                add_sample(k)
        except BaseException as error:  # noqa: BLE001 - re-raised below
            failures.append(error)

    producer = threading.Thread(target=produce)
    producer.start()
    solves = 0
    while producer.is_alive():
        estimator.process()
        try:
            estimator.solve()
        except EstimateUnavailable as why:
            assert why.reason in allowed, why
        else:
            solves += 1
            solved.set()
    producer.join()
    if failures:
        raise failures[0]
    assert solves > 0
    estimator.process()
    return solves


SENSOR = "panda_link8"


def node_args(**overrides) -> list[str]:
    params = {"urdf_path": str(example_robot_urdf("panda")), "sensor_frame": SENSOR,
              "update_rate_hz": 2.0, "window_sec": 30.0, "warning_period_sec": 0.5}
    params.update(overrides)
    args: list[str] = []
    for key, value in params.items():
        args += ["-p", f"{key}:={value}"]
    return args


class Feeder:
    """Publishes simulated joint states and wrenches (and bad samples) to the node."""

    def __init__(self, node, sim: PayloadSimulator, rate_hz: float = 250.0) -> None:
        from geometry_msgs.msg import WrenchStamped
        from rclpy.qos import QoSProfile
        from sensor_msgs.msg import JointState

        qos = QoSProfile(depth=1000)
        self.peer, self.sim, self.rate = node, sim, rate_hz
        self.joints = node.create_publisher(JointState, "/joint_states", qos)
        self.wrenches = node.create_publisher(WrenchStamped, "/ft_sensor/wrench", qos)
        self.rng = np.random.default_rng(1)
        self.k = 0
        self.t0 = 1000.0
        self.clock = None
        """A ``rosgraph_msgs/Clock`` publisher: set, the samples' stamps are also the simulated
        time (``use_sim_time``), published every 10 samples."""

    def wait_until_matched(self, timeout: float = 20.0) -> None:
        """Spin until the node under test's subscriptions match both publishers (discovery
        done: what is published from now on reaches it)."""
        assert spin_until(self.peer, lambda: self.joints.get_subscription_count() > 0
                          and self.wrenches.get_subscription_count() > 0, timeout), \
            "the node under test did not subscribe to /joint_states and /ft_sensor/wrench"

    def publish(self, seconds: float, sleep: bool = True, joint_states: bool = True) -> None:
        """``seconds`` of samples; without ``joint_states`` only wrenches (a joint-state gap)."""
        from rosgraph_msgs.msg import Clock

        from inertia_id_ros.ros.conversions import joint_state, seconds_to_stamp, wrench_stamped

        n = int(seconds * self.rate)
        t = (self.k + np.arange(n)) / self.rate
        q, dq, w = self.sim.measure(t, self.rng)
        for i in range(n):
            stamp = self.t0 + t[i]
            if joint_states:
                self.joints.publish(joint_state(stamp, self.sim.joint_names, q[i], dq[i]))
            self.wrenches.publish(wrench_stamped(stamp, self.sim.sensor_frame, w[i]))
            if self.clock is not None and i % 10 == 0:
                self.clock.publish(Clock(clock=seconds_to_stamp(stamp)))
            if sleep and i % 25 == 0:
                time.sleep(0.002)
        self.k += n


def identify(node, client, **request):
    import rclpy

    from inertia_id_ros.srv import Identify

    assert client.wait_for_service(timeout_sec=20.0)
    future = client.call_async(Identify.Request(**request))
    rclpy.spin_until_future_complete(node, future, timeout_sec=60.0)
    return future.result()



def identify_after_motion(peer, client, sim, node, timeout: float, call_timeout: float = 60.0):
    """Spin ``peer`` until the simulator has played its motion and exited cleanly (``timeout``
    s) and the node's diagnostics say it has taken every sample (its last samples are in its
    window), then call the node's identify service: its successful response."""
    import rclpy

    from inertia_id_ros.srv import Identify

    diagnostics = NodeDiagnostics(peer)
    assert spin_until(peer, lambda: not sim.alive(), timeout), sim.output()
    assert sim.popen.returncode == 0, sim.output()
    diagnostics.settle()
    peer.destroy_subscription(diagnostics.subscription)
    assert client.wait_for_service(timeout_sec=10.0)
    future = client.call_async(Identify.Request())
    rclpy.spin_until_future_complete(peer, future, timeout_sec=call_timeout)
    response = future.result()
    assert response is not None and response.success, node.output()[-3000:]
    return response

def block_window_rows() -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
    """3 s of random rows for a :class:`~inertia_id_ros.online.window.BlockWindow` of 5 columns:
    stamps ``t`` (30,) at 10 Hz, rows (30, 3, 5) of which rows 1 and 2 touch only columns 3 and
    4, measurements (30, 3), and those two row groups."""
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(30, 3, 5))
    rows[:, 1:, :3] = 0.0
    f = rng.normal(size=(30, 3))
    groups = [(np.array([0]), np.arange(5)), (np.array([1, 2]), np.array([3, 4]))]
    return np.arange(30) * 0.1, rows, f, groups


def bag_message_to_ros(msg):
    """The rclpy message of a bag's deserialised ``JointState``, ``Imu`` or ``WrenchStamped``
    (rosbags), with its header (stamp, frame)."""
    from builtin_interfaces.msg import Time
    from sensor_msgs.msg import JointState

    from inertia_id_ros.io.data import wrench_values
    from inertia_id_ros.ros.conversions import imu_msg, wrench_stamped

    kind = msg.__msgtype__
    if kind == "sensor_msgs/msg/JointState":
        out = JointState(name=list(msg.name), position=msg.position.tolist(),
                         velocity=msg.velocity.tolist(), effort=msg.effort.tolist())
    elif kind == "sensor_msgs/msg/Imu":
        o, w, a = msg.orientation, msg.angular_velocity, msg.linear_acceleration
        out = imu_msg(0.0, msg.header.frame_id, [o.x, o.y, o.z, o.w], [w.x, w.y, w.z],
                      [a.x, a.y, a.z])
    else:
        out = wrench_stamped(0.0, msg.header.frame_id, np.array(wrench_values(msg)))
    out.header.stamp = Time(sec=msg.header.stamp.sec, nanosec=msg.header.stamp.nanosec)
    out.header.frame_id = msg.header.frame_id
    return out


def play_and_identify(node, client, publishers, messages, update_times, delivery: float) -> list:
    """Publish the bag ``messages`` ((topic, log time (ns), message)) to the node under test
    through ``publishers`` (topic -> publisher), chunk by chunk up to each of ``update_times``
    (s of log time), wait ``delivery`` s, and call ``identify`` there: its responses."""
    responses, cursor = [], 0
    for update_time in update_times:
        while cursor < len(messages) and 1e-9 * messages[cursor][1] < update_time:
            topic, _, msg = messages[cursor]
            publishers[topic].publish(bag_message_to_ros(msg))
            cursor += 1
        time.sleep(delivery)  # delivery of the chunk (loopback)
        responses.append(identify(node, client))
    return responses


WARNING_PERIOD = 0.5
"""The node's ``warning_period_sec`` (s)."""


WRENCH_LIMITS = [100.0, 100.0, 100.0, 10.0, 10.0, 10.0]
"""The F/T sensor's range given to the node (N, N m); the simulated payload stays well within."""


MAX_RSS_GROWTH_MB = 80.0
"""Largest growth of the node's resident memory over all the faults (MB). Measured: about
60 MB, reached after 1-4 floods and flat after: the preallocated buffers' pages are touched only
as they fill (the window: 17 MB) and the malloc arenas of the node's threads keep their high
water mark."""


def rss_mb(pid: int) -> float:
    """Resident memory (VmRSS) of process ``pid`` (MB)."""
    match = re.search(r"^VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.M)
    return int(match.group(1)) / 1024.0


def set_rate(feeder: Feeder, rate: float) -> None:
    """Continue the feeder's motion and stamps at another sample rate (Hz)."""
    feeder.k = int(np.ceil(feeder.k / feeder.rate * rate - 1e-9))
    feeder.rate = rate


class NodeDiagnostics:
    """The node under test's ``/diagnostics`` as a peer sees them: its latest values and level,
    and waits on them (the node's own word that it has taken its inputs)."""

    def __init__(self, peer) -> None:
        from diagnostic_msgs.msg import DiagnosticArray

        self.peer = peer
        self.diagnostics: dict[str, str] = {}
        self.status: tuple[int, str] = (0, "")
        """Level and message of the latest diagnostics status."""
        self.diagnostics_stamp = 0.0
        self.diagnostics_received = 0
        self.subscription = peer.create_subscription(DiagnosticArray, "/diagnostics",
                                                     self._on_diagnostics, 10)

    def _on_diagnostics(self, msg) -> None:
        for status in msg.status:
            if status.name.startswith("inertia_id"):
                self.diagnostics = {kv.key: kv.value for kv in status.values}
                self.status = (int.from_bytes(status.level, "little")
                               if isinstance(status.level, bytes) else int(status.level),
                               status.message)
                self.diagnostics_stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
                self.diagnostics_received += 1

    def counter(self, key: str) -> int:
        return int(self.diagnostics.get(key, 0))

    def counters(self, prefix: str) -> dict[str, int]:
        return {k[len(prefix):]: int(v) for k, v in self.diagnostics.items()
                if k.startswith(prefix)}

    def fresh_diagnostics(self, timeout: float = 10.0) -> None:
        """Wait for two new diagnostics messages (the second reflects everything sent)."""
        seen = self.diagnostics_received
        assert spin_until(self.peer, lambda: self.diagnostics_received >= seen + 2, timeout), \
            "no diagnostics from the node"

    def settle(self, timeout: float = 20.0) -> None:
        """Wait until the node has taken and processed everything sent: two consecutive
        diagnostics with the same received and processed counters."""
        deadline = time.monotonic() + timeout
        previous: dict[str, int] = {}
        while time.monotonic() < deadline:
            self.fresh_diagnostics()
            current = {**self.counters("received."), **self.counters("processed.")}
            if current == previous:
                return
            previous = current
        raise AssertionError(f"the node's counters still change after {timeout} s")


class NodeUnderTest(NodeDiagnostics):
    """The node process and this process's peer: feeder, ``identify`` client, diagnostics."""

    def __init__(self, process: Process, peer, client, feeder: Feeder) -> None:
        from rclpy.qos import QoSProfile, ReliabilityPolicy

        from inertia_id_ros.msg import InertialParameters

        super().__init__(peer)
        self.process, self.client, self.feeder = process, client, feeder
        self.inconsistent_published: list[np.ndarray] = []
        """Every published estimate that fails the consistency check (must stay empty)."""
        self.estimates_received = 0
        peer.create_subscription(InertialParameters, "/inertia_id/estimate", self._on_estimate,
                                 QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
        self.reference_theta: np.ndarray | None = None
        self.rss_start = 0.0

    def _on_estimate(self, msg) -> None:
        self.estimates_received += 1
        if not check_consistency(np.array(msg.theta)).fully_consistent:
            self.inconsistent_published.append(np.array(msg.theta))

    def rss_mb(self) -> float:
        return rss_mb(self.process.popen.pid)

    def log_mark(self) -> int:
        return len(self.process.output())

    def warnings_since(self, mark: int, kind: str) -> list[str]:
        """Warning lines logged after ``mark`` that name ``kind``."""
        return [line for line in self.process.output()[mark:].splitlines()
                if "WARN" in line and kind in line]

    def check_estimate_kept(self) -> np.ndarray:
        """``identify`` succeeds with a consistent estimate close to the one before the faults;
        every estimate published so far was consistent."""
        assert self.process.alive(), self.process.output()[-3000:]
        assert not self.inconsistent_published and self.estimates_received > 0
        response = identify(self.peer, self.client)
        assert self.process.alive(), self.process.output()[-3000:]
        assert response.success, response.message
        theta = np.array(response.estimate.theta)
        assert check_consistency(theta).fully_consistent
        assert np.allclose(theta, self.reference_theta, rtol=0.05, atol=1e-3), \
            (theta, self.reference_theta)
        return theta

    def check_memory(self) -> float:
        rss = self.rss_mb()
        assert rss - self.rss_start < MAX_RSS_GROWTH_MB, (self.rss_start, rss)
        return rss


T0 = 1000.0  # s, first stamp


def turn_joint_7(t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """From the home pose (flange down), only joint 7 turns, about the vertical: gravity stays
    fixed in the sensor frame, so the data cannot tell the offset from the weight."""
    t = np.atleast_1d(t)
    q = np.tile(PANDA_HOME, (t.size, 1))
    dq, ddq = np.zeros_like(q), np.zeros_like(q)
    q[:, 6] += 1.5 * np.sin(0.8 * t)
    dq[:, 6] = 1.2 * np.cos(0.8 * t)
    ddq[:, 6] = -0.96 * np.sin(0.8 * t)
    return q, dq, ddq


def write_csv(path: Path, states: JointStates, wrench: np.ndarray | None = None,
              kinds: Sequence[str] = ("q", "dq"), wrench_frame: str | None = None) -> Path:
    """A CSV file in the layout of :mod:`inertia_id_ros.io.data`."""
    columns, names = [states.t], ["t"]
    for kind in kinds:
        columns += list(getattr(states, kind).T)
        names += [f"{kind}:{j}" for j in states.joint_names]
    if wrench is not None:
        columns += list(wrench.T)
        names += [f"wrench:{c}" for c in ("fx", "fy", "fz", "tx", "ty", "tz")]
    lines = [f"# wrench_frame: {wrench_frame}"] if wrench_frame else []
    lines.append(",".join(names))
    lines += [",".join(repr(float(v)) for v in row) for row in np.column_stack(columns)]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_bag(path: Path, storage: str, joint_t: np.ndarray, joint_names: Sequence[str],
              q: np.ndarray, dq: np.ndarray | None = None, effort: np.ndarray | None = None,
              wrench_t: np.ndarray | None = None, wrench: np.ndarray | None = None,
              frame: str = "sensor", joint_topic: str = "/joint_states",
              wrench_topic: str = "/ft_sensor/wrench",
              name_orders: Sequence[Sequence[int]] | None = None) -> Path:
    """A ROS 2 bag (``storage`` "mcap" or "sqlite3") with JointState and WrenchStamped messages
    written with rosbags; message ``k`` lists the joints in ``name_orders[k % len]`` order."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_KILTED)
    types = store.types
    Time, Header = types["builtin_interfaces/msg/Time"], types["std_msgs/msg/Header"]
    JointState = types["sensor_msgs/msg/JointState"]
    Vector3, Wrench = types["geometry_msgs/msg/Vector3"], types["geometry_msgs/msg/Wrench"]
    WrenchStamped = types["geometry_msgs/msg/WrenchStamped"]

    def header(t: float, frame_id: str = ""):
        sec = int(np.floor(t))
        return Header(stamp=Time(sec=sec, nanosec=int(round((t - sec) * 1e9))), frame_id=frame_id)

    plugin = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}[storage]
    orders = name_orders or [list(range(len(joint_names)))]
    empty = np.zeros(0)
    with Writer(path, version=9, storage_plugin=plugin) as writer:
        joints = writer.add_connection(joint_topic, JointState.__msgtype__, typestore=store)
        for k, t in enumerate(joint_t):
            order = list(orders[k % len(orders)])
            msg = JointState(header=header(t), name=[joint_names[i] for i in order],
                             position=q[k, order],
                             velocity=empty if dq is None else dq[k, order],
                             effort=empty if effort is None else effort[k, order])
            writer.write(joints, int(t * 1e9), store.serialize_cdr(msg, JointState.__msgtype__))
        if wrench is not None:
            wrenches = writer.add_connection(wrench_topic, WrenchStamped.__msgtype__,
                                             typestore=store)
            for t, w in zip(wrench_t, wrench):
                msg = WrenchStamped(header=header(t, frame),
                                    wrench=Wrench(force=Vector3(x=w[0], y=w[1], z=w[2]),
                                                  torque=Vector3(x=w[3], y=w[4], z=w[5])))
                writer.write(wrenches, int(t * 1e9),
                             store.serialize_cdr(msg, WrenchStamped.__msgtype__))
    return path



# ---- whole body ----------------------------------------------------------------------------


def _urdf_with_moving_sensors(urdf_xml: str, joints: Sequence[str]) -> str:
    """URDF text with the fixed ``joints`` made revolute (so RNEA reports the wrench through
    them in its ``data.f``; they are held at 0)."""
    for name in joints:
        urdf_xml, count = re.subn(
            rf'(<joint\s+name="{re.escape(name)}"\s+type=)"fixed"(\s*>)',
            r'\1"revolute"\2<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" '
            r'velocity="1"/>', urdf_xml)
        assert count == 1, name
    return urdf_xml


def whole_body_rnea_samples(urdf_xml: str, sensors: Sequence, n: int, seed: int = 0,
                            base: str = "floating", imu_frame: str | None = None,
                            amplitude: float = 0.5, rate: float | None = None):
    """Independent synthetic whole-body samples from pinocchio RNEA: random independent states,
    or, given ``rate`` (Hz), smooth sums of sinusoids sampled at ``rate`` (the base's orientation
    is a smooth function too, unrelated to its twist: the rows use no base pose).

    ``sensors``: ``FTSensor`` objects whose frames are fixed joints or links attached by one. The
    internal sensors' fixed joints become revolute joints held at 0, so RNEA's ``data.f`` there is
    the wrench the root side exerts beyond; the first contact sensor takes the wrench that makes
    the base equation hold (floating, suspended), the others none. Returns ``(joint_names, q, dq,
    ddq, imu, wrenches (n, S, 6), efforts)`` with ``imu = (angular_velocity, angular_acceleration,
    specific_force)`` (n, 3) each at ``imu_frame`` (IMU frame), or ``None``.
    """
    import xml.etree.ElementTree as ET

    import pinocchio as pin

    root = ET.fromstring(urdf_xml)
    joint_of_child = {j.find("child").get("link"): j.get("name") for j in root.findall("joint")}
    joint_names_xml = {j.get("name") for j in root.findall("joint")}

    def sensor_joint(frame: str) -> str:
        return frame if frame in joint_names_xml else joint_of_child[frame]

    internal = [sensor_joint(s.frame) for s in sensors if s.kind == "internal"]
    xml = _urdf_with_moving_sensors(urdf_xml, internal)
    floating = base != "fixed"
    model = (pin.buildModelFromXML(xml, pin.JointModelFreeFlyer()) if floating
             else pin.buildModelFromXML(xml))
    data = model.createData()
    rng = np.random.default_rng(seed)
    first = 2 if floating else 1
    names = [model.names[j] for j in range(first, model.njoints) if model.names[j] not in internal]
    ids = [model.getJointId(name) for name in names]
    vidx = np.array([model.joints[j].idx_v for j in ids])
    qidx = np.array([model.joints[j].idx_q for j in ids])
    if rate is None:
        q = amplitude * rng.standard_normal((n, len(ids)))
        dq = amplitude * rng.standard_normal((n, len(ids)))
        ddq = 3 * amplitude * rng.standard_normal((n, len(ids)))
        base_v = rng.standard_normal((n, 6))
        base_a = 3 * rng.standard_normal((n, 6))
        base_pose = [pin.SE3(pin.rpy.rpyToMatrix(*rng.uniform(-np.pi, np.pi, 3)),
                             rng.normal(size=3)) for _ in range(n)]
    else:
        t = np.arange(n) / rate

        def sines(width: int, scale: float):
            w = rng.uniform(0.5, 3.0, (3, width))
            phase = rng.uniform(0, 2 * np.pi, (3, width))
            arg = t[:, None, None] * w + phase
            return (scale * np.sin(arg).sum(1), scale * (w * np.cos(arg)).sum(1),
                    -scale * (w ** 2 * np.sin(arg)).sum(1))
        q, dq, ddq = sines(len(ids), amplitude / 2)
        base_v, base_a = sines(6, 0.3)[1:]
        angles = sines(3, 0.2)[0]
        base_pose = [pin.SE3(pin.rpy.rpyToMatrix(*angle), np.zeros(3)) for angle in angles]
    wrenches = np.zeros((n, len(sensors), 6))
    efforts = np.zeros((n, len(ids)))
    imu = None if imu_frame is None else tuple(np.zeros((n, k)) for k in (3, 3, 3, 4))
    local = pin.ReferenceFrame.LOCAL
    contact = [k for k, s in enumerate(sensors) if s.kind == "contact"]
    for i in range(n):
        config = pin.neutral(model)
        config[qidx] = q[i]
        v = np.zeros(model.nv)
        a = np.zeros(model.nv)
        v[vidx], a[vidx] = dq[i], ddq[i]
        if floating:
            config[:7] = pin.SE3ToXYZQUAT(base_pose[i])
            if base == "floating":
                v[:6], a[:6] = base_v[i], base_a[i]
        pin.forwardKinematics(model, data, config, v, a)
        pin.updateFramePlacements(model, data)
        fext = [pin.Force.Zero() for _ in range(model.njoints)]
        if floating and contact:
            tau0 = pin.rnea(model, data, config, v, a)
            c = model.getFrameId(sensors[contact[0]].frame)
            frame = model.frames[c]
            base_from_contact = data.oMi[1].inverse() * data.oMf[c]
            wrench = base_from_contact.actInv(pin.Force(tau0[:6]))  # X*_{B<-c} F = tau0
            wrenches[i, contact[0]] = wrench.vector
            fext[frame.parentJoint] = frame.placement.act(wrench)
        tau = pin.rnea(model, data, config, v, a, fext)
        if floating and contact:
            assert np.abs(tau[:6]).max() < 1e-8
        efforts[i] = tau[vidx]
        for k, s in enumerate(sensors):
            if s.kind == "internal":
                wrenches[i, k] = data.f[model.getJointId(sensor_joint(s.frame))].vector
        if imu is not None:
            f = model.getFrameId(imu_frame)
            imu[0][i] = pin.getFrameVelocity(model, data, f, local).angular
            imu[1][i] = pin.getFrameAcceleration(model, data, f, local).angular
            rotation = data.oMf[f].rotation
            imu[2][i] = (pin.getFrameClassicalAcceleration(model, data, f, local).linear
                         - rotation.T @ model.gravity.linear)
            quat = pin.Quaternion(rotation)
            imu[3][i] = [quat.x, quat.y, quat.z, quat.w]
    if imu is not None and rate is None:
        imu = imu[:3]
    return names, q, dq, ddq, imu, wrenches, efforts


def write_whole_body_bag(path: Path, t: np.ndarray, joint_names: Sequence[str], q: np.ndarray,
                         dq: np.ndarray, imu_frame: str, imu: Sequence[np.ndarray],
                         wrenches: dict[str, tuple[str, np.ndarray]],
                         imu_topic: str = "/imu") -> Path:
    """An MCAP bag: JointState on /joint_states, Imu (``imu`` = angular velocity, specific
    force, orientation x, y, z, w; (N, 3), (N, 3), (N, 4)) and one WrenchStamped topic per entry
    ``{topic: (frame, (N, 6))}``, all stamped ``t``."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_KILTED)
    types = store.types
    Time, Header = types["builtin_interfaces/msg/Time"], types["std_msgs/msg/Header"]
    Vector3, Quaternion = types["geometry_msgs/msg/Vector3"], types["geometry_msgs/msg/Quaternion"]
    Wrench = types["geometry_msgs/msg/Wrench"]
    WrenchStamped = types["geometry_msgs/msg/WrenchStamped"]
    Imu, JointState = types["sensor_msgs/msg/Imu"], types["sensor_msgs/msg/JointState"]

    def header(stamp: float, frame_id: str):
        sec = int(np.floor(stamp))
        return Header(stamp=Time(sec=sec, nanosec=int(round((stamp - sec) * 1e9))),
                      frame_id=frame_id)

    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        connection = writer.add_connection("/joint_states", JointState.__msgtype__,
                                           typestore=store)
        for k, stamp in enumerate(t):
            msg = JointState(header=header(stamp, ""), name=list(joint_names), position=q[k],
                             velocity=dq[k], effort=np.zeros(0))
            writer.write(connection, int(stamp * 1e9),
                         store.serialize_cdr(msg, JointState.__msgtype__))
        connection = writer.add_connection(imu_topic, Imu.__msgtype__, typestore=store)
        for k, stamp in enumerate(t):
            w, a, o = imu[0][k], imu[1][k], imu[2][k]
            msg = Imu(header=header(stamp, imu_frame),
                      orientation=Quaternion(x=o[0], y=o[1], z=o[2], w=o[3]),
                      orientation_covariance=np.zeros(9),
                      angular_velocity=Vector3(x=w[0], y=w[1], z=w[2]),
                      angular_velocity_covariance=np.zeros(9),
                      linear_acceleration=Vector3(x=a[0], y=a[1], z=a[2]),
                      linear_acceleration_covariance=np.zeros(9))
            writer.write(connection, int(stamp * 1e9), store.serialize_cdr(msg, Imu.__msgtype__))
        for topic, (frame, values) in wrenches.items():
            connection = writer.add_connection(topic, WrenchStamped.__msgtype__, typestore=store)
            for stamp, v in zip(t, values):
                msg = WrenchStamped(header=header(stamp, frame),
                                    wrench=Wrench(force=Vector3(x=v[0], y=v[1], z=v[2]),
                                                  torque=Vector3(x=v[3], y=v[4], z=v[5])))
                writer.write(connection, int(stamp * 1e9),
                             store.serialize_cdr(msg, WrenchStamped.__msgtype__))
    return path


def one_path_chirp(t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every joint along one path: a chirp 0.05 -> 0.5 Hz over 20 s around the home pose
    (joint positions correlated 1.0), as vendor logs often are."""
    f0, rate = 0.05, 0.45 / 20.0
    phase = 2 * np.pi * (f0 * t + 0.5 * rate * t ** 2)
    omega = 2 * np.pi * (f0 + rate * t)
    s, ds = np.sin(phase), np.cos(phase) * omega
    dds = -np.sin(phase) * omega ** 2 + np.cos(phase) * 2 * np.pi * rate
    amplitude = np.array([0.5, 0.3, 0.4, 0.4, 0.5, 0.4, 0.6])
    return (PANDA_HOME + np.outer(s, amplitude), np.outer(ds, amplitude),
            np.outer(dds, amplitude))
