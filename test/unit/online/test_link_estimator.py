"""LinkEstimator: links and drives online from simulated joint states, input validation."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.estimators import rms_radius, solve_while_feeding
from inertia_id_ros.chain.actuators import ActuatorConfig, ChainConfig, go1_leg_config
from inertia_id_ros.chain.armatures import fit_chain
from inertia_id_ros.chain.base_parameters import base_parameters
from inertia_id_ros.chain.link_fit import fit_links
from inertia_id_ros.chain.links import JointTorqueData, LinkModel, predict_torques
from inertia_id_ros.core.inertia import check_consistency
from inertia_id_ros.core.significance import IDENTIFIED, IDENTIFIED_T, NO_EFFECT, PRIOR_ONLY
from inertia_id_ros.errors import EstimateUnavailable, SampleRejected
from inertia_id_ros.online.link_estimator import LinkEstimate, LinkEstimator, LinkEstimatorConfig
from inertia_id_ros.sim.torques import (
    DriveTruth,
    JointTorqueSimulator,
    leg_simulator,
    panda_torque_simulator,
    perturbed_links,
)

RATE = 250.0  # Hz
T0 = 1.7e9  # s, first stamp (a ROS epoch stamp)
HALF_WIDTH = 0.05  # s, the default filter half-width
EDGE = int(np.ceil(HALF_WIDTH * RATE))  # joint states within a half-width of one: 13
HIP, THIGH, KNEE = go1_leg_config().joints


def feed(
    estimator: LinkEstimator,
    sim: JointTorqueSimulator,
    duration: float,
    rng: np.random.Generator,
    velocities: bool = True,
    names: tuple[str, ...] | None = None,
) -> JointTorqueData:
    """Joint states of ``sim`` at RATE for ``duration`` s (the chain's joints, or ``names`` with
    the others at 0); returns the exact samples."""
    t = np.arange(0.0, duration, 1.0 / RATE)
    data = sim.measure(t, rng)
    names = sim.joint_names if names is None else names
    columns = [names.index(j) for j in sim.joint_names]
    values = np.zeros((3, len(names)))
    for k in range(t.size):
        values[:, columns] = data.positions[k], data.velocities[k], data.efforts[k]
        estimator.add_joint_state(
            T0 + t[k], names, values[0], values[1] if velocities else None, values[2]
        )
    return data


def leg(seed: int, **kwargs) -> JointTorqueSimulator:
    """The Go1 front-left leg with links perturbed from the URDF (the prior)."""
    links = go1_leg_config().link_model()
    thetas = perturbed_links(links.link_parameters(links.prior), np.random.default_rng(seed))
    return leg_simulator(seed=seed, link_thetas=thetas, **kwargs)


@pytest.fixture(scope="module", params=[True, False], ids=["velocities", "positions_only"])
def leg_online(
    request,
) -> tuple[JointTorqueSimulator, JointTorqueData, LinkEstimator, LinkEstimate]:
    """30 s of the Go1 leg at 250 Hz through the estimator (prior weight 1e-6, as offline)."""
    sim = leg(11)
    estimator = LinkEstimator(sim.links, LinkEstimatorConfig(window_sec=60.0, prior_weight=1e-6))
    data = feed(estimator, sim, 30.0, np.random.default_rng(11), velocities=request.param)
    return sim, data, estimator, (estimator.process(), estimator.solve())[1]


def test_every_link_is_consistent_and_the_drives_are_recovered(leg_online) -> None:
    """Viscous and Coulomb of every joint, the knee's armature (the one identifiable) within 5 %
    from 30 s; the offline fit on the same data does as well (test_leg.py: 10 % from 60 s)."""
    sim, _, estimator, estimate = leg_online
    assert all(check_consistency(theta).fully_consistent for theta in estimate.thetas)
    assert np.all(estimate.min_pseudo_inertia_eigs > 0)
    truth = dict(zip(sim.joint_names, sim.drives))
    for joint in sim.joint_names:
        for term in ("viscous", "coulomb"):
            assert getattr(estimate.drives[joint], term) == pytest.approx(
                getattr(truth[joint], term), rel=0.05
            ), (joint, term)
        assert estimate.drives[joint].coulomb_velocity == truth[joint].coulomb_velocity
    assert estimate.drives[KNEE].armature == pytest.approx(truth[KNEE].armature, rel=0.05)
    assert estimate.residual_rms == pytest.approx(0.1, rel=0.05)  # the torque noise (N·m)
    # every joint state but the first and last filter half-width is a sample of the window
    assert estimate.n_samples == len(estimator.window) == 30.0 * RATE - 2 * EDGE
    assert estimate.t_first == pytest.approx(T0 + HALF_WIDTH, abs=2 / RATE)
    assert estimate.t_last == pytest.approx(T0 + 30.0 - HALF_WIDTH, abs=2 / RATE)
    assert estimate.method == "lmi" and estimate.prior_weight == 1e-6
    assert estimate.solve_time > 0 and not estimate.message
    labels = estimate.determination  # identified only at |t| >= 3; the rest left to the prior
    assert labels is not None and f"{KNEE}.viscous" in labels.named(IDENTIFIED)
    identified = np.isin(labels.names, labels.named(IDENTIFIED))
    assert np.all(labels.t[identified] >= IDENTIFIED_T)
    assert set(labels.named(PRIOR_ONLY)) | set(labels.named(NO_EFFECT)) == set(
        estimate.unidentifiable
    )


def test_the_online_fit_is_the_offline_fit(leg_online) -> None:
    """The same problem as link_fit.fit_links on the exact samples (the online one differentiates
    the joint states): the same torques up to 5 % of the noise, the same base parameters."""
    sim, data, _, estimate = leg_online
    offline = fit_links(sim.links, data, prior_weight=1e-6)
    base = base_parameters(sim.links, data)
    assert estimate.rank == base.rank == 27
    assert set(estimate.unidentifiable) == set(base.unidentifiable)
    assert {f"{HIP}.armature", f"{THIGH}.armature"} <= set(estimate.unidentifiable)
    assert f"{KNEE}.armature" not in estimate.unidentifiable
    assert any(f"{HIP}.armature" in d for d in estimate.null_directions())
    difference = predict_torques(sim.links, estimate.x, data) - predict_torques(
        sim.links, offline.x, data
    )
    assert np.sqrt(np.mean(difference**2, axis=0)).max() < 0.005  # N·m; the noise is 0.1
    for joint, values in sim.links.drive_parameters(offline.x).items():
        for term in ("viscous", "coulomb"):
            assert getattr(estimate.drives[joint], term) == pytest.approx(values[term], rel=0.02)


def test_a_warm_started_solve_and_a_shorter_duration(leg_online) -> None:
    _, _, estimator, estimate = leg_online
    again = estimator.solve()
    assert np.allclose(again.x, estimate.x, atol=1e-6)
    recent = estimator.solve(duration=10.0)
    assert recent.n_samples == pytest.approx(10.0 * RATE, abs=2)
    assert recent.t_last == estimate.t_last and recent.t_first > estimate.t_first + 19.0
    with pytest.raises(EstimateUnavailable) as why:
        estimator.solve(method="ols")  # unconstrained: links come out inconsistent
    assert why.value.reason == "inconsistent" and "FL_" in why.value.message


@pytest.fixture(scope="module")
def leg_with_actuators() -> tuple[
    JointTorqueSimulator, JointTorqueData, LinkEstimator, list[LinkEstimate]
]:
    """60 s of the Go1 leg at 250 Hz through an estimator that knows the leg's actuators (one
    motor type, gear ratios 6.33, 6.33, 9.5), processed and solved every 5 s as the node does
    (each solve warm-started from the previous one)."""
    sim = leg(11)
    estimator = LinkEstimator(
        sim.links,
        LinkEstimatorConfig(window_sec=60.0, prior_weight=1e-6),
        actuators=go1_leg_config().actuators,
    )
    t = np.arange(0.0, 60.0, 1.0 / RATE)
    data = sim.measure(t, np.random.default_rng(11))
    estimates = []
    for k in range(t.size):
        estimator.add_joint_state(
            T0 + t[k], sim.joint_names, data.positions[k], data.velocities[k], data.efforts[k]
        )
        if (k + 1) % round(5.0 * RATE) == 0:
            estimator.process()
            estimates.append(estimator.solve())
    return sim, data, estimator, estimates


def test_with_the_actuators_every_armature_and_the_friction_are_recovered(
    leg_with_actuators,
) -> None:
    """Acceptance (issue 4, item 6), online: 60 s of data, every joint's armature, viscous and
    Coulomb friction within 10 %. The knee's armature gives the motor's rotor inertia, which fixes
    the hip abduction's and hip flexion's (the torques do not separate those from the links)."""
    sim, _, estimator, estimates = leg_with_actuators
    estimate = estimates[-1]
    assert estimate.n_samples == len(estimator.window) == 60.0 * RATE - 2 * EDGE
    assert all(check_consistency(theta).fully_consistent for theta in estimate.thetas)
    truth = dict(zip(sim.joint_names, sim.drives))
    errors = {
        (joint, term): getattr(estimate.drives[joint], term) / getattr(truth[joint], term) - 1
        for joint in sim.joint_names
        for term in ("viscous", "coulomb", "armature")
    }
    print("online, 60 s, relative errors:", {k: f"{v:+.4f}" for k, v in errors.items()})
    assert max(abs(e) for e in errors.values()) < 0.10, errors
    assert estimate.armature_sources == {HIP: "rotor", THIGH: "rotor", KNEE: "estimated"}
    (rotor,) = estimate.rotor_inertias
    assert (rotor.motor, rotor.from_joints, rotor.applied_to) == (
        "go1_motor",
        (KNEE,),
        (HIP, THIGH),
    )
    assert rotor.value == pytest.approx(go1_leg_config().actuator(KNEE).rotor_inertia, rel=0.1)
    names = sim.links.parameter_names
    for joint, drive in zip(sim.joint_names, sim.links.drives):
        if joint != KNEE:  # N² I_rotor, in the drives and in x
            assert estimate.drives[joint].armature == pytest.approx(
                drive.gear_ratio**2 * rotor.value, rel=1e-12
            )
            assert estimate.x[names.index(f"{joint}.armature")] == estimate.drives[joint].armature
    # the base parameters are those of the problem solved: the hip armatures are no parameters
    # there, and nothing about them is left to the prior
    assert not any(name.endswith(".armature") for name in estimate.unidentifiable)
    assert f"{HIP}.armature" not in estimate.base.names and estimate.rank == 27
    assert estimate.residual_rms == pytest.approx(0.1, rel=0.05)  # the torque noise (N·m)
    # every periodic solve (from 5 s of data on) separated the knee's armature, so each took
    # the rotor step, warm-started from the previous one
    assert all(e.armature_sources == estimate.armature_sources for e in estimates)


def test_the_online_rotor_step_is_fit_chain(leg_with_actuators) -> None:
    """The same steps as actuators.fit_chain on the exact samples: the same rotor inertia and
    armatures within 3 % (the online fit's accelerations are the local-polynomial filter's
    derivative, the offline fit's exact; the knee's armature is the small term they scale), the
    same torques."""
    sim, data, _, estimates = leg_with_actuators
    estimate = estimates[-1]
    offline = fit_chain(go1_leg_config(), data, prior_weight=1e-6)
    assert offline.rotor_inertias[0].value == pytest.approx(
        estimate.rotor_inertias[0].value, rel=0.03
    )
    for joint in sim.joint_names:
        assert estimate.drives[joint].armature == pytest.approx(offline.armatures[joint], rel=0.03)
    difference = predict_torques(sim.links, estimate.x, data) - predict_torques(
        offline.model, offline.fit.x, data
    )
    assert np.sqrt(np.mean(difference**2, axis=0)).max() < 0.005  # N·m; the noise is 0.1


def test_the_rotor_step_warm_starts(leg_with_actuators) -> None:
    """Solving again (warm: both solves from the previous ones), from an explicit start, or
    without warm starts gives the same estimate."""
    sim, _, estimator, estimates = leg_with_actuators
    again = estimator.solve()
    assert np.allclose(again.x, estimates[-1].x, atol=1e-7)
    assert again.armature_sources == estimates[-1].armature_sources
    explicit = estimator.solve(initvals=estimates[-2].x)
    assert np.allclose(explicit.x, again.x, atol=1e-6)
    cold = LinkEstimator(
        sim.links,
        LinkEstimatorConfig(window_sec=60.0, prior_weight=1e-6, warm_start=False),
        actuators=estimator.actuators,
    )
    cold.window = estimator.window
    assert np.allclose(cold.solve().x, again.x, atol=1e-6)
    with pytest.raises(EstimateUnavailable) as why:
        estimator.solve(method="ols")  # unconstrained: links come out inconsistent
    assert why.value.reason == "inconsistent"
    assert np.allclose(estimator.solve().x, again.x, atol=1e-7)  # the warm starts survive it


def test_actuators_must_match_the_chain() -> None:
    model = go1_leg_config().link_model()
    with pytest.raises(ValueError, match="not in the chain"):
        LinkEstimator(model, actuators={"FR_hip_joint": ActuatorConfig()})
    with pytest.raises(ValueError, match="differ from the model's drive"):
        LinkEstimator(model, actuators={HIP: ActuatorConfig(gear_ratio=9.0, rotor_inertia=1e-4)})
    # joints without an actuator keep their drive's rotor (no motor type)
    go1 = go1_leg_config()
    assert LinkEstimator(model, actuators={KNEE: go1.actuators[KNEE]}).actuators == {
        KNEE: go1.actuators[KNEE]
    }


def test_panda_locked_joints_are_ignored_and_every_link_consistent() -> None:
    """The Panda's 7 arm joints from joint states that also carry the (locked) fingers; links
    differ from the URDF; viscous and Coulomb within 2 %, the armatures of joints 3-7 within 5 %
    (those of joints 1 and 2 add to their links' inertias about the axis: unidentifiable)."""
    rng = np.random.default_rng(0)
    drives = [
        DriveTruth(
            rng.uniform(0.2, 0.6),
            rng.uniform(0.3, 1.0),
            rng.normal(0.0, 0.3),
            rng.uniform(0.1, 0.4),
        )
        for _ in range(7)
    ]
    links = panda_torque_simulator(np.zeros(10)).links
    sim = panda_torque_simulator(np.zeros(10), drives=drives)
    sim = JointTorqueSimulator(
        links,
        sim.trajectory,
        perturbed_links(links.link_parameters(links.prior), rng),
        drives,
        torque_noise_std=0.05,
    )
    estimator = LinkEstimator(links, LinkEstimatorConfig(window_sec=30.0, prior_weight=1e-6))
    names = ("panda_finger_joint1", *links.joint_names[::-1], "panda_finger_joint2")
    feed(estimator, sim, 20.0, rng, names=names)
    assert estimator.process() > 0.99 * 20.0 * RATE
    estimate = estimator.solve()
    assert all(check_consistency(theta).fully_consistent for theta in estimate.thetas)
    assert estimate.link_names == links.link_names and estimate.joint_names == links.joint_names
    for k, (joint, truth) in enumerate(zip(links.joint_names, drives)):
        assert estimate.drives[joint].viscous == pytest.approx(truth.viscous, rel=0.02)
        assert estimate.drives[joint].coulomb == pytest.approx(truth.coulomb, rel=0.02)
        if k >= 2:
            assert estimate.drives[joint].armature == pytest.approx(truth.armature, rel=0.05)
    assert {"panda_joint1.armature", "panda_joint2.armature"} <= set(estimate.unidentifiable)


def test_efforts_are_scaled_and_known_armatures_subtracted() -> None:
    """Efforts in amperes (torque = current x torque constant x gear ratio), hip armatures known
    (not estimated): the same drives come out."""
    go1 = go1_leg_config()
    actuators = {
        j: ActuatorConfig(
            a.gear_ratio,
            a.rotor_inertia,
            torque_constant=0.1,
            motor=a.motor,
            coulomb_velocity=a.coulomb_velocity,
        )
        for j, a in go1.actuators.items()
    }
    config = ChainConfig(
        go1.joints, actuators, robot="go1", estimate=("viscous", "coulomb", "offset")
    )
    sim = leg_simulator(config, seed=4)
    estimator = LinkEstimator(sim.links, LinkEstimatorConfig(prior_weight=1e-6))
    assert [d.effort_scale for d in sim.links.drives] == pytest.approx([0.633, 0.633, 0.9495])
    feed(estimator, sim, 10.0, np.random.default_rng(4))
    estimator.process()
    estimate = estimator.solve()
    for joint, truth in zip(sim.joint_names, sim.drives):
        assert estimate.drives[joint].viscous == pytest.approx(truth.viscous, rel=0.1)
        assert estimate.drives[joint].coulomb == pytest.approx(truth.coulomb, rel=0.1)
        assert estimate.drives[joint].armature == config.actuator(joint).reflected_inertia
    assert not any(name.endswith(".armature") for name in estimate.unidentifiable)


# ---- input validation ----------------------------------------------------------------------


@pytest.fixture
def estimator() -> LinkEstimator:
    estimator = LinkEstimator(go1_leg_config().link_model())
    estimator.add_joint_state(1.0, [HIP, THIGH, KNEE], np.zeros(3), np.zeros(3), np.zeros(3))
    return estimator


def rejected(call, *args) -> str:
    with pytest.raises(SampleRejected) as why:
        call(*args)
    return why.value.reason


def test_each_bad_joint_state_is_rejected_with_its_reason(estimator: LinkEstimator) -> None:
    names, zero = [HIP, THIGH, KNEE], np.zeros(3)
    add = estimator.add_joint_state
    nan = np.array([0.0, np.nan, 0.0])
    assert rejected(add, 2.0, names, nan, zero, zero) == "non_finite"
    assert rejected(add, 2.0, names, zero, zero, np.full(3, np.inf)) == "non_finite"
    assert rejected(add, np.nan, names, zero, zero, zero) == "non_finite"
    assert rejected(add, 2.0, names, zero, zero, np.zeros(2)) == "length_mismatch"
    assert rejected(add, 2.0, names, zero[:2], zero, zero) == "length_mismatch"
    assert rejected(add, 2.0, names, zero, zero) == "missing_effort"
    assert rejected(add, 2.0, names, zero, zero, []) == "missing_effort"
    assert rejected(add, 2.0, names + ["ghost"], np.zeros(4), None, np.zeros(4)) == "unknown_joint"
    assert rejected(add, 2.0, names[:2], zero[:2], None, zero[:2]) == "missing_joint"
    assert rejected(add, 2.0, names[:2] + names[:1], zero, None, zero) == "duplicate_joint"
    assert rejected(add, 0.5, names, zero, zero, zero) == "out_of_order"
    assert rejected(add, 1.0, names, zero, zero, zero) == "duplicate_stamp"
    assert estimator.dropped == {
        "non_finite": 3,
        "length_mismatch": 2,
        "missing_effort": 2,
        "unknown_joint": 1,
        "missing_joint": 1,
        "duplicate_joint": 1,
        "out_of_order": 1,
        "duplicate_stamp": 1,
    }
    # the other legs' joints (locked) and any order are fine; values are mapped by name
    order = ["FR_hip_joint", KNEE, HIP, THIGH]
    add(2.0, order, [9.0, 3.0, 1.0, 2.0], None, [9.0, 30.0, 10.0, 20.0])
    assert np.array_equal(estimator._joints["q"][-1], [1.0, 2.0, 3.0])
    assert np.array_equal(estimator._joints["effort"][-1], [10.0, 20.0, 30.0])
    assert estimator.received["joint_state"] == 14 and len(estimator._joints) == 2


def test_unknown_joints_can_be_ignored() -> None:
    lenient = LinkEstimator(
        go1_leg_config().link_model(), LinkEstimatorConfig(ignore_unknown_joints=True)
    )
    lenient.add_joint_state(1.0, [HIP, THIGH, KNEE, "ghost"], np.zeros(4), None, np.zeros(4))
    assert not lenient.dropped


def test_joint_states_near_a_gap_or_the_start_are_dropped() -> None:
    sim = leg_simulator(seed=2)
    estimator = LinkEstimator(sim.links)
    t = np.arange(0.0, 4.0, 1.0 / RATE)
    hole = (t > 1.5) & (t < 2.0)
    data = sim.measure(t, np.random.default_rng(2))
    for k in np.flatnonzero(~hole):
        estimator.add_joint_state(
            t[k], sim.joint_names, data.positions[k], data.velocities[k], data.efforts[k]
        )
    added = estimator.process()
    stats = estimator.stats()
    # within the half-width after the first sample, or around the gap (1.5, 2.0) s
    assert stats.dropped == {"no_joint_state": EDGE, "gap": 2 * EDGE}
    assert stats.pending == EDGE  # the last half-width waits for newer joint states
    assert added == stats.processed["joint_state"] == (~hole).sum() - 4 * EDGE
    assert stats.window_samples == added


def test_too_few_samples_reset_and_overflow() -> None:
    sim = leg_simulator(seed=3)
    config = LinkEstimatorConfig(min_samples=300, joint_buffer_capacity=100)
    estimator = LinkEstimator(sim.links, config)
    feed(estimator, sim, 0.8, np.random.default_rng(3))  # 200 joint states, unprocessed
    assert estimator.dropped["overflow"] == 100
    assert estimator.process() == 100 - 2 * EDGE
    with pytest.raises(EstimateUnavailable) as why:
        estimator.solve()
    assert why.value.reason == "too_few_samples"
    estimator.reset()
    assert not estimator.stats().received and len(estimator.window) == 0
    estimator.add_joint_state(0.0, sim.joint_names, np.zeros(3), None, np.zeros(3))  # any stamp


def test_invalid_settings_name_the_setting() -> None:
    with pytest.raises(ValueError, match="prior_weight"):
        LinkEstimatorConfig(prior_weight=-1.0)
    with pytest.raises(ValueError, match="window_sec"):
        LinkEstimatorConfig(window_sec=0.0)
    with pytest.raises(ValueError, match="rank_tolerance"):
        LinkEstimatorConfig(rank_tolerance=0.0)


def test_inputs_and_solves_from_different_threads() -> None:
    sim = leg(5)
    estimator = LinkEstimator(sim.links, LinkEstimatorConfig(prior_weight=1e-6, min_samples=250))
    t = np.arange(0.0, 8.0, 1.0 / RATE)
    data = sim.measure(t, np.random.default_rng(5))

    def add(k: int) -> None:
        estimator.add_joint_state(
            T0 + t[k], sim.joint_names, data.positions[k], data.velocities[k], data.efforts[k]
        )

    solve_while_feeding(estimator, add, t.size, ("too_few_samples",))
    stats = estimator.stats()
    assert stats.received["joint_state"] == (
        stats.processed["joint_state"] + stats.pending + sum(stats.dropped.values())
    )
    knee = estimator.solve().drives[KNEE]
    assert knee.viscous == pytest.approx(sim.drives[2].viscous, rel=0.1)


def test_link_model_knows_the_robots_other_joints() -> None:
    links = go1_leg_config().link_model()
    assert links.joint_names == (HIP, THIGH, KNEE)
    assert len(links.robot_joint_names) == 12 and "RR_calf_joint" in links.robot_joint_names
    assert LinkModel(links.model).robot_joint_names == links.joint_names


def test_bounding_ellipsoids_keep_each_link_inside_its_sphere() -> None:
    """``bounding_ellipsoids``: a sphere about each link frame's origin, 0.8 x the unconstrained
    estimate's RMS radius of its mass: the constrained links' mass stays inside on average
    (``tr(S) / m <= r²``), every link consistent."""
    from inertia_id_ros.solvers import ellipsoid_matrix

    sim = leg(12)
    free = LinkEstimator(sim.links, LinkEstimatorConfig(window_sec=60.0, prior_weight=1e-6))
    feed(free, sim, 10.0, np.random.default_rng(12))
    free.process()
    radii = [0.8 * rms_radius(theta) for theta in free.solve().thetas]
    spheres = [ellipsoid_matrix(np.zeros(3), np.full(3, r)) for r in radii]
    bounded = LinkEstimator(
        sim.links,
        LinkEstimatorConfig(window_sec=60.0, prior_weight=1e-6, bounding_ellipsoids=spheres),
    )
    feed(bounded, sim, 10.0, np.random.default_rng(12))
    bounded.process()
    estimate = bounded.solve()
    assert all(check_consistency(theta).fully_consistent for theta in estimate.thetas)
    assert all(rms_radius(theta) <= r * (1 + 1e-3) for theta, r in zip(estimate.thetas, radii))
    assert bounded.config.bounding_ellipsoids[0] == pytest.approx(tuple(spheres[0].ravel()))
