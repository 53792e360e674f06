"""Exciting-motion design: rest-to-rest basis, limits, analytic gradients, design, CLI."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_id_ros import cli
from inertia_id_ros.chain.base_parameters import base_parameters
from inertia_id_ros.chain.links import JointTorqueData, LinkModel
from inertia_id_ros.core.robots import example_robot_urdf, load_model
from inertia_id_ros.errors import DataError, ProblemError
from inertia_id_ros.motion.design import (
    MotionEvaluator,
    RestToRestFourier,
    design_excitation,
    motion_limits,
    random_fourier_motion,
    reference_samples,
    sample_information,
)
from inertia_id_ros.motion.trajectory import ExcitationTrajectory
from inertia_id_ros.offline.information import recording_information

JOINTS = ("panda_joint5", "panda_joint6", "panda_joint7")  # the wrist: fast kinematics
SENSOR = "panda_link8"


@pytest.fixture(scope="module")
def panda():
    return load_model(example_robot_urdf("panda"))


@pytest.fixture(scope="module")
def probe(panda):
    """(Q, DQ, DDQ) of a random feasible motion of JOINTS at 20 samples."""
    limits = motion_limits(panda, JOINTS)
    motion = random_fourier_motion(limits, 0.5 * (limits.lower + limits.upper), 4.0, seed=3)
    return tuple(x[5:-5:20] for x in (motion.q, motion.dq, motion.ddq))


def test_the_fourier_basis_starts_and_ends_at_rest_with_consistent_derivatives():
    basis = RestToRestFourier(4.0, 6)
    X = np.random.default_rng(0).normal(size=(basis.n_free, 2))
    start = np.array([0.3, -0.2])
    motion = basis.trajectory(X, start, ("a", "b"), rate_hz=1000.0)
    Pq, Pdq, Pddq = basis.evaluate(np.array([0.0, 4.0]))
    assert np.allclose(Pq @ X, 0.0) and np.allclose(Pdq @ X, 0.0) and np.allclose(Pddq @ X, 0.0)
    assert np.allclose(motion.q[[0, -1]], start)
    assert np.allclose(np.gradient(motion.q, motion.t, axis=0)[1:-1], motion.dq[1:-1], atol=1e-4)
    assert np.allclose(np.gradient(motion.dq, motion.t, axis=0)[1:-1], motion.ddq[1:-1], atol=1e-3)


def test_limits_come_from_the_urdf_with_the_margin(panda):
    limits = motion_limits(
        panda, ("panda_joint4",), position_margin=0.1, max_acceleration=2.0, torque_limits=True
    )
    assert limits.lower[0] == pytest.approx(-3.0718 + 0.1)
    assert limits.upper[0] == pytest.approx(-0.0698 - 0.1)
    assert limits.velocity[0] == pytest.approx(2.175) and limits.acceleration[0] == 2.0
    assert limits.torque[0] == pytest.approx(87.0)
    with pytest.raises(ProblemError, match="no position range left"):
        motion_limits(panda, ("panda_joint4",), position_margin=2.0)


def test_a_random_reference_motion_is_scaled_onto_its_limits(panda):
    limits = motion_limits(panda, JOINTS, max_acceleration=3.0)
    motion = random_fourier_motion(limits, 0.5 * (limits.lower + limits.upper), 6.0, seed=1)
    assert max(limits.violations(motion).values()) <= 0.0
    start = motion.q[0]
    usage = np.max(
        [
            np.max(motion.q - start, axis=0) / (limits.upper - start),
            np.max(start - motion.q, axis=0) / (start - limits.lower),
            np.max(np.abs(motion.dq), axis=0) / limits.velocity,
            np.max(np.abs(motion.ddq), axis=0) / limits.acceleration,
        ],
        axis=0,
    )
    assert np.all(usage > 0.99)  # every joint is scaled until one of its limits is active


@pytest.mark.parametrize("target", ["payload", "links"])
def test_analytic_gradients_match_finite_differences(panda, probe, target):
    evaluator = MotionEvaluator(panda, JOINTS, target, sensor_frame=SENSOR, reference=probe)
    f, gradients = evaluator.value_and_gradient(*probe, weight=10.0)
    rng = np.random.default_rng(1)
    for which in range(3):
        direction = rng.normal(size=probe[0].shape)
        eps = 1e-6
        plus = list(probe)
        minus = list(probe)
        plus[which] = probe[which] + eps * direction
        minus[which] = probe[which] - eps * direction
        numeric = (
            evaluator.value_and_gradient(*plus, weight=10.0)[0]
            - evaluator.value_and_gradient(*minus, weight=10.0)[0]
        ) / (2 * eps)
        assert np.sum(gradients[which] * direction) == pytest.approx(numeric, rel=1e-4, abs=1e-7)


def test_the_payload_design_beats_its_start_within_every_limit(panda):
    result = design_excitation(
        panda, JOINTS, "payload", 4.0, sensor_frame=SENSOR, max_acceleration=3.0, time_limit=2.0
    )
    motion = result.trajectory
    assert max(result.limits.violations(motion).values()) <= 1e-9
    assert np.allclose(motion.q[[0, -1]], 0.5 * (result.limits.lower + result.limits.upper))
    assert np.allclose(motion.dq[[0, -1]], 0.0) and np.allclose(motion.ddq[[0, -1]], 0.0)
    assert (motion.t.size - 1) / motion.duration >= 100.0
    assert result.objective < 0.7 * result.stats.initial_objective
    assert result.evaluator.criterion_of(motion) == pytest.approx(result.objective)
    assert result.information.shape == (16, 16)


@pytest.fixture(scope="module")
def links_case(panda):
    """(evaluator, reference samples, a rich motion) of the wrist's links objective."""
    limits = motion_limits(panda, JOINTS, max_acceleration=3.0)
    start = 0.5 * (limits.lower + limits.upper)
    reference = reference_samples(limits, start, 4.0, seed=0)
    evaluator = MotionEvaluator(panda, JOINTS, "links", reference=reference, torque_noise_std=0.2)
    return evaluator, reference, random_fourier_motion(limits, start, 4.0, seed=5)


