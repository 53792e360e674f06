"""Simulator -> node -> service call: three processes over real DDS, estimate vs. ground truth."""

from __future__ import annotations

import numpy as np

from conftest import spin_until
from inertia_id_ros.inertia import check_consistency, inertia_from_theta
from inertia_id_ros.robots import example_robot_urdf


def test_simulator_node_and_identify_service_recover_the_payload(launch, rclpy_context):
    import rclpy
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    from inertia_id_ros.msg import InertialParameters
    from inertia_id_ros.ros.conversions import wrench_to_array
    from inertia_id_ros.srv import Identify

    motion = 15.0
    sim = launch("inertia-id-sim", "inertia_id_ros.ros.sim_node",
                 "-p", f"duration_sec:={motion}", "-p", "seed:=3")
    node = launch("inertia-id-node", "inertia_id_ros.ros.node",
                  "-p", f"urdf_path:={example_robot_urdf('panda')}",
                  "-p", "sensor_frame:=panda_link8", "-p", "window_sec:=30.0")
    peer = rclpy.create_node("inertia_id_integration_client")
    latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                         reliability=ReliabilityPolicy.RELIABLE)
    received: dict[str, list] = {"truth": [], "estimates": []}
    peer.create_subscription(InertialParameters, "/inertia_id_sim/ground_truth",
                             received["truth"].append, latched)
    peer.create_subscription(InertialParameters, "/inertia_id/estimate",
                             received["estimates"].append, latched)
    client = peer.create_client(Identify, "/inertia_id/identify")
    try:
        assert spin_until(peer, lambda: not sim.alive(), motion + 40.0), sim.output()
        assert sim.popen.returncode == 0, sim.output()
        assert client.wait_for_service(timeout_sec=10.0)
        future = client.call_async(Identify.Request())
        rclpy.spin_until_future_complete(peer, future, timeout_sec=60.0)
        response = future.result()
        assert response is not None and response.success, node.output()[-3000:]
        assert received["truth"], "no ground truth from the simulator"
        assert received["estimates"], "the node published no estimate"
        for msg in received["estimates"]:
            assert check_consistency(np.array(msg.theta)).fully_consistent
        truth = np.array(received["truth"][-1].theta)
        estimate = np.array(response.estimate.theta)
        m0, c0, i0 = inertia_from_theta(truth)
        m, c, i = inertia_from_theta(estimate)
        assert abs(m - m0) / m0 < 0.01
        assert np.linalg.norm(c - c0) < 0.004
        assert np.linalg.norm(i - i0) / np.linalg.norm(i0) < 0.2
        offset_error = (wrench_to_array(response.estimate.sensor_offset)
                        - wrench_to_array(received["truth"][-1].sensor_offset))
        assert np.linalg.norm(offset_error[:3]) < 0.2
        assert response.estimate.header.frame_id == "panda_link8"
        assert response.estimate.num_samples > 0.9 * motion * 1000
    finally:
        peer.destroy_node()
