"""Whole-body mode over DDS: the iCub simulator (joint states, IMU, seven F/T sensors) -> the node
(config/icub_whole_body.yaml; by default the noise groups weighted) -> every published estimate
consistent, identify answers, a leg sensor's calibration refitted online is published; a sensor
whose topic nobody publishes is reported and its rows dropped; iCub on a stand without an IMU
(config/icub_fixed.yaml) predicts held-out forces better than the URDF, and so does iCub rooted
at its stance sole (config/icub_stance.yaml); bad parameters exit 2 naming the item."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.dds import (
    FAST_DIAGNOSTICS,
    NodeDiagnostics,
    count_inconsistent,
    identify_after_motion,
    received_links,
    spin_until,
)
from helpers.paths import REPO
from inertia_id_ros.core.inertia import check_consistency
from inertia_id_ros.core.robots import example_robot_urdf

ICUB_CONFIG = str(REPO / "config" / "icub_whole_body.yaml")
TIME_SCALE = 3.0
"""The simulator plays the iCub's motions this many times faster than real time (the stamps
still 1 / rate apart)."""


def test_icub_whole_body_over_dds_publishes_only_consistent_links(launch, rclpy_context):
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    from inertia_id_ros.msg import FTCalibration
    from inertia_id_ros.ros.conversions import msg_to_thetas, stamp_to_seconds
    from inertia_id_ros.srv import Identify

    motion, rate = 30.0, 200.0
    sim = launch(
        "inertia-id-sim",
        "inertia_id_ros.ros.sim_node",
        "-p",
        "robot:=icub_whole_body",
        "-p",
        f"duration_sec:={motion}",
        "-p",
        f"rate_hz:={rate}",
        "-p",
        "seed:=2",
        "-p",
        f"time_scale:={TIME_SCALE}",
    )
    # the right foot's sensor on a topic nobody publishes: reported, its rows dropped
    topics = ", ".join(
        f"/{frame}/wrench" if frame != "r_foot_ft_sensor" else "/nobody/wrench"
        for frame in (
            "l_arm_ft_sensor",
            "r_arm_ft_sensor",
            "l_leg_ft_sensor",
            "r_leg_ft_sensor",
            "l_foot_ft_sensor",
            "r_foot_ft_sensor",
            "l_sole",
        )
    )
    node = launch(
        "inertia-id-node",
        "inertia_id_ros.ros.node",
        "--params-file",
        ICUB_CONFIG,
        "-p",
        f"urdf_path:={example_robot_urdf('icub')}",
        "-p",
        "update_rate_hz:=1.0",
        "-p",
        f"ft_topics:=[{topics}]",
        "-p",
        "weighting:=channel",
        "-p",
        "ft_calibration_online:=[l_leg_ft_sensor]",
        *FAST_DIAGNOSTICS,
    )
    peer = rclpy.create_node("inertia_id_whole_body_client")
    every = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
    received = received_links(peer, every)
    calibrations: list[FTCalibration] = []
    peer.create_subscription(
        FTCalibration, "/inertia_id/ft_calibration", calibrations.append, every
    )
    diagnostics = NodeDiagnostics(peer).history  # every status (the peer keeps the subscription)
    client = peer.create_client(Identify, "/inertia_id/identify")
    try:
        response = identify_after_motion(
            peer, client, sim, node, motion / TIME_SCALE + 60.0, 120.0, succeeded=False
        )
        applied = [stamp_to_seconds(r.header.stamp) for r in calibrations if r.applied]
        if not response.success:
            # a refit applied near the motion's end (the node lagging behind a busy machine)
            # restarts the window with too few samples left: the last estimate is attached
            assert response.message.startswith("too_few_samples"), response.message
            assert response.message.endswith("the last estimate is attached")
            attached = stamp_to_seconds(response.links.bodies[0].header.stamp)
            assert applied and attached <= max(applied), (attached, applied)
        assert received["truth"] and len(received["links"]) >= 5, node.output()[-3000:]
        assert count_inconsistent(received["links"] + [response.links]) == 0
        links = response.links
        truth = msg_to_thetas(received["truth"][-1])
        assert set(msg_to_thetas(links)) == set(truth) and len(truth) == 39
        assert len(links.identifiability) == 39
        assert set(links.identifiability) <= {"identified", "partly identified", "prior only"}
        assert set(links.sensor_frames) == {
            "l_arm_ft_sensor",
            "r_arm_ft_sensor",
            "l_leg_ft_sensor",
            "r_leg_ft_sensor",
            "l_foot_ft_sensor",
            "r_foot_ft_sensor",
        }
        assert "F/T sensor(s) ['r_foot_ft_sensor'] stopped" in node.output()
        assert not response.success or (
            "stopped sensors (rows dropped): ['r_foot_ft_sensor']" in response.message
        )
        assert diagnostics and diagnostics[-1]["stopped_sensors"] == "r_foot_ft_sensor"
        assert diagnostics[-1]["weighting"] == "channel"  # asked for: noise groups weighted
        assert float(diagnostics[-1]["noise_sigma.l_arm_ft_sensor.force"]) > 0.1  # 0.2 N
        masses = {name: theta[0] for name, theta in msg_to_thetas(links).items()}
        assert 0.7 * sum(t[0] for t in truth.values()) < sum(masses.values())
        # the leg sensor refitted every 5 s of samples from 10 s on, each refit published
        assert len(calibrations) >= 2, node.output()[-3000:]
        for refit in calibrations:
            assert refit.header.frame_id == "l_leg_ft_sensor" and refit.num_samples > 0
            assert np.isfinite(refit.matrix).all() and (np.array(refit.matrix_std) >= 0).all()
            assert (np.array(refit.held_out_rms) > 0).all()
        assert int(diagnostics[-1]["ft_calibration.applied"]) <= len(applied)
        # an applied refit restarts the window: the samples from then on (sample_rate_hz 50)
        newest = stamp_to_seconds(links.bodies[0].header.stamp)
        before = [a for a in applied if a <= newest]
        span = newest - max(before) if before else motion
        assert links.bodies[0].num_samples > 0.8 * span * 50.0, (span, applied)
    finally:
        peer.destroy_node()


def test_go1_whole_body_over_dds_from_its_foot_contacts(launch, rclpy_context):
    """The quadruped config: four foot contact sensors, no internal ones, no joint torques;
    unweighted (the default)."""
    import rclpy

    from inertia_id_ros.ros.conversions import msg_to_thetas
    from inertia_id_ros.srv import Identify

    sim = launch(
        "inertia-id-sim",
        "inertia_id_ros.ros.sim_node",
        "-p",
        "robot:=go1_whole_body",
        "-p",
        "duration_sec:=15.0",
        "-p",
        "rate_hz:=200.0",
        "-p",
        f"time_scale:={TIME_SCALE}",
    )
    node = launch(
        "inertia-id-node",
        "inertia_id_ros.ros.node",
        "--params-file",
        str(REPO / "config" / "go1_whole_body.yaml"),
        "-p",
        f"urdf_path:={example_robot_urdf('go1')}",
    )
    peer = rclpy.create_node("inertia_id_go1_whole_body_client")
    client = peer.create_client(Identify, "/inertia_id/identify")
    try:
        assert spin_until(peer, lambda: not sim.alive(), 60.0), sim.output()
        assert client.wait_for_service(timeout_sec=10.0)
        future = client.call_async(Identify.Request())
        rclpy.spin_until_future_complete(peer, future, timeout_sec=120.0)
        response = future.result()
        assert response is not None and response.success, node.output()[-3000:]
        thetas = msg_to_thetas(response.links)
        assert len(thetas) == 39 and list(response.links.sensor_frames) == []
        assert all(check_consistency(theta).fully_consistent for theta in thetas.values())
        assert "prior only" in response.links.identifiability  # the base rows alone
    finally:
        peer.destroy_node()


def test_icub_on_a_stand_over_dds_without_an_imu_predicts_better_than_the_urdf(
    launch, rclpy_context
):
    """config/icub_fixed.yaml: base ``fixed``, no IMU (the samples are the F/T stamps), the six
    internal sensors. Every published estimate is consistent; on the motion's next 9 s (offline,
    the same simulated robot, fresh noise) the published links and offsets predict every
    sensor's force better than the URDF's links with the true offsets."""
    from inertia_id_ros.core.base_motion import BaseMotion
    from inertia_id_ros.core.whole_body_model import FTSensor, WholeBodyModel, WholeBodySamples
    from inertia_id_ros.sim import whole_body_robots as wb

    motion, rate, seed = 21.0, 200.0, 3
    node, response, published = _icub_scenario(
        launch, "icub_fixed_whole_body", "icub_fixed.yaml", motion, rate, seed, 60.0, 120.0
    )
    assert "a fixed base from 32 joints, no IMU" in node.output()
    assert len(published) >= 5, node.output()[-3000:]
    assert count_inconsistent(published + [response.links]) == 0
    links = response.links
    assert links.bodies[0].num_samples > 0.8 * motion * 50.0  # sample_rate_hz 50
    assert "prior only" in links.identifiability  # root, torso, head: beyond no sensor

    truth = wb.icub_fixed(seed=seed)
    held_out = truth.simulate(motion + np.arange(int(9.0 * 50.0)) / 50.0)
    data = truth.measure(held_out, False, False, np.random.default_rng(seed + 100))
    model = WholeBodyModel.from_urdf(
        example_robot_urdf("icub"), "fixed", [FTSensor(f, k) for f, k in truth.ft_sensors]
    )
    samples = WholeBodySamples(
        held_out.q,
        held_out.dq,
        held_out.ddq,
        BaseMotion.at_rest(held_out.t.size),
        data["ft_wrench"],
    )
    _assert_forces_predicted_better_than_the_urdf(
        model, samples, links, data, wb.ICUB_INTERNAL_SENSORS
    )


def test_icub_rooted_at_its_sole_over_dds_predicts_better_than_the_urdf(
    launch, rclpy_context, tmp_path
):
    """config/icub_stance.yaml: iCub balancing on its left sole on a tilted floor, the node's
    base ``fixed`` at ``l_sole`` (``fixed_frame``; the pelvis moves with the stance leg), the
    floor's tilt from the head IMU (``imu_tilt: correct``), the four leg sensors. Every published
    link is consistent; on the motion's next 9 s (offline, rooted at the sole with the floor's
    tilt, fresh noise) the published links and offsets predict every sensor's force better than
    the URDF's links with the true offsets."""
    from inertia_id_ros.formats.whole_body_log import read_whole_body_file, whole_body_inputs
    from inertia_id_ros.sim import whole_body_robots as wb

    motion, rate, seed = 15.0, 200.0, 4
    node, response, published = _icub_scenario(
        launch, "icub_stance_whole_body", "icub_stance.yaml", motion, rate, seed, 50.0, 60.0
    )
    assert len(published) >= 3, node.output()[-3000:]
    assert count_inconsistent(published + [response.links]) == 0
    links = response.links
    assert links.bodies[0].num_samples > 0.8 * motion * 50.0  # sample_rate_hz 50

    truth = wb.icub_stance(seed=seed)
    held_out = truth.simulate(motion + np.arange(int(9.0 * rate)) / rate)
    data = truth.measure(held_out, False, False, np.random.default_rng(seed + 100))
    np.savez(tmp_path / "held_out.npz", **data)
    model, samples = whole_body_inputs(
        read_whole_body_file(tmp_path / "held_out.npz"),
        example_robot_urdf("icub"),
        "fixed",
        fixed_frame=wb.ICUB_STANCE_FRAME,
        fixed_tilt=wb.ICUB_STANCE_TILT,
    )
    _assert_forces_predicted_better_than_the_urdf(model, samples, links, data, wb.ICUB_LEG_SENSORS)


