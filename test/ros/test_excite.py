"""The load-identification wizard over DDS: ~/excite on the simulator (which follows the node's
JointTrajectory commands), identify on the motion's samples, dry run, stop, refusals; motion only
with allow_motion, workspace limits before and during the motion."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from helpers.dds import node_args, spin_until, wait_until_serving
from inertia_id_ros.motion.trajectory import ExcitationTrajectory, concatenate, rest_to_rest
from inertia_id_ros.ros.shutdown import spin_until as spin_executor_until
from inertia_id_ros.sim.payload import PANDA_ARM_JOINTS, PANDA_HOME

AWAY = np.array([0.6, -0.4, 0.5, 0.4, -0.6, 0.5, 0.8])
"""rad: how far the test motion swings each joint from home and back."""
DESIGN_TIME_LIMIT_SEC = 6.0
"""The node's ``design_time_limit_sec`` where it designs a motion on the spot (s; the default
optimises 40 s, whose gain ``benchmarks/bench_excite.py`` measures)."""


def out_and_back(tmp_path, seconds: float = 3.0) -> tuple[str, ExcitationTrajectory]:
    """A trajectory file: rest-to-rest from the simulator's home pose out and back (``seconds``
    each way; peak joint speed 0.5 rad/s in 3 s)."""
    trajectory = concatenate(
        rest_to_rest(PANDA_HOME, PANDA_HOME + AWAY, seconds, joint_names=PANDA_ARM_JOINTS),
        rest_to_rest(PANDA_HOME + AWAY, PANDA_HOME, seconds, joint_names=PANDA_ARM_JOINTS),
    )
    path = tmp_path / f"out_and_back_{seconds:g}.npz"
    trajectory.save_npz(path)
    return str(path), trajectory


class JointStateLog:
    """The simulator's /joint_states as a peer receives them.

    A node of its own, spun by rclpy's events executor in a thread, keeps the messages serialized
    until they are read, then decodes them in batches. (1 kHz of messages through ``spin_once``
    would take the test process a third of a core: every call builds a wait set.)"""

    def __init__(self, name: str) -> None:
        import rclpy
        from rclpy.experimental import EventsExecutor
        from rclpy.qos import qos_profile_sensor_data
        from sensor_msgs.msg import JointState

        self._lock = threading.Lock()
        self._pending: list[bytes] = []
        self._decoded: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        """Stamps (N,) (s), positions and velocities (N, joints): one tuple once read."""
        self.node = rclpy.create_node(name)
        self.node.create_subscription(
            JointState, "/joint_states", self._append, qos_profile_sensor_data, raw=True
        )
        self._executor = EventsExecutor()
        self._executor.add_node(self.node)
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=spin_executor_until, args=(self._executor, self._stop), daemon=True
        )
        self._thread.start()

    def destroy(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)
        self._executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()

    def _append(self, buffer: bytes) -> None:
        with self._lock:
            self._pending.append(buffer)

    def clear(self) -> None:
        with self._lock:
            self._pending, self._decoded = [], []

    def __len__(self) -> int:
        with self._lock:
            return sum(stamps.size for stamps, _, _ in self._decoded) + len(self._pending)

    def _read(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        from inertia_id_ros.formats.cdr import decode

        with self._lock:
            pending, self._pending = self._pending, []
        if pending:
            batch = decode("sensor_msgs/msg/JointState", pending)
            assert not batch.refused, batch.refused
            self._decoded += [(r.t, r.arrays["position"], r.arrays["velocity"]) for r in batch.runs]
            self._decoded = [tuple(np.concatenate(column) for column in zip(*self._decoded))]
        return self._decoded[0]

    def latest_stamp(self) -> float:
        return float(self._read()[0][-1])

    def latest_position(self) -> np.ndarray:
        return self._read()[1][-1]

    def between(self, t0: float, t1: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Stamps, positions and velocities of the joint states stamped in [t0, t1]."""
        stamps, positions, velocities = self._read()
        inside = (stamps >= t0) & (stamps <= t1)
        return stamps[inside], positions[inside], velocities[inside]


