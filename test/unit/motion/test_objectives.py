"""The objectives of an exciting-motion design and their registry: every registered objective's
gradients, information and prior, and a recording's information; what the links' criterion
predicts."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_id_ros.chain.base_parameters import base_parameters
from inertia_id_ros.chain.links import JointTorqueData, LinkModel
from inertia_id_ros.chain.motors import MOTOR_TERMS, MotorCoupling
from inertia_id_ros.core.robots import example_robot_urdf, load_model
from inertia_id_ros.errors import DataError, ProblemError
from inertia_id_ros.motion.fourier import random_fourier_motion
from inertia_id_ros.motion.limits import motion_limits
from inertia_id_ros.motion.objectives import (
    OBJECTIVES,
    ExcitationObjective,
    LinksObjective,
    MotionEnvelope,
    ObjectiveSettings,
    PayloadObjective,
    objective_type,
    reference_samples,
)
from inertia_id_ros.offline.information import RECORDED_SAMPLES, recording_information
from inertia_id_ros.options import DESIGN_TIME_LIMITS, TARGETS

JOINTS = ("panda_joint5", "panda_joint6", "panda_joint7")  # the wrist: fast kinematics
SENSOR = "panda_link8"
WRIST = MotorCoupling(JOINTS[1:], np.array([[80.0, 0.0], [40.0, 80.0]]))
"""Motor 7 turns with joint 6 as well (half as much as with joint 7)."""
MOTOR = "panda_joint7_motor"


@pytest.fixture(scope="module")
def panda():
    return load_model(example_robot_urdf("panda"))


@pytest.fixture(scope="module")
def envelope(panda):
    limits = motion_limits(panda, JOINTS, max_acceleration=3.0)
    return MotionEnvelope(limits, 0.5 * (limits.lower + limits.upper), 4.0, seed=0)


@pytest.fixture(scope="module")
def probe(envelope):
    """(Q, DQ, DDQ) of a random feasible motion of JOINTS at 20 samples."""
    motion = random_fourier_motion(envelope.limits, envelope.start, 4.0, seed=3)
    return tuple(x[5:-5:20] for x in (motion.q, motion.dq, motion.ddq))


def settings_for(kind: type[ExcitationObjective], **kwargs) -> ObjectiveSettings:
    """Settings of ``kind`` on the Panda's wrist (the flange's sensor frame if it takes one)."""
    return ObjectiveSettings(sensor_frame=SENSOR if kind.takes_sensor_frame else None, **kwargs)


def objective_of(panda, envelope, kind, **kwargs) -> ExcitationObjective:
    return kind.for_design(panda, JOINTS, settings_for(kind, **kwargs), envelope)


def test_the_registry_holds_every_target_once_by_its_own_name():
    assert tuple(OBJECTIVES) == TARGETS
    for name, kind in OBJECTIVES.items():
        assert issubclass(kind, ExcitationObjective) and kind.target == name
        assert objective_type(name) is kind
        assert kind.default_time_limit == DESIGN_TIME_LIMITS[name] > 0.0
        assert kind.measured in RECORDED_SAMPLES and kind.name
    with pytest.raises(ProblemError, match="target must be one of payload, links, got 'base'"):
        objective_type("base")


def assert_gradients_match_finite_differences(objective: ExcitationObjective, probe) -> None:
    """The surrogate's gradients w.r.t. Q, DQ, DDQ along random directions."""
    f, gradients = objective.value_and_gradient(*probe, weight=10.0)
    rng = np.random.default_rng(1)
    for which in range(3):
        direction = rng.normal(size=probe[0].shape)
        eps = 1e-6
        plus = list(probe)
        minus = list(probe)
        plus[which] = probe[which] + eps * direction
        minus[which] = probe[which] - eps * direction
        numeric = (
            objective.value_and_gradient(*plus, weight=10.0)[0]
            - objective.value_and_gradient(*minus, weight=10.0)[0]
        ) / (2 * eps)
        assert np.sum(gradients[which] * direction) == pytest.approx(numeric, rel=1e-4, abs=1e-7)


