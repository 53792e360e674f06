"""The online link estimator with a coupled wrist (:mod:`inertia_id_ros.sim.coupled_wrist`: the
Panda whose motor 7 turns with joints 6 and 7): given the link model with the transmission, it
estimates motor 7's rotor inertia and friction as the offline fit does."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_id_ros.chain.friction import JointDrive
from inertia_id_ros.chain.links import LinkModel
from inertia_id_ros.chain.motors import MotorCoupling
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.online.link_estimator import LinkEstimator, LinkEstimatorConfig
from inertia_id_ros.sim.coupled_wrist import (
    COULOMB_VELOCITY,
    MOTOR7,
    motor7_estimate,
    transmission_matrix,
    write_coupled_wrist_log,
)
from inertia_id_ros.sim.payload import PANDA_ARM_JOINTS


def test_the_coupled_motors_terms_are_estimated_online(tmp_path) -> None:
    log = write_coupled_wrist_log(tmp_path, duration=20.0, held_out=1.0)
    links = LinkModel.from_urdf(
        example_robot_urdf("panda"),
        PANDA_ARM_JOINTS,
        drives=JointDrive(coulomb_velocity=COULOMB_VELOCITY),
        coupling=MotorCoupling(PANDA_ARM_JOINTS, transmission_matrix()),
    )
    estimator = LinkEstimator(links, LinkEstimatorConfig(window_sec=30.0, prior_weight=1e-6))
    data = log.truth.subset(slice(0, None, 2))  # 250 Hz
    for k, t in enumerate(log.t[::2]):
        estimator.add_joint_state(
            1.7e9 + t, PANDA_ARM_JOINTS, data.positions[k], data.velocities[k], data.efforts[k]
        )
    estimator.process()
    estimate = estimator.solve()
    assert "panda_joint7_motor.armature" in links.parameter_names
    values, _ = motor7_estimate(links, estimate.x, data)
    for term, true in MOTOR7.items():
        assert values[term] == pytest.approx(true, rel=0.03)
    assert np.all(estimate.x[list(links.nonnegative)] >= 0.0)
    (motor,) = links.motors
    published = estimate.motors[motor.name]  # seen at joint 7, as the message carries it
    assert motor.motor_side(
        {"armature": published.armature, "viscous": published.viscous, "coulomb": published.coulomb}
    )["rotor_inertia"] == pytest.approx(MOTOR7["rotor_inertia"], rel=0.03)
    from inertia_id_ros.ros.conversions import COUPLED_MOTOR, link_estimate_to_msg

    msg = link_estimate_to_msg(estimate)
    assert [j.name for j in msg.joints] == [*PANDA_ARM_JOINTS, motor.name]
    assert msg.joints[-1].armature_source == COUPLED_MOTOR
    assert msg.joints[-1].armature == pytest.approx(published.armature)