class Wizard:
    """A peer calling ~/excite and ~/stop and following ~/excitation and /joint_states."""

    def __init__(self, peer) -> None:
        from diagnostic_msgs.msg import DiagnosticArray
        from std_srvs.srv import Trigger
        from trajectory_msgs.msg import JointTrajectory

        from inertia_id_ros.msg import ExcitationStatus, InertialParameters
        from inertia_id_ros.ros.qos import LATCHED
        from inertia_id_ros.srv import Excite

        self.peer = peer
        self.status: list = []
        self.truth: list = []
        self.joints = JointStateLog(f"{peer.get_name()}_joint_states")
        peer.create_subscription(
            ExcitationStatus, "/inertia_id/excitation", self.status.append, LATCHED
        )
        peer.create_subscription(
            InertialParameters, "/inertia_id_sim/ground_truth", self.truth.append, LATCHED
        )
        self.diagnostics: list[dict[str, str]] = []
        """The node's /diagnostics values, one dict per message."""
        peer.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 10)
        self.commands: list = []
        peer.create_subscription(
            JointTrajectory,
            "/joint_trajectory_controller/joint_trajectory",
            self.commands.append,
            10,
        )
        self.excite_client = peer.create_client(Excite, "/inertia_id/excite")
        self.stop_client = peer.create_client(Trigger, "/inertia_id/stop")
        self._excite, self._trigger = Excite, Trigger
        self.mark = 0
        """Statuses received before the latest request."""
        # the node answers a parameter request only once it has discovered this peer's
        # endpoints, the service clients above first: their responses then reach the peer
        wait_until_serving(peer)

    def _on_diagnostics(self, msg) -> None:
        self.diagnostics.extend(
            {kv.key: kv.value for kv in s.values}
            for s in msg.status
            if s.name.startswith("inertia_id:")
        )

    def destroy(self) -> None:
        self.joints.destroy()
        self.peer.destroy_node()

    def wait_until_the_node_receives_joint_states(self, timeout: float = 30.0) -> None:
        """Spin until this peer holds over 100 joint states and the node under test receives
        them too: its diagnostics' joint-state count rises between two messages that came after
        this peer's (so its newest joint state is from the simulator running now)."""
        assert spin_until(self.peer, lambda: len(self.joints) > 100, timeout), (
            "no joint states from the simulator"
        )
        seen = len(self.diagnostics)

        def rising() -> bool:
            counts = [int(d.get("received.joint_state", 0)) for d in self.diagnostics[seen:]]
            return len(counts) >= 2 and counts[-1] > counts[0]

        assert spin_until(self.peer, rising, timeout), (
            f"the node under test receives no joint states: {self.diagnostics[seen:]}"
        )

    def _call(self, client, request):
        import rclpy

        self.mark = len(self.status)
        assert client.wait_for_service(timeout_sec=20.0)
        future = client.call_async(request)
        rclpy.spin_until_future_complete(self.peer, future, timeout_sec=30.0)
        assert future.result() is not None
        return future.result()

    def excite(
        self,
        trajectory_file: str = "",
        duration: float = 0.0,
        speed_scale: float = 1.0,
        skip_dry_run: bool = False,
    ):
        return self._call(
            self.excite_client,
            self._excite.Request(
                trajectory_file=trajectory_file,
                duration=duration,
                speed_scale=speed_scale,
                skip_dry_run=skip_dry_run,
            ),
        )

    def stop(self):
        return self._call(self.stop_client, self._trigger.Request())

    def wait_for(self, states: tuple[str, ...], timeout: float, since: int | None = None):
        """The first status in ``states`` from the ``since``-th on (default: the last request's
        first), spinning up to ``timeout`` s."""
        seen = self.mark if since is None else since
        assert spin_until(
            self.peer, lambda: any(m.state in states for m in self.status[seen:]), timeout
        ), [(m.state, m.message) for m in self.status]
        return next(m for m in self.status[seen:] if m.state in states)

    def joint_states_between(self, t0: float, t1: float) -> tuple[np.ndarray, np.ndarray]:
        return self.joints.between(t0, t1)[1:]


def start(launch, **parameters):
    """The simulator holding still and the node under test (motion allowed; ``parameters``)."""
    sim = launch("inertia-id-sim", "inertia_id_ros.ros.sim_node", "-p", "motion:=hold")
    node = launch(
        "inertia-id-node",
        "inertia_id_ros.ros.node",
        *node_args(window_sec=10.0, update_rate_hz=1.0, allow_motion="true", **parameters),
    )
    return sim, node


