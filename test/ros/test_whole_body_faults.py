"""Whole-body faults over real DDS: one node process (config/go1_whole_body.yaml: a floating base,
the IMU, four foot contact sensors), fed by this test process with the simulated Go1, meets in
turn NaN and Inf in the IMU, the wrenches and the joint states (and an IMU reading NaN for long
enough that the gyro's derivative lacks readings), a joint state of the wrong length, an F/T
sensor that stops and restarts, duplicated and out-of-order stamps, an IMU at 10 x its rate,
frame_ids that are not in the URDF and a contact sensor that reads zero (a foot in the air).

After each: the node is alive, ``/diagnostics`` names the fault (a ``dropped.<reason>`` counter
or the value that reports it) and ``identify`` answers with a consistent estimate whose total
mass (what Go1's base rows identify) is that of the estimate before the faults. Over the whole
scenario every published link is consistent and every estimate's total mass is the reference's.

IMU and wrench messages have fixed-size fields: a wrong length cannot cross DDS there (the
library's check is a unit test, ``test_whole_body_input_faults.py``)."""

from __future__ import annotations

import time

import numpy as np

from helpers.dds import (
    NodeDiagnostics,
    count_inconsistent,
    identify,
    spin_until,
    wait_until_inputs_matched,
)
from helpers.paths import REPO
from inertia_id_ros.core.inertia import check_consistency
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.sim import whole_body_robots as wb
from inertia_id_ros.sim.whole_body_simulator import WholeBodySimulator

RATE = 200.0
"""The feeder's joint-state, IMU and wrench rate (Hz; the node's max_input_rate_hz)."""
T0 = 1000.0
"""Stamp of the first sample (s)."""
WARNING_PERIOD = 0.5
"""The node's ``warning_period_sec`` (s)."""
MASS_TOLERANCE = 0.01
"""Relative change of the estimated total mass allowed across the faults (clean windows of the
same motion move it by about 0.05 %; a loaded foot read as zero moves it by about a quarter)."""


