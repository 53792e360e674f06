"""Link identification from joint torques: regressor identity, base parameters, fits, real data."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from helpers.paths import SHARED_DATA
from inertia_id_ros.chain.base_parameters import base_parameters, base_parameters_from_gram
from inertia_id_ros.chain.differentiation import derive_torque_data
from inertia_id_ros.chain.friction import JointDrive, smooth_sign
from inertia_id_ros.chain.identify import identify_links
from inertia_id_ros.chain.link_fit import fit_links, link_problem, select_prior_weight
from inertia_id_ros.chain.links import (
    JointTorqueData,
    LinkModel,
    predict_torques,
    regression_system,
    torque_error,
)
from inertia_id_ros.core.inertia import (
    check_consistency,
    inertia_from_theta,
    pseudo_inertia,
    theta_from_inertia,
)
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.options import DEFAULT_PRIOR_WEIGHT
from inertia_id_ros.solvers import CONSISTENCY_MARGIN, ellipsoid_matrix, solve

PANDA_ARM = tuple(f"panda_joint{i}" for i in range(1, 8))
KUKA_DIR = SHARED_DATA / "kuka_lwr4"


def fourier_trajectory(
    n_joints: int,
    n_samples: int,
    rate: float,
    rng: np.random.Generator,
    amplitude: float = 0.6,
    harmonics: int = 4,
    base_frequency: float = 0.1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exciting trajectory ``q = q0 + Σ_l a_l sin(l w t) + b_l cos(l w t)`` (rad) with exact
    derivatives; returns (N, n) positions, velocities, accelerations."""
    t = np.arange(n_samples)[:, None] / rate
    q0 = rng.uniform(-0.5, 0.5, n_joints)
    q = np.tile(q0, (n_samples, 1))
    dq, ddq = np.zeros((2, n_samples, n_joints))
    for harmonic in range(1, harmonics + 1):
        w = 2.0 * np.pi * base_frequency * harmonic
        a, b = rng.normal(0.0, amplitude / harmonic, (2, n_joints))
        s, c = np.sin(w * t), np.cos(w * t)
        q += a * s + b * c
        dq += w * (a * c - b * s)
        ddq += -(w**2) * (a * s + b * c)
    return q, dq, ddq


def drive_torques(
    drive: JointDrive, dq: np.ndarray, ddq: np.ndarray, values: dict[str, float]
) -> np.ndarray:
    """``viscous dq + coulomb s(dq) + offset + armature ddq`` written out (missing terms: 0; a
    non-estimated armature is the drive's reflected inertia)."""
    armature = values.get("armature", 0.0 if drive.armature else drive.reflected_inertia)
    coulomb = values.get("coulomb", 0.0) * smooth_sign(dq, drive.coulomb_velocity)
    return values.get("viscous", 0.0) * dq + coulomb + values.get("offset", 0.0) + armature * ddq