def test_excite_designs_runs_and_identifies_the_payload_from_one_15_s_motion(launch, rclpy_context):
    import rclpy

    from inertia_id_ros.ros.conversions import wrench_to_array
    from inertia_id_ros.ros.demo import Errors

    sim, node = start(launch, design_time_limit_sec=DESIGN_TIME_LIMIT_SEC)
    wizard = Wizard(rclpy.create_node("excite_accuracy"))
    try:
        wizard.wait_until_the_node_receives_joint_states()
        # designed on the spot from the measured pose, at full speed at once
        response = wizard.excite(duration=15.0, skip_dry_run=True)
        assert response.accepted and not response.dry_run, response.reason
        running = wizard.wait_for(("running", "failed"), 150.0)
        assert running.state == "running", node.output()[-3000:]
        done = wizard.wait_for(("done", "failed", "stopped"), 60.0)
        assert done.state == "done" and done.identified, done.message
        assert done.duration == pytest.approx(15.0) and done.speed_scale == 1.0
        estimate = done.estimate
        # 1 kHz over the motion: all of it but what best-effort DDS may drop on a loaded 2-core
        # machine (measured: up to 2.5 % with the suite's other worker busy)
        assert estimate.num_samples >= 0.97 * 15.0 * 1000.0
        assert estimate.num_samples <= 15.0 * 1000.0 + 1
        truth = wizard.truth[-1]
        errors = Errors.of(estimate, np.array(truth.theta), wrench_to_array(truth.sensor_offset))
        print(
            f"\nexcite over DDS: mass {100 * errors.mass_rel:.3f} %, COM "
            f"{1e3 * errors.com:.3f} mm, inertia {100 * errors.inertia_rel:.2f} %, offset "
            f"force {errors.offset_force:.4f} N from {estimate.num_samples} samples"
        )
        assert errors.acceptable(), errors
        # the robot followed the command: it moved, and came back to where it started
        q, _ = wizard.joint_states_between(done.motion_start, done.motion_end)
        assert np.ptp(q, axis=0).min() > 0.1
        assert spin_until(
            wizard.peer, lambda: wizard.joints.latest_stamp() > done.motion_end + 2.0, 10.0
        )
        assert np.allclose(wizard.joints.latest_position(), PANDA_HOME, atol=1e-3)
    finally:
        wizard.destroy()


def test_a_dry_run_moves_at_speed_scale_and_a_stop_mid_run_holds(launch, rclpy_context, tmp_path):
    import rclpy

    from inertia_id_ros.ros.conversions import joint_trajectory_arrays

    path, trajectory = out_and_back(tmp_path, seconds=2.0)  # 4 s of motion
    sim, node = start(launch, excite_dry_run_speed_scale=0.5)
    wizard = Wizard(rclpy.create_node("excite_dry_run"))
    try:
        wizard.wait_until_the_node_receives_joint_states()
        response = wizard.excite(path)  # a new motion: a dry run
        assert response.accepted and response.dry_run
        assert "dry run at speed_scale 0.5" in response.reason
        busy = wizard.excite(path)
        assert not busy.accepted and busy.reason.startswith("busy")
        done = wizard.wait_for(("done", "failed", "stopped"), 60.0)
        assert done.state == "done", done.message
        assert done.motion_end - done.motion_start == pytest.approx(2 * 4.0)
        _, dq = wizard.joint_states_between(done.motion_start, done.motion_end)
        peak, full_speed = np.abs(dq).max(axis=0), np.abs(trajectory.dq).max(axis=0)
        print(f"\ndry run: peak joint speed / full-speed peak = {np.round(peak / full_speed, 3)}")
        assert np.allclose(peak / full_speed, 0.5, rtol=0.03)
        # the command: every point with positions, velocities and accelerations, stamped with
        # its start; the robot followed it 20 ms late (the simulator's tracking lag)
        t_start, names, times, q, dq, ddq = joint_trajectory_arrays(wizard.commands[0])
        assert names == PANDA_ARM_JOINTS and q.shape == dq.shape == ddq.shape == (times.size, 7)
        assert all(
            len(point.velocities) == len(point.accelerations) == 7
            for point in wizard.commands[0].points
        )
        assert t_start == pytest.approx(done.motion_start - 1.0, abs=1e-6)  # a 1 s ramp-in
        command = ExcitationTrajectory(times, names, q, dq, ddq)
        stamps, measured, _ = wizard.joints.between(done.motion_start, done.motion_end)
        late = np.abs(measured - command.sample(stamps - t_start - 0.02)[0]).max()
        on_time = np.abs(measured - command.sample(stamps - t_start)[0]).max()
        print(f"measured vs. command: {late:.1e} rad 20 ms late, {on_time:.1e} rad on time")
        assert late < 2e-4 and 5 * late < on_time  # 20 ms late: within the noise, on time: not

        full = wizard.excite(path)  # played before: full speed; stopped 2 s into the motion
        assert full.accepted and not full.dry_run and "speed_scale" not in full.reason
        running = wizard.wait_for(("running",), 10.0)
        assert spin_until(
            wizard.peer, lambda: wizard.joints.latest_stamp() > running.motion_start + 2.0, 10.0
        )
        stop = wizard.stop()
        assert stop.success and "holding the current pose" in stop.message, stop.message
        stopped = wizard.wait_for(("stopped",), 15.0)  # latched; 15 s beside a loaded suite
        assert "requested by ~/stop" in stopped.message and not stopped.identified
        t_stop = wizard.joints.latest_stamp()
        assert spin_until(wizard.peer, lambda: wizard.joints.latest_stamp() > t_stop + 2.0, 10.0)
        q, dq = wizard.joint_states_between(t_stop + 1.0, np.inf)
        print(
            f"after the stop: joints moved {np.ptp(q, axis=0).max():.2e} rad, speeds "
            f"{np.abs(dq).max():.2e} rad/s (noise 5e-4 rad/s)"
        )
        assert np.ptp(q, axis=0).max() < 1e-3 and np.abs(dq).max() < 5e-3  # holding
        q_plan = trajectory.sample(2.0)[0][0]
        assert np.abs(q[-1] - q_plan).max() < 0.1  # held near where it was stopped
        assert not wizard.stop().success  # nothing left to stop
        hold = joint_trajectory_arrays(wizard.commands[-1])
        assert hold[0] == 0.0 and hold[2].size == 1 and not hold[4].any()  # one point, at rest
    finally:
        wizard.destroy()


