"""Simulator -> node -> service call: three processes over real DDS, estimate vs. ground truth."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.dds import FAST_DIAGNOSTICS, NodeDiagnostics, identify_after_motion, received_links
from helpers.paths import REPO
from inertia_id_ros.core.inertia import check_consistency, inertia_from_theta
from inertia_id_ros.core.robots import example_robot_urdf


def test_simulator_node_and_identify_service_recover_the_payload(launch, rclpy_context):
    import rclpy
    from visualization_msgs.msg import Marker, MarkerArray

    from inertia_id_ros.msg import InertialParameters
    from inertia_id_ros.ros.conversions import wrench_to_array
    from inertia_id_ros.ros.qos import LATCHED
    from inertia_id_ros.srv import Identify

    motion = 15.0
    sim = launch(
        "inertia-id-sim",
        "inertia_id_ros.ros.sim_node",
        "-p",
        f"duration_sec:={motion}",
        "-p",
        "seed:=3",
        "-p",
        "time_scale:=2.0",
    )  # the 15 s motion in 7.5 s
    node = launch(
        "inertia-id-node",
        "inertia_id_ros.ros.node",
        "-p",
        f"urdf_path:={example_robot_urdf('panda')}",
        "-p",
        "sensor_frame:=panda_link8",
        "-p",
        "window_sec:=30.0",
        *FAST_DIAGNOSTICS,
    )
    peer = rclpy.create_node("inertia_id_integration_client")
    received: dict[str, list] = {"truth": [], "estimates": [], "markers": []}
    peer.create_subscription(
        InertialParameters, "/inertia_id_sim/ground_truth", received["truth"].append, LATCHED
    )
    peer.create_subscription(
        MarkerArray, "/inertia_id/markers", received["markers"].append, LATCHED
    )
    diagnostics = NodeDiagnostics(peer).history  # every status (the peer keeps the subscription)
    peer.create_subscription(
        InertialParameters, "/inertia_id/estimate", received["estimates"].append, LATCHED
    )
    client = peer.create_client(Identify, "/inertia_id/identify")
    try:
        response = identify_after_motion(peer, client, sim, node, motion + 40.0)
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
        offset_error = wrench_to_array(response.estimate.sensor_offset) - wrench_to_array(
            received["truth"][-1].sensor_offset
        )
        assert np.linalg.norm(offset_error[:3]) < 0.2
        assert response.estimate.header.frame_id == "panda_link8"
        markers = received["markers"][-1].markers
        assert {m.type for m in markers} == {Marker.SPHERE, Marker.TEXT_VIEW_FACING}
        assert all(m.header.frame_id == "panda_link8" for m in markers)
        moving = [d for d in diagnostics if "excitation" in d and "rate_hz.wrench" in d]
        assert moving, diagnostics[-3:]
        assert max(float(d["rate_hz.wrench"]) for d in moving) > 500.0
        assert float(moving[-1]["condition_number"]) > 1.0
        assert "relative_std.Ixx" in moving[-1]
        assert response.estimate.num_samples > 0.9 * motion * 1000
    finally:
        peer.destroy_node()


def test_simulated_leg_and_links_mode_recover_the_friction_and_armature(launch, rclpy_context):
    """Acceptance (issue 4, item 6) over DDS: Go1 leg simulator (60 s at 500 Hz played at three
    times real time, 0.1 N m torque noise, links perturbed from the URDF) -> node in links mode
    (config/go1_leg_links.yaml with the chain config's gear ratios and motor type) -> identify:
    every link consistent; viscous and Coulomb friction and the armature of every joint within
    10 %. The knee's armature (the one the torques separate from the link inertias) is estimated;
    the hip abduction's and hip flexion's are N² x the rotor inertia it gives, and the published
    drives say so (armature_source)."""
    import rclpy

    from inertia_id_ros.ros.conversions import msg_to_drive, msg_to_thetas
    from inertia_id_ros.ros.qos import LATCHED
    from inertia_id_ros.srv import Identify

    motion, rate = 60.0, 500.0
    sim = launch(
        "inertia-id-sim",
        "inertia_id_ros.ros.sim_node",
        "-p",
        "robot:=go1_leg",
        "-p",
        f"duration_sec:={motion}",
        "-p",
        f"rate_hz:={rate}",
        "-p",
        "seed:=3",
        "-p",
        "time_scale:=3.0",
    )  # the 60 s motion in 20 s
    node = launch(
        "inertia-id-node",
        "inertia_id_ros.ros.node",
        "--params-file",
        str(REPO / "config" / "go1_leg_links.yaml"),
        "-p",
        f"chain_config:={REPO / 'config' / 'go1_front_left_leg.yaml'}",
        *FAST_DIAGNOSTICS,
    )
    peer = rclpy.create_node("inertia_id_links_client")
    received = received_links(peer, LATCHED)
    timing = NodeDiagnostics(peer).history  # every status (the peer keeps the subscription)
    client = peer.create_client(Identify, "/inertia_id/identify")
    try:
        response = identify_after_motion(peer, client, sim, node, motion + 30.0)
        assert received["truth"], "no ground truth from the simulator"
        assert received["links"], "the node published no links"
        for msg in received["links"] + [response.links]:
            for theta in msg_to_thetas(msg).values():
                assert check_consistency(theta).fully_consistent
        links = response.links
        assert [b.header.frame_id for b in links.bodies] == ["FL_hip", "FL_thigh", "FL_calf"]
        assert links.bodies[0].num_samples > 0.95 * motion * rate
        truth = {j.name: msg_to_drive(j) for j in received["truth"][-1].joints}
        estimate = {j.name: msg_to_drive(j) for j in links.joints}
        assert list(estimate) == ["FL_hip_joint", "FL_thigh_joint", "FL_calf_joint"]
        errors = {
            (joint, term): getattr(estimate[joint], term) / getattr(truth[joint], term) - 1
            for joint in truth
            for term in ("viscous", "coulomb", "armature")
        }
        print(
            f"\n{response.message}\n{'joint':16s} {'viscous (truth)':19s} "
            f"{'coulomb (truth)':19s} {'armature (truth)':19s} armature from"
        )
        for j in links.joints:
            print(
                f"{j.name:16s} "
                + "".join(
                    f"{getattr(estimate[j.name], t):.4f} ({getattr(truth[j.name], t):.4f})".ljust(
                        20
                    )
                    for t in ("viscous", "coulomb", "armature")
                )
                + j.armature_source
            )
        print("relative errors:", {f"{j}.{t}": f"{v:+.4f}" for (j, t), v in errors.items()})
        costs = {
            k: np.median([float(d[k]) for d in timing if k in d])
            for k in ("process_us_per_sample", "solve_ms", "update_ms")
        }
        print(
            f"medians over {len(timing)} diagnostics: per sample "
            f"{costs['process_us_per_sample']:.0f} us, consistent solve "
            f"{costs['solve_ms']:.1f} ms, whole update {costs['update_ms']:.1f} ms"
        )
        assert max(abs(e) for e in errors.values()) < 0.10, errors
        assert all(j.coulomb_velocity == 0.05 for j in links.joints)
        # the hip's and thigh's armatures add to their links' inertias about the axes: the rotor
        # inertia from the knee's fixes them, nothing about the armatures is left to the prior
        for msg in received["links"][-5:] + [response.links]:  # once the window holds 5 s
            assert msg.bodies[0].num_samples > 5.0 * rate
            assert [j.armature_source for j in msg.joints] == ["rotor", "rotor", "estimated"]
        gear_ratios = {"FL_hip_joint": 6.33, "FL_thigh_joint": 6.33, "FL_calf_joint": 9.495}
        rotor = {j: estimate[j].armature / n**2 for j, n in gear_ratios.items()}
        assert rotor["FL_hip_joint"] == pytest.approx(rotor["FL_thigh_joint"], rel=1e-9)
        assert rotor["FL_hip_joint"] == pytest.approx(rotor["FL_calf_joint"], rel=0.01)
        assert ".armature" not in response.message, response.message
    finally:
        peer.destroy_node()
