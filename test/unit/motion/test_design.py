"""Exciting-motion design: rest-to-rest basis, limits, the optimiser, design, CLI (the
objectives: test_objectives.py)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize

from inertia_id_ros import cli
from inertia_id_ros.chain.links import LinkModel
from inertia_id_ros.chain.motors import MOTOR_TERMS, MotorCoupling
from inertia_id_ros.core.robots import example_robot_urdf, load_model
from inertia_id_ros.errors import ProblemError
from inertia_id_ros.motion.design import design_excitation, stop_reason
from inertia_id_ros.motion.fourier import RestToRestFourier, random_fourier_motion
from inertia_id_ros.motion.limits import motion_limits
from inertia_id_ros.motion.objectives import ObjectiveSettings
from inertia_id_ros.motion.trajectory import ExcitationTrajectory

JOINTS = ("panda_joint5", "panda_joint6", "panda_joint7")  # the wrist: fast kinematics
SENSOR = "panda_link8"


@pytest.fixture(scope="module")
def panda():
    return load_model(example_robot_urdf("panda"))


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


def test_the_payload_design_beats_its_start_within_every_limit(panda):
    result = design_excitation(
        panda,
        JOINTS,
        "payload",
        4.0,
        settings=ObjectiveSettings(sensor_frame=SENSOR),
        max_acceleration=3.0,
        time_limit=2.0,
    )
    motion = result.trajectory
    assert max(result.limits.violations(motion).values()) <= 1e-9
    assert np.allclose(motion.q[[0, -1]], 0.5 * (result.limits.lower + result.limits.upper))
    assert np.allclose(motion.dq[[0, -1]], 0.0) and np.allclose(motion.ddq[[0, -1]], 0.0)
    assert (motion.t.size - 1) / motion.duration >= 100.0
    assert result.objective < 0.7 * result.stats.initial_objective
    assert result.evaluator.criterion_of(motion) == pytest.approx(result.objective)
    assert result.information.shape == (16, 16)


def test_the_links_design_beats_its_start_within_every_limit(panda):
    result = design_excitation(panda, JOINTS, "links", 4.0, max_acceleration=3.0, time_limit=3.0)
    assert max(result.limits.violations(result.trajectory).values()) <= 1e-9
    assert result.objective < 0.9 * result.stats.initial_objective
    assert result.evaluator.criterion_of(result.trajectory) == pytest.approx(result.objective)


def test_a_links_design_with_a_coupling_identifies_the_coupled_motor_better(panda):
    """Motor 7 turns with joint 6 too. With the links and the joints' drives already known (a
    prior pins them), the design considering the motor predicts its terms more precisely than
    today's design, which does not know of it (both end on their own before the time limit)."""
    wrist = MotorCoupling(JOINTS[1:], np.array([[80.0, 0.0], [40.0, 80.0]]))
    links = LinkModel.from_model(panda, JOINTS, coupling=wrist)
    motor = [links.parameter_names.index(f"panda_joint7_motor.{t}") for t in MOTOR_TERMS]
    known = np.diag(np.where(np.isin(np.arange(links.n_parameters), motor), 0.0, 1e8))
    settings = ObjectiveSettings(coupling=wrist, prior_information=known)
    common = dict(max_acceleration=3.0, time_limit=60.0)
    aware = design_excitation(panda, JOINTS, "links", 4.0, settings=settings, **common)
    unaware = design_excitation(panda, JOINTS, "links", 4.0, **common)
    evaluator = aware.evaluator
    assert aware.information.shape == (links.n_parameters,) * 2

    def motor_std(trajectory: ExcitationTrajectory) -> np.ndarray:
        """Predicted standard errors of the motor's terms (kg·m², N·m·s/rad, N·m at joint 7)."""
        information = evaluator.reduce(evaluator.trajectory_information(trajectory))
        covariance = np.linalg.inv(information + evaluator.prior)
        base = [list(evaluator.columns).index(k) for k in motor]
        return evaluator.settings.torque_noise_std * np.sqrt(np.diag(covariance)[base])

    assert np.all(np.isfinite(motor_std(aware.trajectory)))
    assert np.all(motor_std(aware.trajectory) < motor_std(unaware.trajectory))
    assert aware.objective < 0.9 * evaluator.criterion_of(unaware.trajectory)


def test_design_rejects_a_start_outside_the_limits(panda):
    with pytest.raises(ProblemError, match="panda_joint6"):
        design_excitation(
            panda,
            JOINTS,
            "payload",
            4.0,
            settings=ObjectiveSettings(sensor_frame=SENSOR),
            start=[0.0, -1.0, 0.0],
        )


def test_an_unknown_target_is_refused_with_the_known_ones(panda):
    with pytest.raises(ProblemError, match="target must be one of payload, links, got 'base'"):
        design_excitation(panda, JOINTS, "base", 4.0)


def test_the_optimiser_says_why_it_stopped_in_full():
    abnormal = scipy.optimize.OptimizeResult(message="ABNORMAL: ", status=2)
    assert stop_reason(abnormal) == (
        "ABNORMAL: the line search found no acceptable step (L-BFGS-B status 2)"
    )
    converged = scipy.optimize.OptimizeResult(
        message="CONVERGENCE: NORM OF PROJECTED GRADIENT <= PGTOL", status=0
    )
    assert stop_reason(converged) == (
        "CONVERGENCE: NORM OF PROJECTED GRADIENT <= PGTOL (L-BFGS-B status 0)"
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
