"""Point masses placed where the mass is, and CAD priors for payloads: the solvers on simulated
payload data through the estimator, the prior's sources (result JSON, URDF link, the node's
parameter), and the up-front refusal of ``cad_prior`` without a prior (estimator, node
parameters, CLI)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from inertia_id_ros import cli
from inertia_id_ros.core.inertia import check_consistency, inertia_from_theta, theta_from_inertia
from inertia_id_ros.core.kinematics import SensorKinematics
from inertia_id_ros.core.robots import example_robot_urdf, load_model
from inertia_id_ros.errors import ConfigError, ProblemError, StartupError
from inertia_id_ros.formats.export import body_json
from inertia_id_ros.formats.prior import prior_from_link, prior_from_result, resolve_payload_prior
from inertia_id_ros.modes.parameters import build_session, settings_from_parameters, validate_change
from inertia_id_ros.online.payload_estimator import EstimatorConfig, PayloadEstimator
from inertia_id_ros.sim.payload import (
    PANDA_ARM_JOINTS,
    PANDA_FLANGE,
    ExcitingTrajectory,
    PayloadSimulator,
)
from inertia_id_ros.solvers import Problem, solve
from inertia_id_ros.solvers.cad_prior import pseudo_inertia_metric

PANDA = str(example_robot_urdf("panda"))
RATE_HZ = 200.0
DURATION_SEC = 20.0


@pytest.fixture(scope="module")
def model():
    return load_model(PANDA)


def simulated(model, seed: int, **trajectory) -> tuple[PayloadSimulator, tuple]:
    """The simulated Panda's payload with the demo's noise: (simulator, (t, q, dq, wrench))."""
    sim = PayloadSimulator.panda(
        trajectory=ExcitingTrajectory.for_model(model, PANDA_ARM_JOINTS, seed=seed, **trajectory)
    )
    t = np.arange(int(DURATION_SEC * RATE_HZ)) / RATE_HZ
    return sim, (t, *sim.measure(t, np.random.default_rng(seed + 100)))


def estimator_with(model, sim, data, prior=None, **config) -> PayloadEstimator:
    t, q, dq, wrench = data
    estimator = PayloadEstimator(
        SensorKinematics(model, PANDA_FLANGE),
        EstimatorConfig(window_sec=DURATION_SEC + 1, window_capacity=t.size, prior=prior, **config),
    )
    estimator.add_joint_states(t, list(sim.joint_names), q, dq)
    estimator.add_wrenches(t, wrench)
    estimator.process()
    return estimator


def inertia_error(theta: np.ndarray, truth: np.ndarray) -> float:
    """Relative Frobenius error of the inertia about the COM."""
    true_inertia = inertia_from_theta(truth)[2]
    return float(
        np.linalg.norm(inertia_from_theta(theta)[2] - true_inertia) / np.linalg.norm(true_inertia)
    )


def off_prior(theta: np.ndarray, fraction: float = 0.2) -> np.ndarray:
    """A CAD prior ``fraction`` off: mass and inertia about the COM scaled, COM moved."""
    mass, com, inertia = inertia_from_theta(theta)
    return theta_from_inertia(
        mass * (1 + fraction),
        com + fraction * np.linalg.norm(com) * np.array([0.6, -0.8, 0.0]),
        inertia * (1 - fraction),
    )


@pytest.fixture(scope="module")
def rich(model):
    return simulated(model, 0)


@pytest.fixture(scope="module")
def poor(model):
    """Slow motion (30 s period, 10 % of the velocity limits): the inertia is barely excited."""
    return simulated(model, 1, period=30.0, velocity_fraction=0.1)


# ---- pointmass -------------------------------------------------------------------------------


def test_pointmass_inertia_within_5_points_of_lmi_on_well_excited_data(model, rich):
    sim, data = rich
    estimator = estimator_with(model, sim, data)
    lmi = inertia_error(estimator.solve("lmi").theta, sim.true_theta)
    estimate = estimator.solve("pointmass")
    assert check_consistency(estimate.theta).fully_consistent
    assert inertia_error(estimate.theta, sim.true_theta) <= lmi + 0.05
    assert lmi < 0.1 and "approximation limits" not in estimate.message


def test_pointmass_reports_when_its_points_limit_the_fit(model, rich):
    sim, data = rich
    estimator = estimator_with(model, sim, data)
    grid = [(-0.25 * np.ones(3), 0.25 * np.ones(3))]  # a coarse grid far from the payload
    estimator.configure_solver("pointmass", dict(boxes=grid, points_per_axis=3))
    estimate = estimator.solve()
    assert "the point approximation limits the fit" in estimate.message
    assert inertia_error(estimate.theta, sim.true_theta) > 0.5


def payload_problem(model, sim, data) -> Problem:
    estimator = estimator_with(model, sim, data)
    _, Y, f = estimator.window.samples()
    return Problem.from_regressor(Y.reshape(-1, Y.shape[-1]), f.reshape(-1), n_bodies=1)


def test_pointmass_places_points_around_the_mass_and_warm_starts(model, rich):
    sim, data = rich
    problem = payload_problem(model, sim, data)
    cold = solve(problem, "pointmass")
    assert cold.info["placement"] == ["unconstrained"] and not cold.info["approximation_limited"]
    assert abs(cold.info["approximation_gap"]) < 1.0  # residual variances
    points = cold.info["points"][0]
    com = inertia_from_theta(sim.true_theta)[1]
    assert np.linalg.norm(points.mean(axis=0) - com) < 0.01  # centred on the payload
    assert np.ptp(points, axis=0).max() < 0.3
    warm = solve(problem, "pointmass", initvals=cold)
    assert warm.info["osqp"][1] is cold.info["osqp"][1]  # the same OSQP solver, updated
    assert warm.info["placement"] == ["warm_start"]
    np.testing.assert_allclose(warm.bodies[0], cold.bodies[0], rtol=1e-4, atol=1e-7)


def test_pointmass_without_data_on_a_body_places_points_at_the_prior():
    rng = np.random.default_rng(0)
    prior = theta_from_inertia(2.0, np.array([0.1, 0.0, 0.2]), np.diag([0.01, 0.02, 0.015]))
    Y = np.hstack([np.zeros((30, 10)), rng.normal(size=(30, 2))])  # the body is not observed
    problem = Problem.from_regressor(
        Y, rng.normal(size=30), n_bodies=1, prior=np.concatenate([prior, np.zeros(2)])
    )
    solution = solve(problem, "pointmass")
    assert solution.info["placement"] == ["prior"]
    assert np.linalg.norm(solution.info["points"][0].mean(axis=0) - [0.1, 0.0, 0.2]) < 1e-9


# ---- cad_prior -------------------------------------------------------------------------------


def test_cad_prior_beats_lmi_on_poorly_excited_data(model, poor):
    sim, data = poor
    estimator = estimator_with(model, sim, data, prior=off_prior(sim.true_theta))
    lmi = inertia_error(estimator.solve("lmi").theta, sim.true_theta)
    estimate = estimator.solve("cad_prior")
    assert check_consistency(estimate.theta).fully_consistent
    assert lmi > 0.2  # the data barely determine the inertia
    assert inertia_error(estimate.theta, sim.true_theta) < lmi - 0.05


def test_cad_prior_matches_lmi_on_rich_data(model, rich):
    sim, data = rich
    estimator = estimator_with(model, sim, data, prior=off_prior(sim.true_theta))
    lmi = estimator.solve("lmi")
    estimate = estimator.solve("cad_prior")
    assert (
        inertia_error(estimate.theta, sim.true_theta)
        <= inertia_error(lmi.theta, sim.true_theta) + 0.01
    )
    assert abs(estimate.mass - sim.true_theta[0]) < 0.01
    assert estimate.residual_rms == pytest.approx(lmi.residual_rms, rel=0.01)  # unweighted


def test_pseudo_inertia_metric_measures_relative_size():
    theta = theta_from_inertia(1.5, np.array([0.03, -0.02, 0.07]), np.diag([2e-3, 3e-3, 2.5e-3]))
    metric = pseudo_inertia_metric(theta)
    assert theta @ metric @ theta == pytest.approx(1.0)  # (1 + eps) theta is eps away
    assert np.linalg.eigvalsh(metric)[0] > 0
    assert not np.any(pseudo_inertia_metric(np.zeros(10)))  # no mass: no metric


def test_cad_prior_forms_and_options():
    rng = np.random.default_rng(3)
    truth = theta_from_inertia(1.0, np.array([0.0, 0.0, 0.05]), np.diag([1e-3, 2e-3, 1.5e-3]))
    Y = rng.normal(size=(120, 10))
    problem = Problem.from_regressor(
        Y, Y @ truth + 0.01 * rng.normal(size=120), n_bodies=1, prior=1.2 * truth
    )
    posterior = solve(problem, "cad_prior")
    assert posterior.info["prior_std"] == 0.2 and posterior.info["prior_scale"] > 0
    assert posterior.info["sigma2"] == pytest.approx(1e-4, rel=0.5)
    assert solve(problem, "cad_prior", prior_std=None).message.startswith("null space")
    with pytest.raises(ProblemError, match="prior_std"):
        solve(problem, "cad_prior", prior_std=0.0)


# ---- the prior's sources -----------------------------------------------------------------------


def test_prior_from_a_urdf_link_is_the_link_and_what_lies_beyond_in_the_sensor_frame(model):
    hand = prior_from_link(model, "panda_hand", PANDA_FLANGE)
    np.testing.assert_allclose(
        hand, SensorKinematics(model, PANDA_FLANGE).subtree_inertia(), atol=1e-12
    )
    assert hand[0] == pytest.approx(0.73 + 2 * 0.015)  # the hand and its two fingers
    in_hand_frame = prior_from_link(model, "panda_hand", "panda_hand")
    assert in_hand_frame[0] == pytest.approx(hand[0])
    assert not np.allclose(in_hand_frame[1:4], hand[1:4])  # another frame: another first moment
    with pytest.raises(ConfigError, match="nope"):
        prior_from_link(model, "nope", PANDA_FLANGE)
    with pytest.raises(ConfigError, match="mass"):
        prior_from_link(model, "panda_hand_tcp", PANDA_FLANGE)  # nothing there


def write_result(path: Path, frame: str, theta: np.ndarray) -> Path:
    path.write_text(json.dumps({"method": "lmi", "bodies": [body_json("payload", frame, theta)]}))
    return path


def test_prior_from_a_result_json_must_be_in_the_sensor_frame(tmp_path):
    theta = off_prior(theta_from_inertia(1.0, np.array([0.0, 0.0, 0.05]), np.eye(3) * 1e-3))
    path = write_result(tmp_path / "prior.json", PANDA_FLANGE, theta)
    np.testing.assert_allclose(prior_from_result(path, PANDA_FLANGE), theta)
    with pytest.raises(ConfigError, match="not in the sensor frame"):
        prior_from_result(path, "panda_hand")
    with pytest.raises(ConfigError, match="cannot read"):
        prior_from_result(tmp_path / "absent.json", PANDA_FLANGE)


def test_the_node_default_prior_is_the_urdf_beyond_the_sensor(model):
    kinematics = SensorKinematics(model, PANDA_FLANGE)
    np.testing.assert_allclose(resolve_payload_prior("", kinematics), kinematics.subtree_inertia())
    assert resolve_payload_prior("none", kinematics) is None
    assert resolve_payload_prior("", SensorKinematics(model, "panda_hand_tcp")) is None


# ---- cad_prior without a prior: refused up front -----------------------------------------------


def test_estimator_refuses_cad_prior_without_a_prior(model):
    with pytest.raises(ValueError, match="needs the payload's CAD values"):
        EstimatorConfig(method="cad_prior")
    estimator = PayloadEstimator(SensorKinematics(model, PANDA_FLANGE))
    with pytest.raises(ValueError, match="needs the payload's CAD values"):
        estimator.configure_solver("cad_prior", {})
    assert estimator.config.method == "lmi"  # unchanged
    with pytest.raises(ValueError, match="prior"):
        EstimatorConfig(prior=(1.0, 2.0))


PAYLOAD = {"urdf_path": PANDA, "sensor_frame": PANDA_FLANGE, "method": "cad_prior"}


def test_node_startup_refuses_cad_prior_without_a_prior():
    with pytest.raises(StartupError, match="'method'.*payload_prior") as raised:
        settings_from_parameters(dict(PAYLOAD, payload_prior="none"))
    assert "result JSON" in str(raised.value) and "URDF link" in str(raised.value)
    with pytest.raises(StartupError, match="'payload_prior'.*no file"):
        settings_from_parameters(dict(PAYLOAD, payload_prior="/absent/prior.json"))
    # the default (the URDF beyond the sensor) has nothing beyond the TCP frame
    settings = settings_from_parameters(dict(PAYLOAD, sensor_frame="panda_hand_tcp"))
    with pytest.raises(StartupError, match="'method'.*no links with mass beyond"):
        build_session(settings)
    with pytest.raises(StartupError, match="'payload_prior'"):
        build_session(settings_from_parameters(dict(PAYLOAD, payload_prior="no_such_link")))


def test_node_with_a_prior_builds_and_refuses_a_runtime_switch_without_one(model, tmp_path):
    session = build_session(settings_from_parameters(PAYLOAD))  # default: the hand
    assert session.prior_available and session.estimator.config.method == "cad_prior"
    np.testing.assert_allclose(
        session.estimator.config.prior, SensorKinematics(model, PANDA_FLANGE).subtree_inertia()
    )
    path = write_result(
        tmp_path / "p.json",
        PANDA_FLANGE,
        off_prior(theta_from_inertia(1.0, np.array([0.0, 0.0, 0.05]), np.eye(3) * 1e-3)),
    )
    session = build_session(settings_from_parameters(dict(PAYLOAD, payload_prior=str(path))))
    assert session.estimator.config.prior[0] == pytest.approx(1.2)
    settings = settings_from_parameters(
        {"urdf_path": PANDA, "sensor_frame": PANDA_FLANGE, "payload_prior": "none"}
    )
    with pytest.raises(ValueError, match="needs the payload's CAD values"):
        validate_change(settings, {"method": "cad_prior"}, (6, 16), build_session(settings))
    assert validate_change(settings, {"method": "cad_prior"}, (6, 16)).method == "cad_prior"


# ---- fit-payload --prior ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def payload_npz(rich, tmp_path_factory) -> Path:
    sim, (t, q, dq, wrench) = rich
    path = tmp_path_factory.mktemp("priors") / "panda.npz"
    keep = slice(0, 2400)
    np.savez(
        path,
        t=t[keep],
        joint_names=np.array(PANDA_ARM_JOINTS),
        q=q[keep],
        dq=dq[keep],
        wrench=wrench[keep],
        wrench_frame=PANDA_FLANGE,
    )
    return path


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "extra, fragment",
    [
        ([], "needs the payload's CAD values as a prior: give --prior RESULT.json or --prior-link"),
        (["--prior-urdf", PANDA], "--prior-urdf needs --prior-link"),
        (["--prior", "x.json", "--prior-link", "panda_hand"], "not both"),
        (["--prior", "absent.json"], "cannot read"),
        (["--prior-link", "nope"], "frame 'nope'"),
    ],
)
def test_fit_payload_cad_prior_refuses_a_missing_or_bad_prior(capsys, payload_npz, extra, fragment):
    code, out, err = run_cli(
        capsys,
        "fit-payload",
        "--data",
        str(payload_npz),
        "--urdf",
        PANDA,
        "--sensor-frame",
        PANDA_FLANGE,
        "--method",
        "cad_prior",
        *extra,
    )
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and fragment in err, err


def test_fit_payload_cad_prior_with_a_result_json_or_a_urdf_link(
    capsys, tmp_path, payload_npz, rich
):
    sim, _ = rich
    prior = write_result(tmp_path / "prior.json", PANDA_FLANGE, off_prior(sim.true_theta))
    out_json = tmp_path / "fit.json"
    code, out, _ = run_cli(
        capsys,
        "fit-payload",
        "--data",
        str(payload_npz),
        "--urdf",
        PANDA,
        "--sensor-frame",
        PANDA_FLANGE,
        "--method",
        "cad_prior",
        "--prior",
        str(prior),
        "--json",
        str(out_json),
    )
    assert code == 0 and "prior" in out
    result = json.loads(out_json.read_text())
    assert result["method"] == "cad_prior"
    assert result["bodies"][0]["mass"] == pytest.approx(sim.true_theta[0], rel=0.01)
    code, out, _ = run_cli(
        capsys,
        "fit-payload",
        "--data",
        str(payload_npz),
        "--urdf",
        PANDA,
        "--sensor-frame",
        PANDA_FLANGE,
        "--method",
        "cad_prior",
        "--prior-urdf",
        PANDA,
        "--prior-link",
        "panda_hand",
    )
    assert code == 0 and "prior 'panda_hand': mass 0.7600 kg" in out
