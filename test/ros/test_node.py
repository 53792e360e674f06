"""The node as users run it: a separate process over real DDS, fed by this test process."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.dds import Feeder, NodeUnderTest, identify, node_args, spin_until
from inertia_id_ros.sim.payload import PayloadSimulator


@pytest.mark.parametrize(
    "overrides, parameter",
    [
        (
            {"sensor_frame": "no_such_frame"},
            "sensor_frame",
        ),  # the table: test/unit/ros/test_parameters
        ({"wrench_limits": "[100, 100, 100, 10, 10, 10]"}, "wrench_limits"),  # rclpy's type check
        ({"method": "cad_prior", "sensor_frame": "panda_hand_tcp"}, "method"),  # no prior beyond
    ],
)
def test_bad_startup_parameters_exit_nonzero_naming_the_parameter(launch, overrides, parameter):
    node = launch("inertia-id-node", "inertia_id_ros.ros.node", *node_args(**overrides))
    node.popen.wait(timeout=60)
    assert node.popen.returncode == 2
    assert f"'{parameter}'" in node.output()


@pytest.fixture
def node_under_test(launch, rclpy_context):
    """The node, this process's peer with its ``identify`` client, and a feeder whose
    publishers the node's subscriptions have matched."""
    import rclpy

    from inertia_id_ros.srv import Identify

    process = launch("inertia-id-node", "inertia_id_ros.ros.node", *node_args())
    peer = rclpy.create_node("inertia_id_test_peer")
    client = peer.create_client(Identify, "/inertia_id/identify")
    assert client.wait_for_service(timeout_sec=30.0), process.output()
    harness = NodeUnderTest(process, peer, client, Feeder(peer, PayloadSimulator.panda()))
    harness.feeder.wait_until_matched()
    yield harness
    peer.destroy_node()


def test_reset_drops_the_window(node_under_test):
    process, peer, client, feeder = (
        node_under_test.process,
        node_under_test.peer,
        node_under_test.client,
        node_under_test.feeder,
    )
    feeder.publish(4.0)
    node_under_test.settle()
    reset = identify(peer, client, reset=True)
    assert not reset.success and "reset" in reset.message
    empty = identify(peer, client)
    assert not empty.success
    assert process.alive()


def test_a_payload_change_is_detected_and_the_new_payload_identified(node_under_test):
    """The payload switches (a grasp) at a known stamp: the node publishes ~/payload_change within
    1 s of it, restarts its window and identifies the new payload from 20 s of data."""
    from inertia_id_ros.core.inertia import inertia_from_theta, theta_from_inertia
    from inertia_id_ros.msg import PayloadChange
    from inertia_id_ros.ros.conversions import wrench_to_array
    from inertia_id_ros.sim.payload import box_inertia

    process, peer, client, feeder = (
        node_under_test.process,
        node_under_test.peer,
        node_under_test.client,
        node_under_test.feeder,
    )
    changes: list = []
    peer.create_subscription(PayloadChange, "/inertia_id/payload_change", changes.append, 10)
    feeder.publish(12.0)
    node_under_test.settle()
    assert identify(peer, client).success  # the detector's reference: the whole window
    t_switch = feeder.t0 + feeder.k / feeder.rate
    grasped = theta_from_inertia(
        2.3, np.array([0.0, 0.04, 0.09]), box_inertia(2.3, [0.10, 0.15, 0.08])
    )
    feeder.sim = PayloadSimulator.panda(payload_theta=grasped)  # same motion and offset
    feeder.publish(21.0)
    assert spin_until(peer, lambda: bool(changes), 10.0), process.output()[-3000:]
    detected = changes[0].header.stamp.sec + 1e-9 * changes[0].header.stamp.nanosec
    assert 0.0 <= detected - t_switch < 1.0
    assert len(changes) == 1, [c.message for c in changes]
    node_under_test.settle()
    response = identify(peer, client)
    assert response.success, response.message
    m0, c0, i0 = inertia_from_theta(grasped)
    m, c, i = inertia_from_theta(np.array(response.estimate.theta))
    assert abs(m - m0) / m0 < 0.005
    assert np.linalg.norm(c - c0) < 0.002
    assert np.linalg.norm(i - i0) / np.linalg.norm(i0) < 0.10
    offset = wrench_to_array(response.estimate.sensor_offset)
    assert np.linalg.norm(offset[:3] - feeder.sim.true_offset[:3]) < 0.1
    assert "payload change detected" in process.output()