@pytest.mark.parametrize("kind", OBJECTIVES.values(), ids=OBJECTIVES.keys())
def test_analytic_gradients_match_finite_differences(panda, envelope, probe, kind):
    assert_gradients_match_finite_differences(objective_of(panda, envelope, kind), probe)


def test_the_links_information_and_gradients_cover_a_coupled_motors_columns(panda, envelope, probe):
    coupled = objective_of(panda, envelope, LinksObjective, coupling=WRIST)
    plain = objective_of(panda, envelope, LinksObjective)
    motor = [coupled.links.parameter_names.index(f"{MOTOR}.{t}") for t in MOTOR_TERMS]
    assert coupled.n_parameters == plain.n_parameters + 3
    alone = LinksObjective.sample_information(
        panda, JOINTS, probe, ObjectiveSettings(coupling=WRIST)
    )
    assert np.allclose(alone, coupled.information(*probe))
    assert set(motor) <= set(coupled.columns)  # the motor's terms are base parameters
    assert_gradients_match_finite_differences(coupled, probe)  # the motor's columns' too


@pytest.mark.parametrize("kind", OBJECTIVES.values(), ids=OBJECTIVES.keys())
def test_the_information_of_samples_is_the_objectives_and_a_prior_adds_to_it(
    panda, envelope, probe, kind
):
    objective = objective_of(panda, envelope, kind)
    information = objective.information(*probe)
    assert information.shape == (objective.n_parameters,) * 2
    settings = settings_for(kind)
    alone = kind.sample_information(panda, JOINTS, probe, settings, weight=3.0)
    assert np.allclose(alone, 3.0 * information)
    with_prior = objective_of(panda, envelope, kind, prior_information=alone)
    # the prior triples the motion's information: the errors (square roots of variances) halve
    assert with_prior.criterion(information) == pytest.approx(objective.criterion(information) / 2)


@pytest.mark.parametrize("kind", OBJECTIVES.values(), ids=OBJECTIVES.keys())
def test_a_trajectory_is_scored_on_its_samples_at_the_measurement_rate(panda, envelope, kind):
    motion = random_fourier_motion(envelope.limits, envelope.start, 4.0, seed=5)
    at_50_hz = objective_of(panda, envelope, kind, measurement_rate_hz=50.0)
    weight = 50.0 * motion.duration / motion.t.size
    samples = (motion.q, motion.dq, motion.ddq)
    assert at_50_hz.criterion_of(motion) == pytest.approx(
        at_50_hz.criterion(at_50_hz.information(*samples, weight))
    )
    at_200_hz = objective_of(panda, envelope, kind, measurement_rate_hz=200.0)
    assert at_200_hz.criterion_of(motion) == pytest.approx(at_50_hz.criterion_of(motion) / 2)


@pytest.mark.parametrize("kind", OBJECTIVES.values(), ids=OBJECTIVES.keys())
def test_the_information_of_a_recording_is_that_of_its_samples(panda, tmp_path, kind):
    limits = motion_limits(panda, JOINTS)
    motion = random_fourier_motion(limits, 0.5 * (limits.lower + limits.upper), 2.0, seed=2)
    path = tmp_path / "recording.npz"
    np.savez(  # both signals an objective may predict, columns in another order
        path,
        t=motion.t,
        joint_names=np.array(JOINTS[::-1]),
        q=motion.q[:, ::-1],
        dq=motion.dq[:, ::-1],
        ddq=motion.ddq[:, ::-1],
        wrench=np.zeros((motion.t.size, 6)),
        effort=np.zeros_like(motion.q),
    )
    settings = settings_for(kind)
    information = recording_information(path, panda, JOINTS, kind, settings)
    samples = (motion.q, motion.dq, motion.ddq)
    expected = kind.sample_information(panda, JOINTS, samples, settings)
    assert np.allclose(information, expected)
    with pytest.raises(DataError, match="panda_joint4"):
        recording_information(path, panda, ("panda_joint4",) + JOINTS, kind, settings)