def test_refusals_and_a_stop_when_the_joint_states_stop(launch, rclpy_context, tmp_path):
    import rclpy

    path, _ = out_and_back(tmp_path, seconds=4.0)
    node = launch(
        "inertia-id-node",
        "inertia_id_ros.ros.node",
        *node_args(window_sec=10.0, allow_motion="true"),
    )
    wizard = Wizard(rclpy.create_node("excite_refusals"))
    try:
        refused = wizard.excite(path)  # no joint states at all
        assert not refused.accepted and refused.reason.startswith("stale_joint_states")
        far = np.array(PANDA_HOME)
        far[3] += 0.8
        sim = launch(
            "inertia-id-sim",
            "inertia_id_ros.ros.sim_node",
            "-p",
            "motion:=hold",
            "-p",
            f"start_position:={far.tolist()}",
        )
        wizard.wait_until_the_node_receives_joint_states()
        refused = wizard.excite(path)
        assert not refused.accepted and refused.reason.startswith("far_from_start")
        assert "panda_joint4 is 0.800" in refused.reason
        refused = wizard.excite(str(tmp_path / "missing.npz"))
        assert not refused.accepted and refused.reason.startswith("unreadable_trajectory")
        refused = wizard.excite()
        assert not refused.accepted and refused.reason.startswith("no_motion")
        refused = wizard.excite(duration=15.0, speed_scale=1.5)
        assert not refused.accepted and refused.reason.startswith("invalid_speed_scale")
        sim.stop()
        time.sleep(0.5)
        refused = wizard.excite(path)
        assert not refused.accepted and refused.reason.startswith("stale_joint_states")

        sim = launch("inertia-id-sim", "inertia_id_ros.ros.sim_node", "-p", "motion:=hold")
        wizard.joints.clear()
        wizard.wait_until_the_node_receives_joint_states()
        refused = wizard.excite(
            out_and_back(tmp_path, seconds=0.4)[0], speed_scale=0.9, skip_dry_run=True
        )
        assert not refused.accepted and refused.reason.startswith("beyond_limits")
        assert "velocity limit" in refused.reason
        assert wizard.excite(path).accepted
        wizard.wait_for(("running",), 10.0)
        sim.stop()  # the joint states stop mid-run
        stopped = wizard.wait_for(("stopped",), 5.0)
        assert "joint states stopped" in stopped.message and "holding" in stopped.message
        assert node.alive()
    finally:
        wizard.destroy()


