"""Peers of the node under test over DDS: feeders, service calls, the node's diagnostics."""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np

from helpers.processes import Process
from inertia_id_ros.core.inertia import check_consistency
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.sim.payload import PayloadSimulator


def spin_until(node, predicate, timeout: float) -> bool:
    """Spin ``node`` until ``predicate()`` is true or ``timeout`` (s) passes."""
    import rclpy

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
        if predicate():
            return True
    return predicate()


def wait_until_serving(peer, node_name: str = "/inertia_id", timeout: float = 30.0) -> None:
    """Until the node ``node_name`` answers a parameter request: its executor spins (it is past
    its start-up)."""
    import rclpy
    from rclpy.parameter_client import AsyncParameterClient

    parameters = AsyncParameterClient(peer, node_name)
    assert parameters.wait_for_services(timeout_sec=timeout), f"{node_name} serves nothing"
    future = parameters.list_parameters([], 1)
    rclpy.spin_until_future_complete(peer, future, timeout_sec=timeout)
    assert future.result() is not None, f"{node_name} does not answer"


SENSOR = "panda_link8"


def node_args(**overrides) -> list[str]:
    params = {
        "urdf_path": str(example_robot_urdf("panda")),
        "sensor_frame": SENSOR,
        "update_rate_hz": 2.0,
        "window_sec": 30.0,
        "warning_period_sec": 0.5,
    }
    params.update(overrides)
    args: list[str] = []
    for key, value in params.items():
        args += ["-p", f"{key}:={value}"]
    return args


def wait_until_inputs_matched(
    peer, publishers, timeout: float = 30.0, node: Process | None = None
) -> None:
    """Spin ``peer`` until discovery is done both ways for each of its ``publishers``: the
    publisher counts a subscription, and the node under test's ``/diagnostics`` count a publisher
    on that topic (``publishers.<topic>``). A best-effort reader drops what a writer sends before
    the reader has matched it, so the publisher's side alone is not enough. ``node``: the node's
    process: waiting ends if it exits, and a failure shows its output."""
    diagnostics = NodeDiagnostics(peer)
    topics = [publisher.topic_name for publisher in publishers]

    def matched() -> bool:
        return all(publisher.get_subscription_count() > 0 for publisher in publishers) and all(
            diagnostics.counter(f"publishers.{topic}") > 0 for topic in topics
        )

    def exited() -> bool:
        return node is not None and not node.alive()

    try:
        assert spin_until(peer, lambda: matched() or exited(), timeout) and matched(), (
            f"the node under test did not match the publishers of {topics}: its diagnostics "
            f"say {diagnostics.counters('publishers.')}"
            + ("" if node is None else f"\n{node.output()[-3000:]}")
        )
    finally:
        peer.destroy_subscription(diagnostics.subscription)


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
        """Until the node under test and both publishers have matched
        (:func:`wait_until_inputs_matched`)."""
        wait_until_inputs_matched(self.peer, [self.joints, self.wrenches], timeout)

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


FAST_DIAGNOSTICS = ("-p", "diagnostics_period_sec:=0.2")
"""Node arguments: /diagnostics every 0.2 s, so that a test sees soon that the node has
taken every message (:func:`identify_after_motion`)."""


def identify_after_motion(
    peer, client, sim, node, timeout: float, call_timeout: float = 60.0, *, succeeded: bool = True
):
    """Spin ``peer`` until the simulator has played its motion and exited cleanly (``timeout``
    s) and the node's diagnostics say it has taken every sample (its last samples are in its
    window), then call the node's identify service: its response (``succeeded``: asserted
    successful)."""
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
    assert response is not None and (response.success or not succeeded), node.output()[-3000:]
    return response


def count_inconsistent(messages) -> int:
    """How many bodies of the ``InertialParametersArray`` ``messages`` are not fully
    consistent."""
    from inertia_id_ros.ros.conversions import msg_to_thetas

    return sum(
        not check_consistency(theta).fully_consistent
        for msg in messages
        for theta in msg_to_thetas(msg).values()
    )


def agreeing_updates(node_updates, replay_updates) -> list[tuple]:
    """Assert that the node's ``identify`` responses succeed exactly where the replay's updates
    do; the pairs ``(response, replay estimate)`` of the successful ones."""
    assert [u.success for u in node_updates] == [u.ok for u in replay_updates], [
        (u.message, r.status) for u, r in zip(node_updates, replay_updates)
    ]
    return [
        (node, replayed.estimate)
        for node, replayed in zip(node_updates, replay_updates)
        if replayed.ok
    ]


def received_links(peer, links_qos) -> dict[str, list]:
    """Subscribe ``peer`` to the simulator's true links (latched) and the node's ``~/links``
    (with ``links_qos``); the messages received, under ``"truth"`` and ``"links"``."""
    from inertia_id_ros.msg import InertialParametersArray
    from inertia_id_ros.ros.qos import LATCHED

    received: dict[str, list] = {"truth": [], "links": []}
    peer.create_subscription(
        InertialParametersArray,
        "/inertia_id_sim/ground_truth_links",
        received["truth"].append,
        LATCHED,
    )
    peer.create_subscription(
        InertialParametersArray, "/inertia_id/links", received["links"].append, links_qos
    )
    return received