class WholeBodyFeeder:
    """Publishes the simulated Go1's joint states, IMU readings and foot wrenches at their
    stamps, paced at wall-clock rate, spinning the peer meanwhile; and the faults."""

    def __init__(self, peer) -> None:
        from geometry_msgs.msg import WrenchStamped
        from rclpy.qos import QoSProfile
        from sensor_msgs.msg import Imu, JointState

        qos = QoSProfile(depth=1000)
        self.peer = peer
        self.sim = wb.go1(seed=0)
        sim = self.sim
        self.feet = [frame for frame, _ in sim.ft_sensors]
        self.in_air = WholeBodySimulator(  # the first foot lifted: the others carry the robot
            sim.cad_xml,
            [(foot, "contact") for foot in self.feet[1:]],
            sim.imu_frame,
            sim.joint_trajectory,
            base_trajectory=sim.base_trajectory,
            base_height=0.3,
            point_contacts=True,
            true_xml=sim.true_xml,
            seed=0,
        )
        self.joints = peer.create_publisher(JointState, "/joint_states", qos)
        self.imu = peer.create_publisher(Imu, "/imu", qos)
        self.wrenches = {
            foot: peer.create_publisher(WrenchStamped, f"/{foot}/wrench", qos) for foot in self.feet
        }
        self.rng = np.random.default_rng(1)
        self.k = 0
        """Index of the next sample (stamp ``T0 + k / RATE``)."""

    def wait_until_matched(self, timeout: float = 30.0) -> None:
        """Until the node under test and every input's publisher have matched."""
        wait_until_inputs_matched(
            self.peer, [self.joints, self.imu, *self.wrenches.values()], timeout
        )

    @property
    def next_stamp(self) -> float:
        return T0 + self.k / RATE

    def publish(
        self,
        seconds: float,
        silent: tuple[str, ...] = (),
        imu_factor: int = 1,
        foot_in_air: bool = False,
        nan_imu_except_every: int = 0,
    ) -> None:
        """``seconds`` of samples at :data:`RATE` (the IMU at ``imu_factor`` times it), except
        the wrenches of the ``silent`` feet; ``foot_in_air``: the first foot lifted (it reads
        zero); ``nan_imu_except_every``: every IMU reading but each n-th reads NaN."""
        import rclpy

        from inertia_id_ros.ros.conversions import imu_msg, joint_state, wrench_stamped

        n = int(round(seconds * RATE))
        t = (self.k + np.arange(n)) / RATE
        sim = self.in_air if foot_in_air else self.sim
        data = sim.measure(sim.simulate(t), False, False, self.rng)
        wrenches = data["ft_wrench"]
        if foot_in_air:
            wrenches = np.concatenate([np.zeros((n, 1, 6)), wrenches], axis=1)
        t_imu = (self.k * imu_factor + np.arange(n * imu_factor)) / (RATE * imu_factor)
        imu = (
            data
            if imu_factor == 1
            else self.sim.measure(self.sim.simulate(t_imu), False, False, self.rng)
        )
        names = list(self.sim.joint_names)
        start = time.monotonic()
        for i in range(n):
            stamp = T0 + t[i]
            self.joints.publish(joint_state(stamp, names, data["q"][i], data["dq"][i]))
            for j in range(i * imu_factor, (i + 1) * imu_factor):
                w = imu["imu_angular_velocity"][j]
                if nan_imu_except_every and j % nan_imu_except_every:
                    w = np.full(3, np.nan)  # rejected: the gyro's fit lacks the reading
                self.imu.publish(
                    imu_msg(
                        T0 + t_imu[j],
                        self.sim.imu_frame,
                        imu["imu_orientation"][j],
                        w,
                        imu["imu_linear_acceleration"][j],
                    )
                )
            for k, foot in enumerate(self.feet):
                if foot not in silent:
                    self.wrenches[foot].publish(wrench_stamped(stamp, foot, wrenches[i, k]))
            ahead = start + (i + 1) / RATE - time.monotonic()
            if ahead > 0.0 or i % 20 == 0:  # keep receiving diagnostics and links meanwhile
                rclpy.spin_once(self.peer, timeout_sec=max(ahead, 0.0))
        self.k += n


class WholeBodyNode(NodeDiagnostics):
    """The node under test as this test sees it: diagnostics (with the history of the values
    that report faults), every published links message, ``identify``."""

    REPORTED = ("stopped_sensors", "contacts_reading_zero", "rate_hz.imu")

    def __init__(self, process, peer) -> None:
        from rclpy.qos import QoSProfile, ReliabilityPolicy

        from inertia_id_ros.msg import InertialParametersArray
        from inertia_id_ros.srv import Identify

        super().__init__(peer)
        self.process = process
        self.client = peer.create_client(Identify, "/inertia_id/identify")
        self.seen: dict[str, set[str]] = {key: set() for key in self.REPORTED}
        self.links: list = []
        peer.create_subscription(
            InertialParametersArray,
            "/inertia_id/links",
            self.links.append,
            QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE),
        )
        self.reference_mass = 0.0

    def _on_diagnostics(self, msg) -> None:
        super()._on_diagnostics(msg)
        for key in self.REPORTED:
            if key in self.diagnostics:
                self.seen[key].add(self.diagnostics[key])

    def log_mark(self) -> int:
        return len(self.process.output())

    def warnings_since(self, mark: int, text: str) -> list[str]:
        return [
            line
            for line in self.process.output()[mark:].splitlines()
            if "WARN" in line and text in line
        ]

    def total_mass(self) -> float:
        """``identify``: a consistent estimate's total mass (kg)."""
        from inertia_id_ros.ros.conversions import msg_to_thetas

        assert self.process.alive(), self.process.output()[-3000:]
        response = identify(self.peer, self.client)
        assert response is not None and response.success, response and response.message
        thetas = msg_to_thetas(response.links)
        assert len(thetas) == 39
        assert all(check_consistency(theta).fully_consistent for theta in thetas.values())
        return sum(theta[0] for theta in thetas.values())

    def check_estimate_kept(self) -> None:
        """Alive, and ``identify``'s total mass is the reference's."""
        mass = self.total_mass()
        assert abs(mass - self.reference_mass) < MASS_TOLERANCE * self.reference_mass, (
            mass,
            self.reference_mass,
        )

    def check_dropped(self, before: dict[str, int], expected: dict[str, int]) -> None:
        """``dropped.<reason>`` on ``/diagnostics`` grows by ``expected`` (within 20 s)."""

        def grown() -> dict[str, int]:
            return {
                reason: self.counter(f"dropped.{reason}") - before.get(reason, 0)
                for reason in expected
            }

        spin_until(self.peer, lambda: all(grown()[r] >= n for r, n in expected.items()), 20.0)
        assert grown() == expected, (grown(), self.counters("dropped."))