def test_links_mode_excites_the_go1_leg_and_identifies_its_links(launch, rclpy_context, tmp_path):
    import rclpy

    from helpers.paths import REPO
    from inertia_id_ros.core.inertia import check_consistency
    from inertia_id_ros.ros.conversions import msg_to_thetas
    from inertia_id_ros.sim.torques import LEG_HOME

    joints = ("FL_hip_joint", "FL_thigh_joint", "FL_calf_joint")
    swing = np.array([0.4, 0.6, 0.6])
    motion = concatenate(
        *(
            rest_to_rest(a, b, 2.0, joint_names=joints)
            for a, b in (
                (LEG_HOME, LEG_HOME + swing),
                (LEG_HOME + swing, LEG_HOME - swing),
                (LEG_HOME - swing, LEG_HOME),
            )
        )
    )
    path = tmp_path / "leg.npz"
    motion.save_npz(path)
    launch(
        "inertia-id-sim",
        "inertia_id_ros.ros.sim_node",
        "-p",
        "robot:=go1_leg",
        "-p",
        "motion:=hold",
        "-p",
        "rate_hz:=500.0",
    )
    launch(
        "inertia-id-node",
        "inertia_id_ros.ros.node",
        "--params-file",
        str(REPO / "config" / "go1_leg_links.yaml"),
        "-p",
        f"chain_config:={REPO / 'config' / 'go1_front_left_leg.yaml'}",
        "-p",
        "allow_motion:=true",
    )
    wizard = Wizard(rclpy.create_node("excite_links"))
    try:
        wizard.wait_until_the_node_receives_joint_states()
        response = wizard.excite(str(path), skip_dry_run=True)
        assert response.accepted, response.reason
        done = wizard.wait_for(("done", "failed", "stopped"), 60.0)
        assert done.state == "done" and done.identified, done.message
        assert [b.header.frame_id for b in done.links.bodies] == ["FL_hip", "FL_thigh", "FL_calf"]
        assert done.links.bodies[0].num_samples >= 0.98 * 6.0 * 500.0
        for theta in msg_to_thetas(done.links).values():
            assert check_consistency(theta).fully_consistent
    finally:
        wizard.destroy()


def test_payload_torques_mode_excites_the_panda_and_identifies_the_payload(
    launch, rclpy_context, tmp_path
):
    """~/excite in mode payload_torques (the Panda without an F/T sensor, the URDF's links as
    the link model): the motion runs on the simulator and the payload at the flange is
    identified from its joint states alone."""
    import rclpy

    from helpers.paths import REPO
    from inertia_id_ros.core.inertia import check_consistency
    from inertia_id_ros.core.robots import example_robot_urdf

    path, _ = out_and_back(tmp_path)
    launch(
        "inertia-id-sim",
        "inertia_id_ros.ros.sim_node",
        "-p",
        "robot:=panda_torques",
        "-p",
        "motion:=hold",
    )
    launch(
        "inertia-id-node",
        "inertia_id_ros.ros.node",
        "--params-file",
        str(REPO / "config" / "panda_payload_torques.yaml"),
        "-p",
        f"urdf_path:={example_robot_urdf('panda')}",
        "-p",
        "window_sec:=10.0",
        "-p",
        "update_rate_hz:=1.0",
        "-p",
        "allow_motion:=true",
    )
    wizard = Wizard(rclpy.create_node("excite_payload_torques"))
    try:
        wizard.wait_until_the_node_receives_joint_states()
        response = wizard.excite(path, skip_dry_run=True)  # dry runs: the test above
        assert response.accepted and not response.dry_run, response.reason
        done = wizard.wait_for(("done", "failed", "stopped"), 60.0)
        assert done.state == "done" and done.identified, done.message
        estimate = done.estimate
        assert estimate.header.frame_id == "panda_link8" and estimate.body_name == "payload"
        assert estimate.num_samples >= 0.95 * 6.0 * 1000.0
        assert check_consistency(np.array(estimate.theta)).fully_consistent
        assert estimate.inertia.m > 0.0 and len(wizard.commands) >= 1
    finally:
        wizard.destroy()


