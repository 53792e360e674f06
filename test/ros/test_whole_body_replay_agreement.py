"""Replay and node run the same whole-body session: on the same bag (the simulated Go1, the
simulator node's topics) they give the same estimates.

As for the payload (``test_replay_agreement.py``): the node (a process, over DDS, started from
``config/go1_whole_body.yaml``) gets the bag's messages with their own stamps, chunk by chunk up
to each of replay's update times, and ``identify`` there gives its estimate (its periodic updates
are effectively off: 0.001 Hz); ``inertia-id replay --params-file`` replays the same bag in bag
time through the session built from the same parameters.
"""

from __future__ import annotations

import numpy as np

from helpers.dds import agreeing_updates, play_and_identify, wait_until_inputs_matched
from helpers.paths import REPO
from inertia_id_ros import modes
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.formats.data import IMU_TYPE, JOINT_STATE_TYPE, WRENCH_TYPE, read_bag_messages
from inertia_id_ros.modes.parameters import (
    build_session,
    parameters_from_file,
    settings_from_parameters,
)
from inertia_id_ros.sim import whole_body_robots as wb
from inertia_id_ros.sim.recorders import record_whole_body

CONFIG = REPO / "config" / "go1_whole_body.yaml"
DURATION, RATE_HZ = 4.0, 200.0
OVERRIDES = {"sample_rate_hz": 100.0, "update_rate_hz": 2.0}


def test_node_and_replay_agree_on_a_whole_body_bag(launch, rclpy_context, tmp_path):
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    from rclpy.qos import QoSProfile
    from sensor_msgs.msg import Imu, JointState

    from inertia_id_ros.ros.conversions import msg_to_thetas
    from inertia_id_ros.srv import Identify

    bag = tmp_path / "go1"
    ft_topics = record_whole_body(bag, wb.go1(seed=3), DURATION, RATE_HZ, seed=3)
    urdf = str(example_robot_urdf("go1"))
    values = {**parameters_from_file(CONFIG), **OVERRIDES, "urdf_path": urdf}
    settings = settings_from_parameters(values)
    replay = modes.get("whole_body").replay(bag, build_session(settings), settings)
    assert sum(u.ok for u in replay.updates) >= 3

    process = launch(
        "inertia-id-node",
        "inertia_id_ros.ros.node",
        "--params-file",
        str(CONFIG),
        "-p",
        f"urdf_path:={urdf}",
        "-p",
        "update_rate_hz:=0.001",
        "-p",
        f"sample_rate_hz:={OVERRIDES['sample_rate_hz']}",
        "-p",
        "diagnostics_period_sec:=0.05",
    )  # counters current before identify
    peer = rclpy.create_node("inertia_id_whole_body_replay_peer")
    try:
        client = peer.create_client(Identify, "/inertia_id/identify")
        assert client.wait_for_service(timeout_sec=30.0), process.output()
        qos = QoSProfile(depth=2000)
        publishers = {
            "/joint_states": peer.create_publisher(JointState, "/joint_states", qos),
            "/imu": peer.create_publisher(Imu, "/imu", qos),
            **{topic: peer.create_publisher(WrenchStamped, topic, qos) for topic in ft_topics},
        }
        wait_until_inputs_matched(peer, list(publishers.values()))

        messages = read_bag_messages(
            bag,
            [
                ("/joint_states", JOINT_STATE_TYPE),
                ("/imu", IMU_TYPE),
                *((topic, WRENCH_TYPE) for topic in ft_topics),
            ],
        )
        node_updates = play_and_identify(
            peer, client, publishers, messages, [update.time for update in replay.updates]
        )
    finally:
        peer.destroy_node()

    compared = agreeing_updates(node_updates, replay.updates)
    for node_update, estimate in compared:
        assert node_update.links.bodies[0].num_samples == estimate.n_samples
        thetas = msg_to_thetas(node_update.links)
        node_thetas = np.array([thetas[name] for name in estimate.link_names])
        assert np.allclose(node_thetas, estimate.thetas, rtol=1e-5, atol=1e-8), np.abs(
            node_thetas - estimate.thetas
        ).max()
    assert len(compared) >= 3