def perturbed_consistent_thetas(thetas: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Physically consistent links near ``thetas``: mass and inertia scaled, COM moved by ~1 cm."""
    out = []
    for theta in thetas:
        mass, com, inertia_com = inertia_from_theta(theta)
        out.append(
            theta_from_inertia(
                mass * rng.uniform(0.8, 1.2),
                com + rng.normal(0.0, 0.01, 3),
                inertia_com * rng.uniform(0.8, 1.2),
            )
        )
    return np.array(out)


def test_smooth_sign() -> None:
    v = np.array([-1.0, -1e-3, 0.0, 1e-3, 1.0])
    np.testing.assert_array_equal(smooth_sign(v, 0.0), np.sign(v))
    np.testing.assert_allclose(smooth_sign(v, 0.01), np.tanh(v / 0.01))
    with pytest.raises(ValueError, match="coulomb_velocity"):
        JointDrive(coulomb_velocity=-1.0)


def test_regressor_matches_rnea_plus_drives() -> None:
    rng = np.random.default_rng(1)
    drives = {  # various estimated terms; a known armature N² I_rotor on joints 3 and 6
        "panda_joint1": JointDrive(),
        "panda_joint2": JointDrive(coulomb_velocity=0.05, offset=False),
        "panda_joint3": JointDrive(armature=False, rotor_inertia=2e-5, gear_ratio=100.0),
        "panda_joint4": JointDrive(viscous=False, coulomb=False, offset=False, armature=False),
        "panda_joint5": JointDrive(coulomb_velocity=0.01, effort_scale=2.5),
        "panda_joint6": JointDrive(
            viscous=False, armature=False, rotor_inertia=1e-4, gear_ratio=50.0
        ),
    }
    model = LinkModel.from_urdf(example_robot_urdf("panda"), joints=PANDA_ARM, drives=drives)
    assert model.n_parameters == 70 + 4 + 3 + 3 + 0 + 4 + 2 + 4
    assert len(model.parameter_names) == model.n_parameters
    assert all(
        model.parameter_names[i].rsplit(".", 1)[1] in {"viscous", "coulomb", "armature"}
        for i in model.nonnegative
    )
    x = rng.normal(size=model.n_parameters)  # RNEA is linear in theta: any theta with m != 0
    q, dq, ddq = rng.uniform(-2, 2, (3, 20, 7))
    data = JointTorqueData(q, dq, ddq, np.zeros((20, 7)))

    # independent: pinocchio RNEA with the links' theta, plus the drive terms written out
    pin_model = model.model.copy()
    for j, theta in enumerate(model.link_parameters(x), start=1):
        pin_model.inertias[j] = pin.Inertia.FromDynamicParameters(theta)
    pin_data = pin_model.createData()
    expected = np.stack([pin.rnea(pin_model, pin_data, q[k], dq[k], ddq[k]) for k in range(20)])
    for j, (joint, drive) in enumerate(zip(model.joint_names, model.drives)):
        values = model.drive_parameters(x)[joint]
        expected[:, j] += drive_torques(drive, dq[:, j], ddq[:, j], values)

    np.testing.assert_allclose(predict_torques(model, x, data), expected, atol=1e-9)
    np.testing.assert_allclose(model.inverse_dynamics(x, q, dq, ddq), expected, atol=1e-9)
    efforts = expected / np.array([d.effort_scale for d in model.drives])
    np.testing.assert_allclose(model.measured_torques(efforts), expected, atol=1e-12)
    measured = JointTorqueData(q, dq, ddq, efforts)
    assert torque_error(model, x, measured).overall < 1e-9


def test_data_columns_follow_joint_names() -> None:
    model = LinkModel.from_urdf(example_robot_urdf("panda"), joints=PANDA_ARM)
    rng = np.random.default_rng(2)
    q, dq, ddq, tau = rng.normal(size=(4, 5, 9))
    names = tuple(reversed(PANDA_ARM)) + ("panda_finger_joint1", "panda_finger_joint2")
    order = [names.index(j) for j in PANDA_ARM]
    shuffled = JointTorqueData(q, dq, ddq, tau, names)
    plain = JointTorqueData(q[:, order], dq[:, order], ddq[:, order], tau[:, order])
    np.testing.assert_allclose(
        predict_torques(model, model.prior, shuffled), predict_torques(model, model.prior, plain)
    )
    with pytest.raises(ValueError, match="lacks joints"):
        partial = JointTorqueData(q[:, :3], dq[:, :3], ddq[:, :3], tau[:, :3], names[:3])
        predict_torques(model, model.prior, partial)
    with pytest.raises(ValueError, match="no joint names"):
        predict_torques(model, model.prior, JointTorqueData(q, dq, ddq, tau))


def test_sub_chain_locks_other_joints() -> None:
    """Joints 1-4 identified, 5-7 and the fingers locked: the reduced model's torques equal the
    full model's with the locked joints held still at their positions."""
    rng = np.random.default_rng(3)
    full = pin.buildModelFromUrdf(str(example_robot_urdf("panda")))
    locked = {
        "panda_joint5": 0.3,
        "panda_joint6": 1.2,
        "panda_joint7": -0.4,
        "panda_finger_joint1": 0.02,
    }
    arm = PANDA_ARM[:4]
    samples = rng.uniform(-1, 1, (3, 10, 4))
    positions = {**locked, "panda_joint1": 0.5}  # entries for identified joints are ignored
    model = LinkModel.from_urdf(
        example_robot_urdf("panda"),
        joints=arm,
        locked_positions=positions,
        drives=JointDrive(False, False, False, False),
    )
    assert model.joint_names == arm and model.n_parameters == 40
    data = JointTorqueData(*samples, np.zeros((10, 4)))
    expected = []
    for k in range(10):
        q = pin.neutral(full)
        for name, value in locked.items():
            q[full.joints[full.getJointId(name)].idx_q] = value
        dq, ddq = np.zeros(full.nv), np.zeros(full.nv)
        for j, name in enumerate(arm):
            i = full.joints[full.getJointId(name)]
            q[i.idx_q], dq[i.idx_v], ddq[i.idx_v] = samples[:, k, j]
        expected.append(pin.rnea(full, full.createData(), q, dq, ddq)[:4])
    np.testing.assert_allclose(
        predict_torques(model, model.prior, data), np.array(expected), atol=1e-9
    )
    total_mass = sum(full.inertias[j].mass for j in range(4, full.njoints))
    assert model.link_parameters(model.prior)[3, 0] == pytest.approx(total_mass)


def test_base_parameters_of_panda() -> None:
    rng = np.random.default_rng(4)
    urdf = example_robot_urdf("panda")
    data = JointTorqueData(
        rng.uniform(-2, 2, (200, 7)),
        rng.normal(size=(200, 7)),
        rng.normal(size=(200, 7)),
        np.zeros((200, 7)),
    )
    links_only = LinkModel.from_urdf(
        urdf, joints=PANDA_ARM, drives=JointDrive(False, False, False, False)
    )
    base = base_parameters(links_only, data)
    assert base.rank == 43  # the Panda's 43 base inertial parameters (Gaz et al. 2019)
    assert base.null_space.shape == (70, 27)
    assert set(base.no_effect) >= {"panda_link1.m", "panda_link1.mcz", "panda_link1.Ixx"}
    assert "panda_link1.Izz" in base.unidentifiable  # grouped with link 2's inertia
    assert {"panda_link7.Izz", "panda_link7.mcx"}.isdisjoint(base.unidentifiable)
    Y = links_only.joint_torque_regressor(data.positions, data.velocities, data.accelerations)
    Y = Y.reshape(-1, 70)
    assert np.abs(Y @ base.null_space).max() < 1e-9 * np.abs(Y).max()
    x1, x2 = rng.normal(size=(2, 70))
    x2 = x1 + base.null_space @ rng.normal(size=27)  # same base parameters, same torques
    np.testing.assert_allclose(base.from_standard(x1), base.from_standard(x2), atol=1e-9)
    assert len(base.expressions()) == 43 and len(base.null_directions()) == 27

    with_drives = LinkModel.from_urdf(urdf, joints=PANDA_ARM)  # + all four drive terms
    base = base_parameters(with_drives, data)
    assert base.rank == 43 + 28 - 2
    # the armatures of joints 1 and 2 only add to the links' inertia about those axes
    assert {n for n in base.unidentifiable if "joint" in n} == {
        "panda_joint1.armature",
        "panda_joint2.armature",
    }


@pytest.mark.parametrize("n_samples", [200, 10])
def test_base_parameters_from_the_gram_alone_are_those_of_the_rows(n_samples: int) -> None:
    """A window keeps only Y^T Y: same rank, unidentifiable set and null space as the rows' QR
    (10 random states: a nearly degenerate regressor, diagonals down to 1e-5 relative)."""
    rng = np.random.default_rng(7)
    data = JointTorqueData(
        rng.uniform(-2, 2, (n_samples, 7)),
        rng.normal(size=(n_samples, 7)),
        rng.normal(size=(n_samples, 7)),
        np.zeros((n_samples, 7)),
    )
    model = LinkModel.from_urdf(example_robot_urdf("panda"), joints=PANDA_ARM)
    rows = base_parameters(model, data)
    gram = link_problem(model, data, prior_weight=0.0).gram
    from_gram = base_parameters_from_gram(model.parameter_names, gram)
    assert from_gram.rank == rows.rank and set(from_gram.unidentifiable) == set(rows.unidentifiable)
    assert set(from_gram.no_effect) == set(rows.no_effect)
    Y = model.joint_torque_regressor(data.positions, data.velocities, data.accelerations)
    Y = Y.reshape(-1, model.n_parameters)
    assert np.abs(Y @ from_gram.null_space).max() < 1e-6 * np.abs(Y).max()
    with pytest.raises(ValueError, match="gram must be"):
        base_parameters_from_gram(model.parameter_names[:-1], gram)


def simulated_panda(
    rng: np.random.Generator, n_samples: int, noise: float
) -> tuple[LinkModel, np.ndarray, JointTorqueData]:
    """Panda with perturbed (consistent) links and known drives; URDF prior; noisy torques."""
    model = LinkModel.from_urdf(
        example_robot_urdf("panda"), joints=PANDA_ARM, drives=JointDrive(coulomb_velocity=0.02)
    )
    thetas = perturbed_consistent_thetas(model.link_parameters(model.prior), rng)
    drives = np.column_stack(
        [
            rng.uniform(0.2, 0.6, 7),
            rng.uniform(0.3, 1.0, 7),
            rng.normal(0.0, 0.3, 7),
            rng.uniform(0.1, 0.4, 7),
        ]
    )
    x_true = np.concatenate([thetas.ravel(), drives.ravel()])
    q, dq, ddq = fourier_trajectory(7, n_samples, 50.0, rng)
    tau = model.inverse_dynamics(x_true, q, dq, ddq) + rng.normal(0.0, noise, (n_samples, 7))
    return model, x_true, JointTorqueData(q, dq, ddq, tau)


def test_simulated_fit_recovers_friction_and_armature() -> None:
    rng = np.random.default_rng(5)
    model, x_true, data = simulated_panda(rng, 1500, noise=0.05)
    fit = fit_links(model, data, prior_weight=1e-7)
    assert fit.fully_consistent, [r.problems for r in fit.consistency]
    base = base_parameters(model, data)
    truth, estimate = model.drive_parameters(x_true), model.drive_parameters(fit.x)
    for joint in model.joint_names:
        for term in ("viscous", "coulomb", "offset", "armature"):
            if f"{joint}.{term}" in base.unidentifiable:
                continue
            assert estimate[joint][term] == pytest.approx(truth[joint][term], abs=0.03), (
                joint,
                term,
            )
    base_true, base_fit = base.from_standard(x_true), base.from_standard(fit.x)
    assert np.all(np.abs(base_fit - base_true) <= 0.02 + 0.02 * np.abs(base_true))
    _, _, fresh = simulated_panda(np.random.default_rng(6), 300, noise=0.0)  # another trajectory
    q, dq, ddq = fresh.positions, fresh.velocities, fresh.accelerations
    held_out = JointTorqueData(q, dq, ddq, model.inverse_dynamics(x_true, q, dq, ddq))
    assert torque_error(model, fit.x, held_out).overall < 0.02


def test_badly_excited_links_stay_consistent() -> None:
    """A few samples of slow motion near one pose: least squares breaks the links, LMI does not."""
    rng = np.random.default_rng(7)
    model, x_true, _ = simulated_panda(rng, 10, noise=0.0)
    q = 0.3 + 0.02 * rng.normal(size=(25, 7))
    dq, ddq = 0.05 * rng.normal(size=(2, 25, 7))
    tau = model.inverse_dynamics(x_true, q, dq, ddq) + rng.normal(0.0, 0.2, (25, 7))
    data = JointTorqueData(q, dq, ddq, tau)
    ols = fit_links(model, data, method="ols", prior_weight=0.0)
    assert not all(check_consistency(t).fully_consistent for t in model.link_parameters(ols.x))
    for weight in (0.0, DEFAULT_PRIOR_WEIGHT):
        fit = fit_links(model, data, prior_weight=weight, initvals=ols.x)
        for link, theta in zip(model.link_names, fit.link_parameters):
            report = check_consistency(theta)
            assert report.fully_consistent, (weight, link, report.problems)
        drives = fit.x[70:].reshape(7, 4)
        assert np.all(drives[:, [0, 1, 3]] >= -1e-9)  # viscous, Coulomb, armature
    # a bounding ellipsoid (a 10 cm ball at the URDF COM) reaches the solver: tr(J Q) >= 0
    _, com, _ = inertia_from_theta(model.link_parameters(model.prior)[6])
    ellipsoids = [None] * 6 + [ellipsoid_matrix(com, np.full(3, 0.1))]
    fit = fit_links(model, data, prior_weight=0.0, bounding_ellipsoids=ellipsoids)
    assert fit.solution.found
    assert np.trace(pseudo_inertia(fit.link_parameters[6]) @ ellipsoids[6]) >= -1e-9
    assert fit.fully_consistent


def test_consistent_solve_of_seven_links_and_drives_matches_cvxpy() -> None:
    """The 98-parameter problem (7 links, 4 drive terms per joint; viscous, Coulomb and armature
    bounded below by 0): the fast solve (semismooth Newton, cold and warm; interior point) is the
    Clarabel optimum, with the LMI and some bounds active."""
    model, _, data = simulated_panda(np.random.default_rng(3), 100, noise=1.0)
    problem = link_problem(model, data)
    assert problem.n_params == 98 and len(problem.nonnegative) == 21
    reference = solve(problem, "lmi", backend="cvxpy")
    newton = solve(problem, "lmi")
    interior_point = solve(problem, "lmi", use_active_set=False)
    warm = solve(
        problem.add_rows(*regression_system(model, data.subset(slice(0, 5)))),
        "lmi",
        initvals=newton,
    )
    assert newton.info["algorithm"] == warm.info["algorithm"] == "active_set"
    assert interior_point.info["algorithm"] == "interior_point"
    assert solve(problem, "ols").min_eigs.min() < 0
    assert np.sum(newton.x[list(problem.nonnegative)] == 0.0) >= 2  # active bounds
    for solution in (newton, interior_point):
        assert solution.found and solution.fully_consistent
        assert solution.min_eigs.min() >= (1 - 1e-6) * CONSISTENCY_MARGIN  # up to round-off
        assert solution.objective <= reference.objective * (1 + 1e-9)
        assert np.linalg.norm(solution.x - reference.x) <= 5e-6 * np.linalg.norm(reference.x)
    assert np.linalg.norm(newton.x - interior_point.x) <= 1e-6 * np.linalg.norm(newton.x)
    assert warm.found and warm.fully_consistent and warm.iterations < newton.iterations


def test_select_prior_weight_by_blocked_cross_validation() -> None:
    rng = np.random.default_rng(8)
    model, _, data = simulated_panda(rng, 400, noise=0.3)
    selection = select_prior_weight(model, data, weights=(1e-1, 1e-6, 1e-3), n_folds=3)
    np.testing.assert_array_equal(selection.weights, [1e-6, 1e-3, 1e-1])
    assert selection.cv_rms.shape == (3,) and np.all(np.isfinite(selection.cv_rms))
    assert selection.best == selection.weights[np.argmin(selection.cv_rms)]
    assert selection.cv_rms.min() > 0.25  # at least the noise level


@pytest.mark.parametrize("noise", [0.03, 3.0])
def test_prior_weight_descent_chooses_what_the_whole_grid_chooses(noise: float) -> None:
    """The descent evaluates fewer candidates, each to the grid search's score, and picks the
    grid search's best (a weak prior with little noise, a stronger one with much)."""
    rng = np.random.default_rng(9)
    model, _, data = simulated_panda(rng, 300, noise=noise)
    weights = tuple(np.logspace(-8, -1, 8))
    grid = select_prior_weight(model, data, weights=weights, n_folds=3)
    descent = select_prior_weight(model, data, weights=weights, n_folds=3, search="descent")
    evaluated = ~np.isnan(descent.cv_rms)
    assert 3 <= evaluated.sum() < len(weights)
    np.testing.assert_allclose(descent.cv_rms[evaluated], grid.cv_rms[evaluated], rtol=1e-4)
    assert descent.best == grid.best
    with pytest.raises(ValueError, match="search must be one of"):
        select_prior_weight(model, data, search="golden")


def load_kuka_run(index: int, step: int) -> dict[str, np.ndarray]:
    if not KUKA_DIR.is_dir():
        pytest.skip(
            f"KUKA LWR4+ recordings not found at {KUKA_DIR} (the repository's sibling "
            "shared/data/kuka_lwr4, see its README.md)"
        )
    with np.load(KUKA_DIR / f"measurements_{index}.npz") as run:
        return {key: run[key][::step] for key in run.files}


def test_kuka_real_data_consistent_fit_predicts_held_out_runs() -> None:
    """benchmarks/kuka_lwr4.py on every 2nd sample: fit-links' defaults on run 1 (derivative
    filter, base tilt, Coulomb width and prior weight chosen on run 1), the acceptance on runs 2
    and 3 (differentiated by the same filter)."""
    runs = [load_kuka_run(i, 2) for i in (1, 2, 3)]
    model = LinkModel.from_urdf(KUKA_DIR / "kuka_lwr4.urdf")
    r1 = runs[0]
    identification = identify_links(
        model, r1["times"], r1["positions"], r1["velocities"], None, r1["torques"]
    )
    fit, fitted = identification.fit, identification.model
    sets = [
        derive_torque_data(
            r["times"],
            r["positions"],
            r["velocities"],
            r["torques"],
            identification.differentiation,
            delay=identification.delay.delay,
        )
        for r in runs
    ]
    assert fit.fully_consistent
    ratios = fitted.link_parameters(fit.x)[:, 0] / model.link_parameters(model.prior)[:, 0]
    assert np.all((ratios >= 0.5) & (ratios <= 2.0))
    assert 0.01 < identification.tilt.roll < 0.04  # the base is tilted about 1.3 degrees
    assert 0.005 < identification.delay.delay < 0.02  # the torques lag the motion about 12 ms
    ols = fit_links(model, sets[0], method="ols", prior_weight=0.0)
    assert (
        torque_error(fitted, fit.x, sets[1]).overall
        <= 1.05 * torque_error(model, ols.x, sets[1]).overall
    )
    assert torque_error(fitted, fit.x, sets[2]).overall <= 0.37
    assert torque_error(model, ols.x, sets[2]).overall > 1.0  # least squares does not generalise
