"""A Go1 leg in simulation: actuator config, independent torques, identifiability, 60 s fit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from helpers.paths import REPO
from inertia_id_ros.chain.actuators import ActuatorConfig, ChainConfig, go1_leg_config
from inertia_id_ros.chain.armatures import fit_chain
from inertia_id_ros.chain.links import JointTorqueData, predict_torques, torque_error
from inertia_id_ros.errors import ConfigError
from inertia_id_ros.sim.torques import (
    DEFAULT_LEG_TORQUE_NOISE_STD,
    leg_simulator,
    leg_trajectory,
    perturbed_links,
)

CONFIG_DIR = REPO / "config"
HIP, THIGH, KNEE = go1_leg_config().joints
RATE = 250.0  # Hz
DURATION = 60.0  # s


def test_config_file_is_the_go1_leg_and_round_trips(tmp_path: Path) -> None:
    config = ChainConfig.load(CONFIG_DIR / "go1_front_left_leg.yaml")
    assert config == go1_leg_config("FL")
    knee = config.actuator(KNEE)
    assert knee.reflected_inertia == pytest.approx(9.495**2 * 1.11842e-4)
    assert ChainConfig.from_dict(config.to_dict()) == config
    config.save(tmp_path / "leg.yaml")
    assert ChainConfig.load(tmp_path / "leg.yaml") == config

    drives = config.drives()
    assert [drives[j].reflected_inertia for j in config.joints] == pytest.approx(
        [6.33**2 * 1.11842e-4] * 2 + [9.495**2 * 1.11842e-4]
    )
    assert all(d.terms == ("viscous", "coulomb", "offset", "armature") for d in drives.values())
    assert config.drives(estimate=("viscous",))[HIP].known_torque(np.ones(1)) == pytest.approx(
        6.33**2 * 1.11842e-4
    )

    # efforts in amperes: joint torque = current x torque constant x gear ratio
    amps = ActuatorConfig(gear_ratio=10.0, rotor_inertia=1e-4, torque_constant=0.08)
    assert amps.drive().effort_scale == pytest.approx(0.8)
    # a relative URDF path is relative to the file
    urdf = config.urdf_path()
    (tmp_path / "robot.urdf").write_text(urdf.read_text())
    (tmp_path / "by_path.yaml").write_text(f"urdf: robot.urdf\njoints: [{HIP}, {THIGH}]\n")
    by_path = ChainConfig.load(tmp_path / "by_path.yaml")
    assert by_path.urdf_path() == tmp_path / "robot.urdf"
    assert by_path.link_model().joint_names == (HIP, THIGH)


@pytest.mark.parametrize(
    "mapping, message",
    [
        ({"robot": "go1", "joints": [HIP], "gear": 2}, "unknown key"),
        ({"robot": "go1", "urdf": "x.urdf", "joints": [HIP]}, "exactly one"),
        ({"robot": "go1", "joints": [HIP], "actuators": {KNEE: {}}}, "unknown key"),
        ({"robot": "go1", "joints": [HIP], "actuators": {HIP: {"gear_ratio": -1}}}, "gear_ratio"),
        ({"robot": "go1", "joints": [HIP], "actuators": {HIP: {"inertia": 1}}}, "unknown key"),
        ({"robot": "go1", "joints": [HIP], "estimate": ["stiction"]}, "unknown drive terms"),
        ({"robot": "go1"}, "'joints' is required"),
    ],
)
def test_config_errors_name_the_key(mapping: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ChainConfig.from_dict(mapping)


def test_simulated_torques_match_the_regressor() -> None:
    """RNEA + written-out drives (the simulator) == Y x + known torques (links.py)."""
    rng = np.random.default_rng(0)
    config = go1_leg_config()
    links = config.link_model()
    sim = leg_simulator(
        config,
        seed=3,
        link_thetas=perturbed_links(links.link_parameters(links.prior), rng),
        torque_noise_std=0.0,
    )
    t = np.linspace(0.0, 5.0, 200)
    data = sim.measure(t, rng)
    expected = predict_torques(links, sim.true_parameters(), data)
    np.testing.assert_allclose(data.efforts, expected, atol=1e-10)
    assert np.abs(expected).max() > 0.5  # the leg swings, gravity and inertia act
    # a model that knows the armatures instead of estimating them predicts the same torques
    known = ChainConfig(
        config.joints, config.actuators, robot="go1", estimate=("viscous", "coulomb", "offset")
    ).link_model()
    np.testing.assert_allclose(
        predict_torques(known, sim.true_parameters(known), data), expected, atol=1e-10
    )


@pytest.fixture(scope="module")
def leg_fit():
    """60 s at 250 Hz of the Go1 leg (perturbed links, Go1 rotors, friction, 0.1 N·m noise)."""
    rng = np.random.default_rng(11)
    config = go1_leg_config()
    links = config.link_model()
    sim = leg_simulator(
        config, seed=11, link_thetas=perturbed_links(links.link_parameters(links.prior), rng)
    )
    data = sim.measure(np.arange(0.0, DURATION, 1.0 / RATE), rng)
    return config, sim, data, fit_chain(config, data, prior_weight=1e-6)


def test_only_the_knee_armature_is_identifiable(leg_fit) -> None:
    """Hip abduction: first joint, its armature adds to the hip link's inertia about its axis;
    hip flexion: axis perpendicular to the abduction's, same. Knee: parallel, separable."""
    _, _, _, result = leg_fit
    unidentifiable = set(result.base.unidentifiable)
    assert {f"{HIP}.armature", f"{THIGH}.armature"} <= unidentifiable
    for joint in (HIP, THIGH, KNEE):
        assert {f"{joint}.viscous", f"{joint}.coulomb", f"{joint}.offset"}.isdisjoint(
            unidentifiable
        )
    assert f"{KNEE}.armature" not in unidentifiable
    assert result.unidentifiable_armatures == (HIP, THIGH)
    # the data fix "armature + link inertia about the joint axis" (a null direction pairs them)
    directions = " | ".join(result.base.null_directions())
    assert f"{HIP}.armature" in directions and "FL_hip.Ixx" in directions