def test_a_trajectory_message_carries_every_point_exactly(tmp_path):
    from inertia_id_ros.ros.conversions import joint_trajectory_arrays, joint_trajectory_msg

    _, trajectory = out_and_back(tmp_path, seconds=1.0)
    msg = joint_trajectory_msg(
        1234.5, trajectory.joint_names, trajectory.t, trajectory.q, trajectory.dq, trajectory.ddq
    )
    t_start, names, times, q, dq, ddq = joint_trajectory_arrays(msg)
    assert t_start == pytest.approx(1234.5, abs=1e-9) and names == PANDA_ARM_JOINTS
    assert np.allclose(times, trajectory.t, atol=1e-9)
    assert np.array_equal(q, trajectory.q) and np.array_equal(dq, trajectory.dq)
    assert np.array_equal(ddq, trajectory.ddq)
    msg.points[3].velocities = []  # positions only: zeros
    assert np.array_equal(joint_trajectory_arrays(msg)[4][3], np.zeros(7))
    msg.points[3].positions = [0.0]
    with pytest.raises(ValueError, match="positions do not match the 7 joints"):
        joint_trajectory_arrays(msg)


def test_a_window_change_during_an_excitation_applies_at_its_end(launch, rclpy_context, tmp_path):
    """window_sec set to 1 s while the robot moves: the identification still gets every sample
    of the 6 s motion, and the node's window is 1 s afterwards (not the length before)."""
    import rclpy
    from rclpy.parameter import Parameter
    from rclpy.parameter_client import AsyncParameterClient

    path, _ = out_and_back(tmp_path)
    sim, node = start(launch)
    wizard = Wizard(rclpy.create_node("excite_window"))
    diagnostics = wizard.diagnostics
    parameters = AsyncParameterClient(wizard.peer, "/inertia_id")
    try:
        wizard.wait_until_the_node_receives_joint_states()
        response = wizard.excite(path, skip_dry_run=True)
        assert response.accepted, response.reason
        wizard.wait_for(("running",), 10.0)
        assert parameters.wait_for_services(timeout_sec=10.0)
        future = parameters.set_parameters([Parameter("window_sec", value=1.0)])
        rclpy.spin_until_future_complete(wizard.peer, future, timeout_sec=10.0)
        assert all(r.successful for r in future.result().results)
        done = wizard.wait_for(("done", "failed", "stopped"), 60.0)
        assert done.state == "done" and done.identified, done.message
        assert done.estimate.num_samples >= 0.99 * 6.0 * 1000.0  # the whole motion
        seen = len(diagnostics)
        assert spin_until(
            wizard.peer, lambda: any(d.get("window_sec") == "1" for d in diagnostics[seen:]), 10.0
        ), [d.get("window_sec") for d in diagnostics[seen:]]
    finally:
        wizard.destroy()


TOOL = "panda_hand_tcp"


def refused_before_motion(launch, path: str, reason: str, **parameters):
    """The node (motion allowed; ``parameters``) beside the arm at home asked to play ``path``:
    its refusal, whose reason starts with ``reason``, after which nothing moved."""
    import rclpy

    launch(
        "inertia-id-node",
        "inertia_id_ros.ros.node",
        *node_args(window_sec=10.0, allow_motion="true", **parameters),
    )
    wizard = Wizard(rclpy.create_node("excite_refused"))
    Arm(wizard.peer)
    try:
        wizard.wait_until_the_node_receives_joint_states()
        refused = wizard.excite(path)
        assert not refused.accepted and refused.reason.startswith(reason), refused.reason
        spin_until(wizard.peer, lambda: False, 0.5)
        assert not wizard.commands  # nothing moved
        assert all(m.state not in ("ramp_in", "running") for m in wizard.status)
    finally:
        wizard.destroy()
    return refused


def tool_heights(Q: np.ndarray) -> np.ndarray:
    """The tool's height (m, base frame) at the arm's joint positions ``Q`` (N, 7)."""
    from inertia_id_ros.core.robots import example_robot_urdf, load_model
    from inertia_id_ros.motion.workspace import Sphere, Workspace, WorkspaceChecker, WorkspaceLimit

    checker = WorkspaceChecker(
        load_model(example_robot_urdf("panda")),
        Workspace((WorkspaceLimit("all", (TOOL,), Sphere(np.zeros(3), 9.0)),)),
    )
    return checker.positions(PANDA_ARM_JOINTS, np.atleast_2d(Q))[:, 0, 2]