def test_whole_body_faults_are_survived_and_reported(launch, rclpy_context):
    import rclpy

    from inertia_id_ros.ros.conversions import imu_msg, joint_state, msg_to_thetas, wrench_stamped

    process = launch(
        "inertia-id-node",
        "inertia_id_ros.ros.node",
        "--params-file",
        str(REPO / "config" / "go1_whole_body.yaml"),
        "-p",
        f"urdf_path:={example_robot_urdf('go1')}",
        "-p",
        "window_sec:=20.0",
        "-p",
        "update_rate_hz:=2.0",
        "-p",
        "sample_rate_hz:=100.0",
        "-p",
        f"warning_period_sec:={WARNING_PERIOD}",
    )
    peer = rclpy.create_node("inertia_id_whole_body_fault_injector")
    try:
        feeder = WholeBodyFeeder(peer)
        node = WholeBodyNode(process, peer)
        feeder.wait_until_matched()
        feeder.publish(3.0)  # the window's 200 samples at sample_rate_hz, and more
        node.reference_mass = node.total_mass()
        true_mass = sum(theta[0] for theta in feeder.sim.true_links.values())
        assert abs(node.reference_mass - true_mass) < 0.02 * true_mass
        names, imu_frame = list(feeder.sim.joint_names), feeder.sim.imu_frame
        gravity = np.array([0.0, 0.0, 9.81])
        published_before_faults = len(node.links)

        # NaN and Inf in every IMU and wrench channel, NaN in a joint state, a joint state of
        # the wrong length; then the IMU reads NaN for 0.4 s but for every 8th reading
        before, mark = node.counters("dropped."), node.log_mark()
        t = feeder.next_stamp - 0.5 / RATE  # between the stream's stamps
        for c in range(6):
            for value in (np.nan, np.inf, -np.inf):
                channels = np.zeros(6)
                channels[c] = value
                feeder.imu.publish(
                    imu_msg(
                        t, imu_frame, [0.0, 0.0, 0.0, 1.0], channels[:3], gravity + channels[3:]
                    )
                )
                time.sleep(0.002)
        for foot in feeder.feet:
            for c in range(6):
                channels = np.zeros(6)
                channels[c] = np.nan if c % 2 else -np.inf
                feeder.wrenches[foot].publish(wrench_stamped(t, foot, channels))
                time.sleep(0.002)
        q = np.zeros(len(names))
        q[3] = np.nan
        feeder.joints.publish(joint_state(t, names, q))
        short = joint_state(t, names, np.zeros(len(names)))
        short.velocity = [0.0, 1.0]
        feeder.joints.publish(short)
        feeder.publish(0.5)
        feeder.publish(0.4, nan_imu_except_every=8)
        feeder.publish(1.0)
        node.check_dropped(before, {"non_finite": 18 + 24 + 1 + 70, "length_mismatch": 1})
        assert node.counter("dropped.sparse_imu") > before.get("sparse_imu", 0)
        for kind in ("non_finite", "length_mismatch", "sparse_imu"):
            assert node.warnings_since(mark, f"({kind}"), kind
        node.check_estimate_kept()

        # an F/T sensor stops for 2 s (its rows dropped, reported), then restarts
        before, mark = node.counters("dropped."), node.log_mark()
        feeder.publish(2.0, silent=("FR_foot",))
        feeder.publish(1.0)
        node.fresh_diagnostics()
        assert "FR_foot" in node.seen["stopped_sensors"], node.seen
        assert node.diagnostics["stopped_sensors"] == ""
        assert node.warnings_since(mark, "F/T sensor(s) ['FR_foot'] stopped")
        assert node.warnings_since(mark, "F/T sensor(s) ['FR_foot'] resumed")
        assert node.counter("dropped.missing_wrench") > before.get("missing_wrench", 0)
        node.check_estimate_kept()

        # every input's newest sample repeated (same stamp), then one 0.3 s older
        before, mark = node.counters("dropped."), node.log_mark()
        feeder.publish(0.5)
        newest = feeder.next_stamp - 1.0 / RATE
        for stamp in (newest, newest - 0.3):
            feeder.joints.publish(joint_state(stamp, names, np.zeros(len(names))))
            feeder.imu.publish(
                imu_msg(stamp, imu_frame, [0.0, 0.0, 0.0, 1.0], np.zeros(3), gravity)
            )
            for foot in feeder.feet:
                feeder.wrenches[foot].publish(wrench_stamped(stamp, foot, np.zeros(6)))
        feeder.publish(1.0)
        node.check_dropped(before, {"duplicate_stamp": 6, "out_of_order": 6})
        for kind in ("duplicate_stamp", "out_of_order"):
            assert node.warnings_since(mark, f"({kind}"), kind
        node.check_estimate_kept()

        # the IMU at 10 x its rate for 1 s: its rate is reported and warned about (below)
        mark = node.log_mark()
        feeder.publish(1.0, imu_factor=10)
        feeder.publish(0.5)
        node.check_estimate_kept()

        # frame_ids that are not in the URDF
        before = node.counters("dropped.")
        t = feeder.next_stamp - 0.5 / RATE
        feeder.imu.publish(
            imu_msg(t, "imu_not_in_urdf", [0.0, 0.0, 0.0, 1.0], np.zeros(3), gravity)
        )
        for foot in feeder.feet:
            feeder.wrenches[foot].publish(wrench_stamped(t, f"{foot}_not_in_urdf", np.zeros(6)))
        feeder.publish(0.5)
        node.check_dropped(before, {"wrong_frame": 5})
        assert node.warnings_since(mark, "not_in_urdf")

        # a foot in the air: its contact sensor reads zero (the other three carry the robot)
        zero_mark = node.log_mark()
        feeder.publish(2.0, foot_in_air=True)
        feeder.publish(1.0)
        node.fresh_diagnostics()
        assert "FL_foot" in node.seen["contacts_reading_zero"], node.seen
        assert node.diagnostics["contacts_reading_zero"] == ""
        assert node.counter("zero_wrenches.FL_foot") == 2 * RATE
        assert node.warnings_since(zero_mark, "contact sensor(s) ['FL_foot'] read zero")
        node.check_estimate_kept()

        # the IMU's rate (averaged over 5 s) was reported on /diagnostics and warned about
        def imu_rate() -> float:
            return max((float(rate) for rate in node.seen["rate_hz.imu"]), default=0.0)

        assert spin_until(peer, lambda: imu_rate() > 1.2 * RATE, 10.0), node.seen
        assert node.warnings_since(mark, "imu samples arrive at")

        assert process.alive(), process.output()[-3000:]
        assert len(node.links) > published_before_faults + 10, len(node.links)
        masses = [sum(theta[0] for theta in msg_to_thetas(msg).values()) for msg in node.links]
        assert count_inconsistent(node.links) == 0
        assert np.allclose(
            masses[published_before_faults:], node.reference_mass, rtol=MASS_TOLERANCE
        ), masses
        print(
            f"\nwhole-body faults: {len(node.links)} links messages published, none with "
            f"inconsistent links; total mass {node.reference_mass:.3f} kg before the faults "
            f"(true {true_mass:.3f} kg), {min(masses[published_before_faults:]):.3f}-"
            f"{max(masses[published_before_faults:]):.3f} kg after; dropped "
            f"{node.counters('dropped.')}"
        )
    finally:
        peer.destroy_node()