def test_leg_fit_recovers_friction_and_armature(leg_fit) -> None:
    """Acceptance: 60 s of data; armature, viscous and Coulomb within 10 %; links consistent."""
    config, sim, data, result = leg_fit
    truth = dict(zip(sim.joint_names, sim.drives))
    estimate = result.drive_parameters
    for joint in config.joints:
        for term in ("viscous", "coulomb", "armature"):
            assert estimate[joint][term] == pytest.approx(getattr(truth[joint], term), rel=0.1), (
                joint,
                term,
            )
    (rotor,) = result.rotor_inertias  # the knee's armature gives the motor's rotor inertia
    assert rotor.from_joints == (KNEE,) and rotor.applied_to == (HIP, THIGH)
    assert rotor.value == pytest.approx(config.actuator(KNEE).rotor_inertia, rel=0.1)
    assert result.fit.fully_consistent, [r.problems for r in result.fit.consistency]
    assert torque_error(result.model, result.fit.x, data).overall == pytest.approx(
        DEFAULT_LEG_TORQUE_NOISE_STD, rel=0.05
    )
    # another trajectory: the fit predicts the true torques far below the noise level
    held_out_t = np.arange(0.0, 5.0, 0.01)
    q, dq, ddq = leg_trajectory(result.model, seed=99)(held_out_t)
    other = leg_simulator(
        config,
        link_thetas=sim.link_thetas,
        torque_noise_std=0.0,
        trajectory=leg_trajectory(result.model, seed=99),
    )
    held_out = JointTorqueData(q, dq, ddq, other.true_torques(held_out_t))
    assert torque_error(result.model, result.fit.x, held_out).overall < 0.02


def test_without_a_shared_motor_the_configured_rotor_is_used() -> None:
    """Joints with no motor type: an unidentifiable armature is the configured N² I_rotor."""
    rng = np.random.default_rng(5)
    go1 = go1_leg_config()
    actuators = {
        j: ActuatorConfig(a.gear_ratio, a.rotor_inertia, coulomb_velocity=0.05)
        for j, a in go1.actuators.items()
    }
    config = ChainConfig(go1.joints, actuators, robot="go1")
    data = leg_simulator(config, seed=5).measure(np.arange(0.0, 10.0, 0.01), rng)
    result = fit_chain(config, data, prior_weight=1e-6)
    assert [(r.from_joints, r.applied_to) for r in result.rotor_inertias] == [
        ((), (HIP,)),
        ((), (THIGH,)),
    ]
    for joint in (HIP, THIGH):
        assert result.armatures[joint] == config.actuator(joint).reflected_inertia
        assert f"{joint}.armature" not in result.model.parameter_names
    assert f"{KNEE}.armature" in result.model.parameter_names
    assert result.fit.fully_consistent