class Arm:
    """A peer publishing the arm's /joint_states at ``rate_hz``, stamped now: ``pose(t)`` (rad;
    ``None``: publish nothing)."""

    def __init__(self, peer, rate_hz: float = 100.0) -> None:
        from sensor_msgs.msg import JointState

        self.peer, self._msg_type = peer, JointState
        self.pose = lambda t: PANDA_HOME
        self._publisher = peer.create_publisher(JointState, "/joint_states", 10)
        peer.create_timer(1.0 / rate_hz, self._tick)

    def publish(self, q: np.ndarray, t: float) -> None:
        from inertia_id_ros.ros.conversions import seconds_to_stamp

        msg = self._msg_type(name=list(PANDA_ARM_JOINTS), position=[float(x) for x in q])
        msg.header.stamp = seconds_to_stamp(t)
        self._publisher.publish(msg)

    def _tick(self) -> None:
        t = time.time()
        q = self.pose(t)
        if q is not None:
            self.publish(q, t)


@pytest.mark.rate_insensitive
def test_without_allow_motion_excite_refuses_and_the_parameter_is_read_only(
    launch, rclpy_context, tmp_path
):
    import rclpy
    from rclpy.parameter import Parameter
    from rclpy.parameter_client import AsyncParameterClient

    path, _ = out_and_back(tmp_path)
    launch("inertia-id-node", "inertia_id_ros.ros.node", *node_args(window_sec=10.0))
    wizard = Wizard(rclpy.create_node("excite_not_allowed"))
    parameters = AsyncParameterClient(wizard.peer, "/inertia_id")
    try:
        refused = wizard.excite(path)
        assert not refused.accepted and refused.reason.startswith("motion_not_allowed")
        assert "allow_motion is false" in refused.reason
        refused = wizard.excite(duration=15.0)
        assert not refused.accepted and refused.reason.startswith("motion_not_allowed")
        assert parameters.wait_for_services(timeout_sec=10.0)
        future = parameters.set_parameters([Parameter("allow_motion", value=True)])
        rclpy.spin_until_future_complete(wizard.peer, future, timeout_sec=10.0)
        result = future.result().results[0]
        assert not result.successful and "read-only" in result.reason
        assert not wizard.excite(path).accepted and not wizard.commands
    finally:
        wizard.destroy()


@pytest.mark.rate_insensitive
def test_a_workspace_plane_5_cm_into_the_tool_path_refuses_before_motion(
    launch, rclpy_context, tmp_path
):
    from helpers.dds import SENSOR
    from inertia_id_ros.core.robots import example_robot_urdf, load_model
    from inertia_id_ros.motion.design import design_excitation
    from inertia_id_ros.motion.objectives import ObjectiveSettings

    designed = design_excitation(
        load_model(example_robot_urdf("panda")),
        PANDA_ARM_JOINTS,
        "payload",
        6.0,
        settings=ObjectiveSettings(sensor_frame=SENSOR),
        start=PANDA_HOME,
        time_limit=2.0,
    ).trajectory
    path = str(tmp_path / "designed.npz")
    designed.save_npz(path)
    times = np.linspace(0.0, designed.duration, 3001)
    heights = tool_heights(designed.sample(times)[0])
    lowest, when = float(heights.min()), float(times[np.argmax(heights == heights.min())])
    workspace = tmp_path / "workspace.yaml"
    workspace.write_text(
        f"limits:\n  - name: table\n    frames: [{TOOL}]\n"
        f"    half_space: {{normal: [0, 0, -1], offset: {-(lowest + 0.05)!r}}}\n"
    )
    refused = refused_before_motion(launch, path, "beyond_workspace", workspace_file=str(workspace))
    print(f"\nworkspace plane 5 cm into the tool path: {refused.reason}")
    assert f"frame {TOOL} leaves workspace limit 'table'" in refused.reason
    assert "by 0.050 m" in refused.reason and when > 0.5  # mid-motion, not at the start


