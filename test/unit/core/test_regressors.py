"""Regressors: the identity ``Y(v, a) theta == I a + v x* (I v)``, against pinocchio."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from inertia_id_ros.core.inertia import check_consistency, theta_from_pseudo_inertia
from inertia_id_ros.core.kinematics import SensorKinematics
from inertia_id_ros.core.regressors import (
    body_regressor,
    body_regressor_batch,
    payload_regressor,
    payload_regressor_batch,
)
from inertia_id_ros.core.robots import example_robot_urdf, load_model


def random_theta(rng: np.random.Generator) -> np.ndarray:
    """A random fully consistent theta: five point masses within 20 cm."""
    points = np.hstack([rng.uniform(-0.2, 0.2, size=(5, 3)), np.ones((5, 1))])
    pseudo = np.einsum("k,ki,kj->ij", rng.uniform(0.1, 1.0, 5), points, points)
    theta = theta_from_pseudo_inertia(pseudo)
    assert check_consistency(theta)
    return theta


def test_body_regressor_matches_pinocchio_and_the_spatial_inertia_identity():
    rng = np.random.default_rng(0)
    for _ in range(50):
        v, a = rng.normal(size=6), rng.normal(size=6)
        Y = body_regressor(v, a)
        assert np.allclose(Y, pin.bodyRegressor(pin.Motion(v), pin.Motion(a)), atol=1e-13)
        inertia = pin.Inertia.FromDynamicParameters(random_theta(rng))
        expected = inertia * pin.Motion(a) + pin.Motion(v).cross(inertia * pin.Motion(v))
        assert np.allclose(Y @ inertia.toDynamicParameters(), expected.vector, atol=1e-12)


def test_batched_regressors_equal_the_single_sample_ones():
    rng = np.random.default_rng(1)
    V, A = rng.normal(size=(20, 6)), rng.normal(size=(20, 6))
    body = body_regressor_batch(V, A)
    payload = payload_regressor_batch(V, A)
    assert body.shape == (20, 6, 10) and payload.shape == (20, 6, 16)
    assert payload_regressor_batch(V, A, estimate_offset=False).shape == (20, 6, 10)
    for i in range(20):
        assert np.array_equal(body[i], body_regressor(V[i], A[i]))
        assert np.array_equal(payload[i], payload_regressor(V[i], A[i]))
    assert np.array_equal(payload[:, :, 10:], np.broadcast_to(np.eye(6), (20, 6, 6)))
    theta, offset = random_theta(rng), rng.normal(size=6)
    assert np.allclose(payload @ np.r_[theta, offset], body @ theta + offset)


def test_batched_regressor_rejects_bad_shapes():
    with pytest.raises(ValueError, match=r"\(N, 6\)"):
        body_regressor_batch(np.zeros((3, 6)), np.zeros((4, 6)))


@pytest.mark.parametrize("robot, sensor_frame", [("panda", "panda_link8"), ("ur5", "wrist_3_link")])
def test_regressor_with_sensor_kinematics_matches_rnea_of_an_attached_payload(robot, sensor_frame):
    """The payload hangs from an extra joint placed away from the sensor frame; RNEA's wrench on
    that joint, moved to the sensor frame, equals body_regressor(v, a_g) @ theta_in_sensor."""
    model = load_model(example_robot_urdf(robot))
    kinematics = SensorKinematics(model, sensor_frame)
    reduced = kinematics.reduced_model
    frame = reduced.frames[reduced.getFrameId(sensor_frame)]
    sensor_to_joint = pin.SE3(pin.rpy.rpyToMatrix(0.3, -0.5, 1.1), np.array([0.05, -0.02, 0.1]))
    rng = np.random.default_rng(2)
    payload = pin.Inertia.FromDynamicParameters(random_theta(rng))
    attached = pin.Model(reduced)
    joint = attached.addJoint(
        frame.parentJoint, pin.JointModelRY(), frame.placement * sensor_to_joint, "payload_joint"
    )
    attached.appendBodyToJoint(joint, payload, pin.SE3.Identity())
    data = attached.createData()
    theta_sensor = sensor_to_joint.act(payload).toDynamicParameters()
    lower, upper = reduced.lowerPositionLimit, reduced.upperPositionLimit
    for _ in range(20):
        q = rng.uniform(np.maximum(lower, -3.0), np.minimum(upper, 3.0))[: kinematics.n_joints]
        dq, ddq = rng.normal(size=(2, kinematics.n_joints))
        pin.rnea(
            attached,
            data,
            np.r_[kinematics.model_configuration(q), 0.0],
            np.r_[dq, 0.0],
            np.r_[ddq, 0.0],
        )
        wrench_sensor = sensor_to_joint.act(data.f[joint]).vector
        v, a_g = kinematics.compute(q, dq, ddq)
        assert np.allclose(body_regressor(v, a_g) @ theta_sensor, wrench_sensor, atol=1e-10)