@pytest.mark.rate_insensitive
def test_bad_whole_body_parameters_exit_2_naming_the_item(launch):
    """The node process exits 2 with the message, for a rule on the parameters and for a frame
    not in the URDF (every rule: ``test/unit/modes/test_whole_body_parameters.py``)."""
    urdf = f"urdf_path:={example_robot_urdf('icub')}"
    cases = [
        (
            "ft_types:=[internal, internal, internal, internal, internal, internal, wrist]",
            "sensor 'l_sole' has type 'wrist'",
        ),
        ("imu_frame:=no_imu_here", "parameter 'imu_frame': frame 'no_imu_here'"),
    ]
    nodes = [
        (
            launch(
                "inertia-id-node",
                "inertia_id_ros.ros.node",
                "--params-file",
                ICUB_CONFIG,
                "-p",
                urdf,
                "-p",
                override,
            ),
            expected,
        )
        for override, expected in cases
    ]
    for node, expected in nodes:  # they start beside the suite: allow a slow start
        assert node.exit_code(120.0) == 2, node.output()[-3000:]
        assert expected in node.output(), node.output()
    assert np.all([not node.alive() for node, _ in nodes])


def _icub_scenario(
    launch,
    robot: str,
    config: str,
    motion: float,
    rate: float,
    seed: int,
    slack: float,
    call_timeout: float,
) -> tuple:
    """The simulator's ``robot`` playing ``motion`` s at ``rate`` Hz (``seed``; at
    :data:`TIME_SCALE` times real time) to the node with
    ``config/<config>`` and the iCub URDF; ``identify`` once the node has taken it all (within
    ``motion / TIME_SCALE + slack`` s): ``(node process, identify response, every ~/links
    message)``."""
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    from inertia_id_ros.msg import InertialParametersArray
    from inertia_id_ros.srv import Identify

    sim = launch(
        "inertia-id-sim",
        "inertia_id_ros.ros.sim_node",
        "-p",
        f"robot:={robot}",
        "-p",
        f"duration_sec:={motion}",
        "-p",
        f"rate_hz:={rate}",
        "-p",
        f"seed:={seed}",
        "-p",
        f"time_scale:={TIME_SCALE}",
    )
    node = launch(
        "inertia-id-node",
        "inertia_id_ros.ros.node",
        "--params-file",
        str(REPO / "config" / config),
        "-p",
        f"urdf_path:={example_robot_urdf('icub')}",
        *FAST_DIAGNOSTICS,
    )
    peer = rclpy.create_node("inertia_id_icub_client")
    published: list = []
    peer.create_subscription(
        InertialParametersArray,
        "/inertia_id/links",
        published.append,
        QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE),
    )
    client = peer.create_client(Identify, "/inertia_id/identify")
    try:
        response = identify_after_motion(
            peer, client, sim, node, motion / TIME_SCALE + slack, call_timeout=call_timeout
        )
    finally:
        peer.destroy_node()
    return node, response, published


