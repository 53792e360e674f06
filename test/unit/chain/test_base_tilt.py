"""The base-tilt search (:func:`~inertia_id_ros.chain.base_tilt.estimate_base_tilt`)."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_id_ros.chain.base_tilt import (
    _quadratic_vertex,
    estimate_base_tilt,
    tilted_gravity,
    tilted_gravity_jacobian,
)
from inertia_id_ros.chain.links import LinkModel, gravity_columns, with_gravity
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.sim.payload import PANDA_ARM_JOINTS
from inertia_id_ros.sim.torques import ExcitingTrajectory, JointTorqueSimulator

ROLL, PITCH = 0.021, -0.012
"""The simulated base's tilt (rad)."""


@pytest.fixture(scope="module")
def panda() -> LinkModel:
    return LinkModel.from_urdf(example_robot_urdf("panda"), PANDA_ARM_JOINTS)


def test_the_gravity_jacobian_is_the_derivative_of_the_tilted_gravity(panda):
    angles, step = np.array([0.03, -0.05]), 1e-6
    numeric = np.column_stack(
        [
            (tilted_gravity(panda, *(angles + d)) - tilted_gravity(panda, *(angles - d)))
            / (2 * step)
            for d in step * np.eye(2)
        ]
    )
    assert np.allclose(tilted_gravity_jacobian(panda, *angles), numeric, atol=1e-6)


def test_the_quadratic_vertex_is_the_minimum_of_the_quadratic_through_the_points():
    def quadratic(x):
        return 3.0 + (x - [0.4, -0.2]) @ np.array([[2.0, 0.5], [0.5, 1.0]]) @ (x - [0.4, -0.2])

    offsets = np.array([[1, 0], [-1, 0], [0, 1], [0, -1], [1, 1]], dtype=float)
    vertex = _quadratic_vertex(offsets, [quadratic(o) for o in offsets], quadratic(np.zeros(2)))
    assert np.allclose(vertex, [0.4, -0.2])
    assert (
        _quadratic_vertex(offsets, [-quadratic(o) for o in offsets], -quadratic(np.zeros(2)))
        is None
    )  # a maximum: no vertex


def test_the_tilt_of_a_simulated_base_is_recovered_at_a_minimum_of_the_training_rms(panda):
    tilted = with_gravity(panda, tilted_gravity(panda, ROLL, PITCH))
    trajectory = ExcitingTrajectory.for_model(panda.model, panda.joint_names, seed=3)
    data = JointTorqueSimulator(tilted, trajectory, torque_noise_std=0.05).measure(
        np.arange(0.0, 10.0, 0.01), np.random.default_rng(0)
    )
    tilt = estimate_base_tilt(panda, data)
    assert abs(tilt.roll - ROLL) < 5e-4 and abs(tilt.pitch - PITCH) < 5e-4  # < 0.03 degrees
    assert tilt.rms < 0.5 * tilt.level_rms
    assert np.allclose(tilt.gravity, tilted_gravity(panda, tilt.roll, tilt.pitch))


def _three_joint_model() -> LinkModel:
    """A prismatic, an unaligned revolute and an unbounded revolute joint in a chain, each
    carrying a random link."""
    import pinocchio as pin

    rng = np.random.default_rng(2)
    robot, parent = pin.Model(), 0
    for k, joint in enumerate(
        (
            pin.JointModelPZ(),
            pin.JointModelRevoluteUnaligned(*(rng.normal(size=3))),
            pin.JointModelRUBX(),
        )
    ):
        placement = pin.SE3(pin.rpy.rpyToMatrix(*rng.uniform(-1, 1, 3)), rng.normal(size=3))
        parent = robot.addJoint(parent, joint, placement, f"joint{k}")
        robot.appendBodyToJoint(parent, pin.Inertia.Random(), pin.SE3.Identity())
    return LinkModel(robot)


@pytest.mark.parametrize("robot", ["panda", "ur5", "three_joints"])
def test_gravity_columns_at_rest_equal_pinocchios_regressor_at_rest(robot, panda):
    model = {
        "panda": lambda: panda,
        "three_joints": _three_joint_model,
        "ur5": lambda: LinkModel.from_urdf(example_robot_urdf("ur5")),
    }[robot]()
    q = np.random.default_rng(0).uniform(-3.0, 3.0, (50, model.n_joints))
    rest = np.zeros_like(q)
    reference = np.stack(
        [
            with_gravity(model, axis).link_regressor(q, rest, rest)[:, :, gravity_columns(model)]
            for axis in np.eye(3)
        ],
        axis=1,
    )
    assert np.abs(reference).max() > 0.5
    assert np.allclose(model.gravity_columns_at_rest(q), reference, atol=1e-12)