def test_a_measured_excursion_beyond_a_box_stops_and_holds_at_that_joint_state(
    launch, rclpy_context, tmp_path
):
    import rclpy

    from inertia_id_ros.ros.conversions import joint_trajectory_arrays

    path, trajectory = out_and_back(tmp_path)
    floor = float(tool_heights(trajectory.sample(np.linspace(0.0, 6.0, 3001))[0]).min()) - 0.02
    workspace = tmp_path / "workspace.yaml"
    workspace.write_text(
        f"limits:\n  - name: cell\n    frames: [{TOOL}]\n"
        f"    box: {{center: [0, 0, {floor + 5.0!r}], size: [10, 10, 10]}}\n"
    )
    launch(
        "inertia-id-node",
        "inertia_id_ros.ros.node",
        *node_args(
            window_sec=10.0,
            allow_motion="true",
            workspace_file=str(workspace),
            excite_max_tracking_error=1.0,
        ),
    )
    wizard = Wizard(rclpy.create_node("excite_workspace_box"))
    arm = Arm(wizard.peer, rate_hz=100.0)
    try:
        wizard.wait_until_the_node_receives_joint_states()
        response = wizard.excite(path, skip_dry_run=True)  # 1 cm inside the box: accepted
        assert response.accepted, response.reason
        assert spin_until(wizard.peer, lambda: wizard.commands, 5.0)
        t_start, names, times, q, dq, ddq = joint_trajectory_arrays(wizard.commands[0])
        command = ExcitationTrajectory(times, names, q, dq, ddq)
        arm.pose = lambda t: command.sample(np.clip(t - t_start, 0.0, command.duration))[0][0]
        running = wizard.wait_for(("running",), 10.0)
        assert spin_until(wizard.peer, lambda: time.time() > running.motion_start + 0.5, 10.0)
        arm.pose = lambda t: None  # the robot slips: one joint state 0.8 rad off, then none
        t_out = time.time()
        q_out = command.sample(t_out - t_start)[0][0] + np.array([0, 0.8, 0, 0, 0, 0, 0])
        assert tool_heights(q_out)[0] < floor  # the excursion is beyond the box
        arm.publish(q_out, t_out)
        sent = time.monotonic()

        def holds() -> list:
            return [m for m in wizard.commands[1:] if len(m.points) == 1]

        assert spin_until(wizard.peer, holds, 5.0)
        latency = time.monotonic() - sent
        stopped = wizard.wait_for(("stopped",), 5.0)
        print(
            f"\nexcursion beyond the box: hold received {1e3 * latency:.0f} ms after its joint "
            f"state (joint states every 10 ms): {stopped.message}"
        )
        assert (
            f"the measured pose: frame {TOOL} leaves workspace limit 'cell'" in stopped.message
            and f"t = {t_out:.3f} s" in stopped.message
        )
        hold = joint_trajectory_arrays(holds()[0])
        assert np.allclose(hold[3][0], q_out, atol=1e-9)  # holding where it was measured
        assert latency < 0.5  # before joint_state_timeout: that joint state stopped it
    finally:
        wizard.destroy()


@pytest.mark.rate_insensitive
def test_a_bad_workspace_file_stops_the_node_at_start_up_naming_the_parameter(launch, tmp_path):
    workspace = tmp_path / "workspace.yaml"
    workspace.write_text(
        "limits:\n  - frames: [no_such_frame]\n    sphere: {center: [0, 0, 0], radius: 1}\n"
    )
    node = launch(
        "inertia-id-node",
        "inertia_id_ros.ros.node",
        *node_args(allow_motion="true", workspace_file=str(workspace)),
    )
    deadline = time.monotonic() + 60.0
    while node.alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not node.alive() and node.popen.returncode == 2, node.output()[-2000:]
    assert "parameter 'workspace_file'" in node.output()
    assert "frame 'no_such_frame' is not in the model" in node.output()


@pytest.mark.rate_insensitive
def test_a_command_into_an_obstacle_is_refused_before_motion(launch, rclpy_context, tmp_path):
    from inertia_id_ros.core.robots import example_robot_data_dir, example_robot_urdf, load_model
    from inertia_id_ros.motion.workspace import Sphere, Workspace, WorkspaceChecker, WorkspaceLimit

    path, trajectory = out_and_back(tmp_path)
    tool = WorkspaceChecker(
        load_model(example_robot_urdf("panda")),
        Workspace((WorkspaceLimit("all", (TOOL,), Sphere(np.zeros(3), 9.0)),)),
    ).positions(PANDA_ARM_JOINTS, (PANDA_HOME + AWAY)[None])[0, 0]  # where the motion turns back
    environment = tmp_path / "environment.yaml"
    environment.write_text(
        "obstacles:\n  - name: table\n"
        "    half_space: {normal: [0, 0, 1], offset: 0.0}\n"
        f"  - name: lamp\n    sphere: {{center: {tool.tolist()}, "
        "radius: 0.05}\n"
    )
    srdf = example_robot_data_dir() / "panda_description" / "srdf" / "panda.srdf"
    refused = refused_before_motion(
        launch, path, "collision", environment_file=str(environment), srdf=str(srdf)
    )
    print(f"\nan obstacle in the tool path: {refused.reason}")
    assert "and lamp overlap by" in refused.reason
    assert "closer than the collision margin 10 mm" in refused.reason