def test_the_links_criterion_is_the_predicted_held_out_torque_error(panda, links_case):
    evaluator, reference, motion = links_case
    samples = tuple(x[::4] for x in (motion.q, motion.dq, motion.ddq))
    value = evaluator.criterion(evaluator.information(*samples))
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
    evaluator, _, motion = links_case
    # one straight path in joint space: every joint follows the first joint's profile
    direction = 0.3 / np.ptp(motion.q[:, 0]) * np.ones(len(JOINTS))
    path = (
        motion.q[0] + np.outer(motion.q[:, 0] - motion.q[0, 0], direction),
        np.outer(motion.dq[:, 0], direction),
        np.outer(motion.ddq[:, 0], direction),
    )
    rich = evaluator.criterion(evaluator.information(motion.q, motion.dq, motion.ddq))
    one_path = evaluator.criterion(evaluator.information(*path))
    assert np.isfinite(rich) and rich < 0.01 * one_path


def test_the_links_design_beats_its_start_within_every_limit(panda):
    result = design_excitation(panda, JOINTS, "links", 4.0, max_acceleration=3.0, time_limit=3.0)
    assert max(result.limits.violations(result.trajectory).values()) <= 1e-9
    assert result.objective < 0.9 * result.stats.initial_objective
    assert result.evaluator.criterion_of(result.trajectory) == pytest.approx(result.objective)


def test_prior_information_lowers_the_predicted_error(panda, probe):
    evaluator = MotionEvaluator(panda, JOINTS, "payload", sensor_frame=SENSOR)
    alone = evaluator.criterion(evaluator.information(*probe))
    prior = sample_information(panda, JOINTS, "payload", *probe, sensor_frame=SENSOR, weight=3.0)
    with_prior = MotionEvaluator(
        panda, JOINTS, "payload", sensor_frame=SENSOR, prior_information=prior
    )
    assert with_prior.criterion(evaluator.information(*probe)) == pytest.approx(alone / 2.0)


def test_design_rejects_a_start_outside_the_limits(panda):
    with pytest.raises(ProblemError, match="panda_joint6"):
        design_excitation(
            panda, JOINTS, "payload", 4.0, sensor_frame=SENSOR, start=[0.0, -1.0, 0.0]
        )


def test_the_cli_writes_a_trajectory_and_reports_limits_and_objective(tmp_path, capsys):
    out = tmp_path / "traj.npz"
    code = cli.main(
        [
            "excite",
            "--urdf",
            str(example_robot_urdf("panda")),
            "--joints",
            ",".join(JOINTS),
            "--target",
            "payload",
            "--sensor-frame",
            SENSOR,
            "--duration",
            "3",
            "--out",
            str(out),
            "--time-limit",
            "1",
        ]
    )
    stdout = capsys.readouterr().out
    assert code == 0
    assert "limits used" in stdout and "panda_joint6" in stdout and "achieved:" in stdout
    motion = ExcitationTrajectory.load_npz(out)
    assert motion.joint_names == JOINTS and motion.duration == pytest.approx(3.0)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--target", "payload"], "--sensor-frame is needed"),
        (["--target", "links", "--max-acceleration", "-1"], "max_acceleration must be > 0"),
        (["--target", "links", "--start", "0,x,0"], "argument --start: expected comma-separated"),
    ],
)
def test_bad_cli_input_exits_2_with_one_line(tmp_path, capsys, argv, message):
    code = cli.main(
        [
            "excite",
            "--urdf",
            str(example_robot_urdf("panda")),
            "--joints",
            ",".join(JOINTS),
            "--duration",
            "3",
            "--out",
            str(tmp_path / "t.npz"),
            *argv,
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1


def test_the_information_of_a_recording_is_that_of_its_samples(panda, tmp_path):
    limits = motion_limits(panda, JOINTS)
    motion = random_fourier_motion(limits, 0.5 * (limits.lower + limits.upper), 2.0, seed=2)
    path = tmp_path / "recording.npz"
    np.savez(
        path,
        t=motion.t,
        joint_names=np.array(JOINTS[::-1]),
        q=motion.q[:, ::-1],
        dq=motion.dq[:, ::-1],
        ddq=motion.ddq[:, ::-1],
        wrench=np.zeros((motion.t.size, 6)),
    )
    information = recording_information(str(path), panda, JOINTS, "payload", sensor_frame=SENSOR)
    expected = sample_information(
        panda, JOINTS, "payload", motion.q, motion.dq, motion.ddq, sensor_frame=SENSOR
    )
    assert np.allclose(information, expected)
    with pytest.raises(DataError, match="panda_joint4"):
        recording_information(
            str(path), panda, ("panda_joint4",) + JOINTS, "payload", sensor_frame=SENSOR
        )
