"""The node part of the modes' contract (``test/unit/modes/test_mode_contract.py``), parametrised
over the registry and the test-only mode from outside the package: the node (a process, over DDS)
started from a mode's example parameter file runs that mode (its ``/diagnostics`` say so; its
start-up log gives the mode's memory policy) and, fed the messages of the mode's simulated example
log (``Mode.example_log``) with their own stamps, answers ``~/identify`` with an estimate, through
the mode's ROS wiring."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers.dds import NodeDiagnostics, play_and_identify, spin_until, wait_until_inputs_matched
from helpers.paths import REPO
from helpers.toy_mode import MODE as TOY
from inertia_id_ros import modes
from inertia_id_ros.formats.data import (
    IMU_TYPE,
    JOINT_STATE_TYPE,
    ROBOT_DESCRIPTION_TOPIC,
    WRENCH_TYPE,
    read_bag_messages,
)
from inertia_id_ros.offline.replay import bag_robot_description

MODES = [mode.name for mode in modes.modes()] + [TOY]
"""The package's modes and the test-only one."""


@pytest.fixture(autouse=True)
def registry_restored(monkeypatch):
    """The test-only mode is registered for one test only."""
    monkeypatch.setattr(modes.base, "_REGISTRY", dict(modes.base._REGISTRY))
    monkeypatch.setattr(modes.base, "_IMPORTED", dict(modes.base._IMPORTED))


def _topics(bag) -> dict[str, str]:
    """The bag's input topics -> their message types (all but the URDF)."""
    from rosbags.highlevel import AnyReader

    with AnyReader([Path(bag)]) as reader:
        return {
            c.topic: c.msgtype for c in reader.connections if c.topic != ROBOT_DESCRIPTION_TOPIC
        }


@pytest.mark.parametrize("name", MODES)
def test_the_node_runs_a_mode_from_its_example(
    name, launch, ros_env, rclpy_context, monkeypatch, tmp_path
):
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    from rclpy.qos import QoSProfile
    from sensor_msgs.msg import Imu, JointState

    from inertia_id_ros.srv import Identify

    mode = modes.get(name)
    log = mode.example_log(tmp_path)
    urdf = tmp_path / "robot.urdf"
    urdf.write_text(bag_robot_description(log.replay))
    paths = [str(REPO / "test"), ros_env.get("PYTHONPATH", "")]
    monkeypatch.setitem(ros_env, "PYTHONPATH", os.pathsep.join(filter(None, paths)))
    process = launch(
        "inertia-id-node",
        "inertia_id_ros.ros.node",
        "--params-file",
        str(REPO / mode.example),
        "-p",
        f"urdf_path:={urdf}",
        "-p",
        "update_rate_hz:=0.001",  # identify alone solves
        "-p",
        "diagnostics_period_sec:=0.05",  # counters current before identify
    )
    peer = rclpy.create_node("inertia_id_contract_peer")
    try:
        client = peer.create_client(Identify, "/inertia_id/identify")
        assert client.wait_for_service(timeout_sec=30.0), process.output()
        diagnostics = NodeDiagnostics(peer)
        assert spin_until(peer, lambda: diagnostics.diagnostics, 10.0), process.output()
        assert diagnostics.diagnostics["mode"] == mode.name
        types = {JOINT_STATE_TYPE: JointState, IMU_TYPE: Imu, WRENCH_TYPE: WrenchStamped}
        topics = _topics(log.replay)
        qos = QoSProfile(depth=2000)
        publishers = {
            topic: peer.create_publisher(types[kind], topic, qos) for topic, kind in topics.items()
        }
        wait_until_inputs_matched(peer, list(publishers.values()), node=process)
        messages = read_bag_messages(log.replay, list(topics.items()))
        (response,) = play_and_identify(
            peer, client, publishers, messages, [1e-9 * messages[-1][1] + 1.0]
        )
    finally:
        peer.destroy_node()
    assert response.success, (response.message, process.output()[-3000:])
    # the allocator's policy is the mode's: a whole body's multi-megabyte temporaries would be
    # mapped and faulted in afresh at every update under a fixed mmap threshold
    fixed = "glibc's mmap threshold fixed at 128 kB"
    assert (fixed in process.output()) == mode.fixed_mmap_threshold, process.output()[:3000]