def bag_message_to_ros(msg):
    """The rclpy message of a bag's deserialised ``JointState``, ``Imu`` or ``WrenchStamped``
    (rosbags), with its header (stamp, frame)."""
    from builtin_interfaces.msg import Time
    from sensor_msgs.msg import JointState

    from inertia_id_ros.formats.data import wrench_values
    from inertia_id_ros.ros.conversions import imu_msg, wrench_stamped

    kind = msg.__msgtype__
    if kind == "sensor_msgs/msg/JointState":
        out = JointState(
            name=list(msg.name),
            position=msg.position.tolist(),
            velocity=msg.velocity.tolist(),
            effort=msg.effort.tolist(),
        )
    elif kind == "sensor_msgs/msg/Imu":
        o, w, a = msg.orientation, msg.angular_velocity, msg.linear_acceleration
        out = imu_msg(
            0.0, msg.header.frame_id, [o.x, o.y, o.z, o.w], [w.x, w.y, w.z], [a.x, a.y, a.z]
        )
    else:
        out = wrench_stamped(0.0, msg.header.frame_id, np.array(wrench_values(msg)))
    out.header.stamp = Time(sec=msg.header.stamp.sec, nanosec=msg.header.stamp.nanosec)
    out.header.frame_id = msg.header.frame_id
    return out


def play_and_identify(
    node, client, publishers, messages, update_times, timeout: float = 20.0
) -> list:
    """Publish the bag ``messages`` ((topic, log time (ns), message)) to the node under test
    through ``publishers`` (topic -> publisher), chunk by chunk up to each of ``update_times``
    (s of log time); once the node's diagnostics count every message published so far as
    received (at most ``timeout`` s), call ``identify`` there: its responses."""
    diagnostics = NodeDiagnostics(node)
    responses, cursor = [], 0
    for update_time in update_times:
        while cursor < len(messages) and 1e-9 * messages[cursor][1] < update_time:
            topic, _, msg = messages[cursor]
            publishers[topic].publish(bag_message_to_ros(msg))
            cursor += 1
        diagnostics.wait_until_received(cursor, timeout)
        responses.append(identify(node, client))
    node.destroy_subscription(diagnostics.subscription)
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
        self.history: list[dict[str, str]] = []
        """Every status's values so far, oldest first, its message under the key ``""``."""
        self.subscription = peer.create_subscription(
            DiagnosticArray, "/diagnostics", self._on_diagnostics, 10
        )

    def _on_diagnostics(self, msg) -> None:
        for status in msg.status:
            if status.name.startswith("inertia_id"):
                self.diagnostics = {kv.key: kv.value for kv in status.values}
                self.history.append(self.diagnostics | {"": status.message})
                self.status = (
                    int.from_bytes(status.level, "little")
                    if isinstance(status.level, bytes)
                    else int(status.level),
                    status.message,
                )
                self.diagnostics_stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
                self.diagnostics_received += 1

    def counter(self, key: str) -> int:
        return int(self.diagnostics.get(key, 0))

    def counters(self, prefix: str) -> dict[str, int]:
        return {
            k[len(prefix) :]: int(v) for k, v in self.diagnostics.items() if k.startswith(prefix)
        }

    def fresh_diagnostics(self, timeout: float = 10.0) -> None:
        """Wait for two new diagnostics messages (the second reflects everything sent)."""
        seen = self.diagnostics_received
        assert spin_until(self.peer, lambda: self.diagnostics_received >= seen + 2, timeout), (
            "no diagnostics from the node"
        )

    def wait_until_received(self, count: int, timeout: float = 20.0) -> None:
        """Wait until the node's ``received.*`` counters add up to ``count`` messages (it has
        taken every message published to it so far)."""
        assert spin_until(
            self.peer, lambda: sum(self.counters("received.").values()) >= count, timeout
        ), f"the node took {sum(self.counters('received.').values())} of {count} messages"

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
        peer.create_subscription(
            InertialParameters,
            "/inertia_id/estimate",
            self._on_estimate,
            QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE),
        )
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
        return [
            line
            for line in self.process.output()[mark:].splitlines()
            if "WARN" in line and kind in line
        ]

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
        assert np.allclose(theta, self.reference_theta, rtol=0.05, atol=1e-3), (
            theta,
            self.reference_theta,
        )
        return theta

    def take_reference(self, seconds: float = 12.0) -> np.ndarray:
        """Wait until the node's inputs are matched, feed ``seconds`` of motion, let the node
        settle and keep its ``identify`` estimate as the reference (and its memory now)."""
        self.feeder.wait_until_matched()
        self.feeder.publish(seconds)
        self.settle()
        response = identify(self.peer, self.client)
        assert response.success, response.message
        self.reference_theta = np.array(response.estimate.theta)
        self.fresh_diagnostics()
        self.rss_start = self.rss_mb()
        return self.reference_theta

    def check_memory(self) -> float:
        rss = self.rss_mb()
        assert rss - self.rss_start < MAX_RSS_GROWTH_MB, (self.rss_start, rss)
        return rss
