"""The node in mode ``payload_torques`` over DDS, the simulator in its own process.

The simulator's ``panda_torques`` robot (the Panda without an F/T sensor, links off the URDF by
up to 10 %, friction, torque noise) publishes its joint states with efforts at 1 kHz; the node,
started from ``config/panda_payload_torques.yaml`` with an imperfect link model (``fit-links`` on
an unloaded recording with noise), identifies the payload at the flange, answers ``~/identify``
with it and publishes it on ``~/estimate`` with its markers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from helpers.dds import FAST_DIAGNOSTICS, NodeDiagnostics, identify_after_motion, spin_until
from helpers.paths import REPO
from inertia_id_ros import cli
from inertia_id_ros.core.inertia import check_consistency, inertia_from_theta
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.options import PAYLOAD_TORQUES_HALF_WIDTH
from inertia_id_ros.sim.torques import panda_payload_torque_runs

MOTION_SEC = 40.0
RATE_HZ = 1000.0
SEED = 4
TIME_SCALE = 1.0
"""The simulator plays the motion at real time, the rate the node is configured for
(``max_input_rate_hz`` 1000): turning joint torques into rows costs the node 100-360 us per
sample on the loaded 2-core machine, so that at three times real time it fell behind (its
updates took up to 2 s), its input queue overflowed and it lost up to 30 % of the joint states."""
FRAME = "panda_link8"


def unloaded_link_model(directory: Path) -> Path:
    """The fit-links result JSON of an unloaded recording with noise of the simulated Panda
    (the same truth as the simulator's for ``SEED``): an imperfect link model."""
    runs = panda_payload_torque_runs(duration=MOTION_SEC, rate=RATE_HZ, seed=SEED)
    rec = runs.unloaded
    data, result = directory / "unloaded.npz", directory / "links.json"
    np.savez(
        data,
        t=rec.t,
        joint_names=np.array(runs.links.joint_names),
        q=rec.q,
        dq=rec.dq,
        effort=rec.effort,
    )
    assert (
        cli.main(
            [
                "fit-links",
                "--urdf",
                str(example_robot_urdf("panda")),
                "--data",
                str(data),
                "--json",
                str(result),
                "--filter-half-width",
                str(PAYLOAD_TORQUES_HALF_WIDTH),
            ]
        )
        == 0
    )
    return result


def call(peer, client, request):
    """``client``'s response to ``request`` (spinning ``peer``)."""
    import rclpy

    assert client.wait_for_service(timeout_sec=10.0)
    future = client.call_async(request)
    rclpy.spin_until_future_complete(peer, future, timeout_sec=30.0)
    assert future.result() is not None
    return future.result()


def test_the_node_identifies_the_payload_from_the_simulated_panda_torques(
    launch, rclpy_context, tmp_path
):
    import rclpy
    from visualization_msgs.msg import MarkerArray

    from inertia_id_ros.msg import InertialParameters
    from inertia_id_ros.ros.qos import LATCHED
    from inertia_id_ros.srv import Identify, Tare

    links_result = unloaded_link_model(tmp_path)
    node = launch(
        "inertia-id-node",
        "inertia_id_ros.ros.node",
        "--params-file",
        str(REPO / "config" / "panda_payload_torques.yaml"),
        "-p",
        f"urdf_path:={example_robot_urdf('panda')}",
        "-p",
        f"torques_links_result:={links_result}",
        "-p",
        f"window_sec:={MOTION_SEC + 5.0}",
        "-p",
        "update_rate_hz:=1.0",
        *FAST_DIAGNOSTICS,
    )
    peer = rclpy.create_node("inertia_id_payload_torques_client")
    received: dict[str, list] = {"truth": [], "estimates": [], "markers": []}
    peer.create_subscription(
        InertialParameters, "/inertia_id_sim/ground_truth", received["truth"].append, LATCHED
    )
    peer.create_subscription(
        InertialParameters, "/inertia_id/estimate", received["estimates"].append, LATCHED
    )
    peer.create_subscription(
        MarkerArray, "/inertia_id/markers", received["markers"].append, LATCHED
    )
    client = peer.create_client(Identify, "/inertia_id/identify")
    diagnostics = NodeDiagnostics(peer)
    try:
        assert spin_until(peer, lambda: diagnostics.diagnostics_received > 0, 60.0), node.output()[
            -3000:
        ]
        assert diagnostics.diagnostics["mode"] == "payload_torques"
        assert "the links were fitted" not in node.output()  # the links fitted at the payload's
        sim = launch(
            "inertia-id-sim",
            "inertia_id_ros.ros.sim_node",
            "-p",
            "robot:=panda_torques",
            "-p",
            f"seed:={SEED}",
            "-p",
            f"rate_hz:={RATE_HZ}",
            "-p",
            f"duration_sec:={MOTION_SEC}",
            "-p",
            f"time_scale:={TIME_SCALE}",
        )
        response = identify_after_motion(peer, client, sim, node, MOTION_SEC / TIME_SCALE + 60.0)
        played = int(round(MOTION_SEC * RATE_HZ))
        estimate = response.estimate
        assert received["truth"], "no ground truth from the simulator"
        assert received["truth"][-1].header.frame_id == FRAME == estimate.header.frame_id
        # the node keeps every joint state it receives: it drops only the first filter
        # half-width (no joint state before them) and the last waits for joint states after it
        taken = diagnostics.counter("received.joint_state")
        ends = round(PAYLOAD_TORQUES_HALF_WIDTH * RATE_HZ)
        dropped = {k: n for k, n in diagnostics.counters("dropped.").items() if n}
        assert dropped == {"no_joint_state": ends}, (dropped, node.output()[-3000:])
        assert estimate.num_samples >= taken - 2 * ends, (estimate.num_samples, taken)
        # best-effort DDS on one machine, the simulator starting once its publisher has matched
        # the node's subscription: measured, every joint state arrives (two busy loops beside)
        assert taken > 0.98 * played, (taken, played)
        truth, theta = np.array(received["truth"][-1].theta), np.array(estimate.theta)
        assert check_consistency(theta).fully_consistent
        covariance = np.array(estimate.covariance).reshape(10, 10)
        m0, c0, i0 = inertia_from_theta(truth)
        m, c, i = inertia_from_theta(theta)
        print(
            f"\npayload_torques node over DDS: mass {100 * (m - m0) / m0:+.3f} %, COM "
            f"{1e3 * np.linalg.norm(c - c0):.2f} mm, inertia "
            f"{100 * np.linalg.norm(i - i0) / np.linalg.norm(i0):.1f} %, mass standard error "
            f"{np.sqrt(covariance[0, 0]):.4f} kg, {estimate.num_samples} joint states in its "
            f"window of {taken} received, {played} played"
        )
        assert abs(m - m0) / m0 < 0.01
        assert np.linalg.norm(c - c0) < 0.005
        assert np.linalg.norm(i - i0) / np.linalg.norm(i0) < 0.15
        assert abs(m - m0) < 5 * np.sqrt(covariance[0, 0]) + 1e-3
        assert spin_until(peer, lambda: received["estimates"] and received["markers"], 10.0)
        assert received["estimates"][-1].body_name == "payload"
        # ~/tare with the payload attached and known: the joints' torque offsets, in words
        tare = call(
            peer,
            peer.create_client(Tare, "/inertia_id/tare"),
            Tare.Request(duration=1.0, known_payload=True, payload=received["truth"][-1]),
        )
        assert tare.success and tare.num_samples > 0.9 * RATE_HZ, tare.message
        assert "joint torque offsets panda_joint1 " in tare.message and "N m" in tare.message
    finally:
        peer.destroy_node()
