"""Replay and node run the same session: on the same bag they give the same estimates and the
same payload-change events.

The node (a process, over DDS) gets the bag's messages with their own stamps, chunk by chunk up
to each of replay's update times; ``identify`` there gives the node's estimate at that point
(its own periodic updates are effectively off: 0.001 Hz). ``inertia-id replay``'s library
function replays the same bag in bag time. ``identify`` and a periodic update run the same
session step (process, change detection, solve, detector reference), so the two sequences must
agree to solver tolerance, and the change be detected at the same sample.
"""

from __future__ import annotations

import numpy as np
import pytest

from helpers.dds import (
    SENSOR,
    agreeing_updates,
    node_args,
    play_and_identify,
    spin_until,
    wait_until_inputs_matched,
)
from inertia_id_ros.formats.data import JOINT_STATE_TYPE, WRENCH_TYPE, read_bag_messages
from inertia_id_ros.modes.payload_replay import replay_bag
from inertia_id_ros.sim.payload import grasped_payload_theta
from inertia_id_ros.sim.recorders import record_simulation

RATE_HZ = 200.0
DURATION = 22.0
GRASP_AT = 13.0
UPDATE_RATE_HZ = 2.0
WINDOW_SEC = 10.0
DIAGNOSTICS_PERIOD_SEC = 0.05
"""The node's ``diagnostics_period_sec`` (s): before each ``identify`` the test waits for the
counters of a diagnostics message to count every message sent."""


def test_node_and_replay_agree_on_a_bag_with_a_grasp(launch, rclpy_context, tmp_path):
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    from rclpy.qos import QoSProfile
    from sensor_msgs.msg import JointState

    from inertia_id_ros.msg import PayloadChange
    from inertia_id_ros.srv import Identify

    bag = tmp_path / "grasp"
    record_simulation(
        bag, DURATION, RATE_HZ, payload_change_at=GRASP_AT, changed_payload=grasped_payload_theta()
    )
    replay = replay_bag(
        bag, SENSOR, update_rate_hz=UPDATE_RATE_HZ, settings={"window_sec": WINDOW_SEC}
    )
    assert len(replay.payload_changes) == 1

    process = launch(
        "inertia-id-node",
        "inertia_id_ros.ros.node",
        *node_args(
            window_sec=WINDOW_SEC,
            update_rate_hz=0.001,
            diagnostics_period_sec=DIAGNOSTICS_PERIOD_SEC,
        ),
    )
    peer = rclpy.create_node("inertia_id_replay_peer")
    try:
        client = peer.create_client(Identify, "/inertia_id/identify")
        assert client.wait_for_service(timeout_sec=30.0), process.output()
        qos = QoSProfile(depth=2000)
        joints = peer.create_publisher(JointState, "/joint_states", qos)
        wrenches = peer.create_publisher(WrenchStamped, "/ft_sensor/wrench", qos)
        changes: list = []
        peer.create_subscription(PayloadChange, "/inertia_id/payload_change", changes.append, 10)
        wait_until_inputs_matched(peer, [joints, wrenches])

        messages = read_bag_messages(
            bag, [("/joint_states", JOINT_STATE_TYPE), ("/ft_sensor/wrench", WRENCH_TYPE)]
        )
        node_updates = play_and_identify(
            peer,
            client,
            {"/joint_states": joints, "/ft_sensor/wrench": wrenches},
            messages,
            [update.time for update in replay.updates],
        )
        assert spin_until(peer, lambda: bool(changes), 5.0), process.output()[-3000:]
    finally:
        peer.destroy_node()

    compared = agreeing_updates(node_updates, replay.updates)
    for node_update, estimate in compared:
        assert node_update.estimate.num_samples == estimate.n_samples
        theta = np.array(node_update.estimate.theta)
        assert np.allclose(theta, estimate.theta, rtol=1e-6, atol=1e-8), (theta, estimate.theta)
    assert len(compared) >= 10
    assert len(changes) == 1
    detected = changes[0].header.stamp.sec + 1e-9 * changes[0].header.stamp.nanosec
    assert detected == pytest.approx(replay.payload_changes[0].t_detected, abs=1e-6)
    assert changes[0].onset_time == pytest.approx(replay.payload_changes[0].t_onset, abs=1e-6)