def test_a_recording_without_the_predicted_signal_is_refused(panda, tmp_path):
    path = tmp_path / "joints_only.npz"
    t = np.linspace(0.0, 1.0, 101)
    np.savez(path, t=t, joint_names=np.array(JOINTS), q=np.zeros((t.size, 3)))
    for kind in OBJECTIVES.values():
        with pytest.raises(DataError, match=f"missing '{kind.measured}'"):
            recording_information(path, panda, JOINTS, kind, settings_for(kind))


def test_the_payload_needs_its_sensor_frame_and_takes_no_coupling(panda):
    with pytest.raises(ProblemError, match="target 'payload' needs sensor_frame"):
        PayloadObjective(panda, JOINTS, ObjectiveSettings())
    with pytest.raises(ProblemError, match="target 'payload' takes no coupling"):
        PayloadObjective(panda, JOINTS, ObjectiveSettings(sensor_frame=SENSOR, coupling=WRIST))


def test_a_coupled_motor_turning_with_a_joint_not_moved_is_refused(panda, envelope):
    with pytest.raises(ProblemError, match="turns with joints \\['panda_joint6'\\]"):
        LinksObjective.for_design(panda, JOINTS[::2], ObjectiveSettings(coupling=WRIST), envelope)


@pytest.fixture(scope="module")
def links_case(panda, envelope):
    """(objective, reference samples, a rich motion) of the wrist's links objective."""
    reference = reference_samples(envelope.limits, envelope.start, 4.0, seed=0)
    objective = LinksObjective(panda, JOINTS, ObjectiveSettings(torque_noise_std=0.2), reference)
    motion = random_fourier_motion(envelope.limits, envelope.start, 4.0, seed=5)
    return objective, reference, motion


def test_the_links_criterion_is_the_predicted_held_out_torque_error(panda, links_case):
    objective, reference, motion = links_case
    samples = tuple(x[::4] for x in (motion.q, motion.dq, motion.ddq))
    value = objective.criterion(objective.information(*samples))
    # independently: the base columns of the reference, least squares by pseudo-inverse
    links = LinkModel.from_model(panda, JOINTS)
    columns = base_parameters(links, JointTorqueData(*reference, np.zeros_like(reference[0])))
    Y = links.joint_torque_regressor(*samples).reshape(-1, links.n_parameters)
    Y_ref = links.joint_torque_regressor(*reference).reshape(-1, links.n_parameters)
    Y, Y_ref = Y[:, columns.independent], Y_ref[:, columns.independent]
    gain = Y_ref @ np.linalg.pinv(Y)  # reference torques of the fit, per measured torque
    assert value == pytest.approx(0.2 * np.sqrt(np.sum(gain**2) / Y_ref.shape[0]), rel=1e-6)
    # and by simulation: fits to noisy torques, their errors on the reference motions
    rng = np.random.default_rng(0)
    errors = [np.mean((gain @ rng.normal(0.0, 0.2, Y.shape[0])) ** 2) for _ in range(400)]
    assert np.sqrt(np.mean(errors)) == pytest.approx(value, rel=0.1)


def test_the_links_criterion_ranks_a_rich_motion_above_one_path(links_case):
    objective, _, motion = links_case
    # one straight path in joint space: every joint follows the first joint's profile
    direction = 0.3 / np.ptp(motion.q[:, 0]) * np.ones(len(JOINTS))
    path = (
        motion.q[0] + np.outer(motion.q[:, 0] - motion.q[0, 0], direction),
        np.outer(motion.dq[:, 0], direction),
        np.outer(motion.ddq[:, 0], direction),
    )
    rich = objective.criterion(objective.information(motion.q, motion.dq, motion.ddq))
    one_path = objective.criterion(objective.information(*path))
    assert np.isfinite(rich) and rich < 0.01 * one_path
