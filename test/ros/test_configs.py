"""Configuration files load into the real node (the launch file: ``test_launch_file.py``)."""

from __future__ import annotations

import time

import pytest

from helpers.dds import wait_until_serving
from helpers.paths import REPO
from inertia_id_ros.core.robots import example_robot_urdf

pytestmark = pytest.mark.rate_insensitive  # no sample counted: outside the DDS groups


def _urdf(robot: str) -> str:
    return f"urdf_path:={example_robot_urdf(robot)}"


@pytest.mark.parametrize(
    "config, parameter, started, logged",
    [
        (
            "panda_payload.yaml",
            _urdf("panda"),
            "identifying the body beyond 'panda_link8'",
            ("window 30.0 s",),
        ),
        (
            "icub_right_arm.yaml",
            _urdf("icub"),
            "identifying the body beyond 'r_arm_ft_sensor' from joints ['torso_pitch', "
            "'torso_roll', 'torso_yaw', 'r_shoulder_pitch', 'r_shoulder_roll', 'r_shoulder_yaw']",
            ("window 60.0 s",),
        ),
        (
            "panda_links.yaml",
            _urdf("panda"),
            "identifying the links ['panda_link1'",
            ("prior weight 0.002", "window 30.0 s"),
        ),
        (
            "panda_payload_torques.yaml",
            _urdf("panda"),
            "identifying the body beyond 'panda_link8' from the torques of joints "
            "['panda_joint1', ",
            ("minus the URDF's links", "window 30.0 s"),
        ),
        (
            "go1_leg_links.yaml",
            f"chain_config:={REPO / 'config' / 'go1_front_left_leg.yaml'}",
            "identifying the links ['FL_hip', 'FL_thigh', 'FL_calf']",
            ("prior weight 1e-06", "window 60.0 s"),
        ),
    ],
)
def test_config_loads_into_the_node(
    launch, rclpy_context, config: str, parameter: str, started: str, logged: tuple[str, ...]
) -> None:
    """``config/<config>`` (with the robot's URDF or chain) starts the node: it logs ``started``
    and serves, and its log says ``logged``."""
    node = launch(
        "inertia-id-node",
        "inertia_id_ros.ros.node",
        "--params-file",
        str(REPO / "config" / config),
        "-p",
        parameter,
    )
    wait_for(node, started)
    assert all(text in node.output() for text in logged), node.output()


def wait_for(node, text: str, timeout: float = 30.0) -> None:
    """Until ``text`` is in the node's log and the node serves requests (it spins: stopped
    before, it would be stopped in its start-up); fails if the node exits or the time runs
    out."""
    import rclpy

    deadline = time.monotonic() + timeout
    while text not in node.output():
        assert node.alive(), node.output()
        assert time.monotonic() < deadline, node.output()
        time.sleep(0.2)
    peer = rclpy.create_node("inertia_id_config_peer")
    try:
        wait_until_serving(peer)
    finally:
        peer.destroy_node()
