"""The WAM of Sousa & Cortesão from its DH table: URDF kinematics = the DH product (pinocchio),
the committed URDF and links config match the generator, the base-parameter count, and their three
methods (the feasibility-constrained and closest feasible estimates are feasible)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from inertia_id_ros.chain.base_parameters import base_parameters
from inertia_id_ros.chain.friction import JointDrive
from inertia_id_ros.chain.links import regression_system
from inertia_id_ros.core.inertia import check_consistency
from inertia_id_ros.core.robots import load_model
from inertia_id_ros.modes.parameters import parameters_from_file
from inertia_id_ros.sim import sousa2014
from inertia_id_ros.sim.wam import (
    WAM_DH,
    WAM_FLANGE,
    WAM_JOINTS,
    WAM_LINKS,
    WAM_URDF,
    dh_forward_kinematics,
    dh_transform,
    wam_link_model,
    wam_model,
    wam_simulator,
    wam_urdf,
)
from inertia_id_ros.solvers import feasibility

REPO_CONFIG = WAM_URDF.parent


def test_dh_transform_is_rz_tz_tx_rx():
    alpha, a, d, q = -0.7, 0.045, 0.55, 0.3
    expected = (
        pin.SE3(pin.rpy.rpyToMatrix(0, 0, q), np.zeros(3))
        * pin.SE3(np.eye(3), np.array([0, 0, d]))
        * pin.SE3(np.eye(3), np.array([a, 0, 0]))
        * pin.SE3(pin.rpy.rpyToMatrix(alpha, 0, 0), np.zeros(3))
    )
    assert np.allclose(dh_transform(alpha, a, d, q), expected.homogeneous)


def test_urdf_forward_kinematics_is_the_dh_product():
    model = wam_model()
    data = model.createData()
    assert tuple(model.names[1:]) == WAM_JOINTS
    for q in np.random.default_rng(0).uniform(-np.pi, np.pi, (5, 7)):
        pin.forwardKinematics(model, data, q)
        pin.updateFramePlacements(model, data)
        dh = dh_forward_kinematics(WAM_DH, q)
        for k in range(1, 7):  # DH frame k: where joint k+1 sits on link k
            placement = data.oMi[k] * model.jointPlacements[k + 1]
            assert np.allclose(placement.homogeneous, dh[k - 1], atol=1e-12), k
        assert np.allclose(data.oMf[model.getFrameId(WAM_FLANGE)].homogeneous, dh[6], atol=1e-12)
    # at q = 0 the flange is straight up: d3 + d5 + d7 = 0.91 m
    assert np.allclose(dh_forward_kinematics(WAM_DH, np.zeros(7))[6][:3, 3], [0, 0, 0.91])


def test_committed_urdf_and_config_match():
    assert WAM_URDF.read_text() == wam_urdf()
    model = load_model(WAM_URDF)
    assert sum(inertia.mass for inertia in model.inertias) == pytest.approx(27.04)
    assert all(
        check_consistency(inertia.toDynamicParameters()).fully_consistent
        for inertia in model.inertias[1:]
    )
    parameters = parameters_from_file(REPO_CONFIG / "wam_links.yaml")
    assert parameters["mode"] == "links" and tuple(parameters["joints"]) == WAM_JOINTS
    assert len(WAM_LINKS) == 7


def test_base_parameter_count():
    """98 standard parameters; 43 inertial base parameters, 48 with drive inertia (joint 1's
    armature adds to link 1's Izz, ...), 69 with viscous, Coulomb and offset (21 more)."""
    t = np.arange(500) / 25.0
    rng = np.random.default_rng(0)
    counts = {}
    for name, drive in (
        ("inertial", JointDrive(False, False, False, False)),
        ("armature", JointDrive(False, False, False, True)),
        ("all", JointDrive()),
    ):
        model = wam_link_model(drive)
        counts[name] = base_parameters(model, wam_simulator(0, links=model).measure(t, rng)).rank
    assert wam_link_model().n_parameters == 98
    assert counts == {"inertial": 43, "armature": 48, "all": 69}


@pytest.fixture(scope="module")
def experiment() -> sousa2014.SousaResult:
    return sousa2014.run(seed=0, duration=12.0)


def test_feasibility_constrained_and_closest_estimates_are_feasible(experiment):
    model = wam_link_model()
    bounds = sousa2014.PhysicalBounds.from_links(WAM_LINKS)
    assert experiment.n_base == 69 and experiment.n_standard == 98
    for method in ("closest", "constrained"):
        estimate = experiment.estimates[method]
        assert estimate.feasible, method
        thetas = model.link_parameters(estimate.x)
        assert all(
            report.min_pseudo_inertia_eig > -1e-7 for report in feasibility.check(estimate.x, 7)
        )
        assert all(estimate.x[i] >= -1e-7 for i in model.nonnegative)
        assert all(check_consistency(theta, tol=1e-7).fully_consistent for theta in thetas)
        assert bounds.hold(estimate.x, 7) and thetas[:, 0].sum() <= bounds.max_total_mass + 1e-7
    # the unconstrained base estimate is not feasible here (noise on the poorly excited wrist)
    assert not experiment.estimates["ols"].feasible
    # the feasibility-constrained estimate predicts new data about as well as OLS (Table 8's
    # finding); the closest feasible correction ignores the data and may predict worse
    constrained = experiment.estimates["constrained"].validation_error
    assert np.all(constrained < experiment.estimates["ols"].validation_error * 1.2 + 0.5)


def test_closest_base_is_the_packages_closest_feasible_without_bounds():
    """With bounds that never bind, the closest feasible base parameters are those of
    solvers.feasibility.closest_feasible in the metric K^T K (||K (x' - x)||^2)."""
    model = wam_link_model()
    data = wam_simulator(0, sousa2014.DEFAULT_TORQUE_NOISE_STD, model).measure(
        np.arange(600) / 50.0, np.random.default_rng(0)
    )
    base = base_parameters(model, data)
    K = sousa2014.base_matrix(base)
    assert np.allclose(K @ np.arange(98.0), base.from_standard(np.arange(98.0)))
    Y, y = regression_system(model, data)
    beta = np.linalg.lstsq(Y[:, base.independent], y, rcond=None)[0]
    x_ols = np.zeros(98)
    x_ols[base.independent] = beta
    loose = sousa2014.PhysicalBounds(np.full((7, 3), -10.0), np.full((7, 3), 10.0), 1e6)
    ours = sousa2014.FeasibleSet(model, loose).closest_base(K, beta)
    reference = feasibility.closest_feasible(x_ols, 7, K.T @ K, nonnegative=model.nonnegative)
    assert np.linalg.norm(K @ ours - beta) > 1e-3  # OLS is infeasible: the correction moves it
    assert np.allclose(K @ ours, K @ reference, atol=1e-4 * np.abs(beta).max())


def test_table_has_every_joint_and_method(experiment):
    table = sousa2014.format_table(experiment)
    assert "69 base parameters" in table
    assert len([line for line in table.splitlines() if line[:1].isdigit()]) == 7
    assert table.splitlines()[-2].split()[1:] == ["NO", "yes", "yes"] * 2