def _assert_forces_predicted_better_than_the_urdf(
    model, samples, links, data, sensors: tuple[str, ...]
) -> None:
    """On ``samples`` (held out), the node's ``links`` and sensor offsets predict the force of
    each of ``sensors`` better than the URDF's links with the true offsets (``data``'s)."""
    from inertia_id_ros.chain.whole_body_fit import prediction_errors
    from inertia_id_ros.ros.conversions import msg_to_thetas, wrench_to_array

    estimate = msg_to_thetas(links)
    offsets = dict(zip(links.sensor_frames, map(wrench_to_array, links.sensor_offsets)))
    true_offsets = dict(zip(data["ft_frames"], data["true_ft_offset"]))
    x_node = np.concatenate(
        [estimate[b] for b in model.bodies] + [offsets[s] for s in model.offset_sensors]
    )
    x_urdf = np.concatenate(
        [model.prior[: 10 * model.n_bodies]] + [true_offsets[s] for s in model.offset_sensors]
    )
    node_rms = prediction_errors(model, x_node, samples).force
    urdf_rms = prediction_errors(model, x_urdf, samples).force
    assert set(node_rms) == set(sensors)
    worse = {s: (node_rms[s], urdf_rms[s]) for s in node_rms if not node_rms[s] < urdf_rms[s]}
    assert not worse, worse
