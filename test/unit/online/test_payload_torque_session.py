"""The online payload from joint torques (PayloadTorqueEstimator, PayloadTorqueSession) on the
simulated Panda without an F/T sensor: accuracy, effort conversion, tare, change detection and the
poorly-determined warning."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.panda_arm import one_path_chirp
from inertia_id_ros.chain.actuators import ActuatorConfig, effort_scales
from inertia_id_ros.chain.friction import JointDrive
from inertia_id_ros.chain.links import LinkModel
from inertia_id_ros.core.inertia import inertia_from_theta, theta_from_inertia
from inertia_id_ros.errors import ConfigError, EstimateUnavailable
from inertia_id_ros.online.payload_session import payload_torque_session
from inertia_id_ros.sim.payload import PANDA_FLANGE
from inertia_id_ros.sim.torques import JointTorqueSimulator, panda_payload_torque_runs

RATE_HZ = 200.0
DURATION_SEC = 20.0


@pytest.fixture(scope="module")
def runs():
    return panda_payload_torque_runs(duration=DURATION_SEC, rate=RATE_HZ, seed=1)


def true_links_x(runs) -> np.ndarray:
    """The truth of the links and drives, as the x of ``runs.links``."""
    return runs.unloaded.simulator.true_parameters(runs.links)


def feed(session, rec, names, efforts=None, block: int = 200) -> None:
    """``rec``'s joint states (efforts: ``efforts`` or the recorded ones) in blocks, one
    update after each."""
    efforts = rec.effort if efforts is None else efforts
    for start in range(0, rec.t.size, block):
        rows = slice(start, start + block)
        assert (
            session.add_joint_states(rec.t[rows], names, rec.q[rows], rec.dq[rows], efforts[rows])
            == []
        )
        session.update(now=float(rec.t[rows][-1]))


def assert_close(
    theta: np.ndarray, truth: np.ndarray, mass_rel: float = 0.01, com_m: float = 5e-3
) -> None:
    _, com, _ = inertia_from_theta(theta)
    _, true_com, _ = inertia_from_theta(truth)
    assert theta[0] == pytest.approx(truth[0], rel=mass_rel)
    assert np.linalg.norm(com - true_com) < com_m


def test_session_identifies_the_payload_with_standard_errors(runs) -> None:
    """The true links and drives as the link model: mass within 1 %, COM within 5 mm, the mass's
    standard error small and honest, no warning about the mass; diagnostics name the mode."""
    session = payload_torque_session(
        runs.links, true_links_x(runs), runs.frame, window_sec=DURATION_SEC + 1.0
    )
    feed(session, runs.loaded, runs.links.joint_names)
    update = session.latest
    assert update.ok, update.message
    estimate = update.estimate
    assert_close(estimate.theta, runs.payload_theta)
    mass_std = estimate.theta_std[0]
    assert 0.0 < mass_std < 0.01 * runs.payload_theta[0]
    assert abs(estimate.mass - runs.payload_theta[0]) < 5 * mass_std
    assert not any("mass" in message for message in estimate.warnings)
    assert estimate.rank == estimate.n_parameters == 17
    assert "±" in update.message
    values = session.diagnostics().values
    assert values["identifiable_rank"] == "17/17"
    assert float(values["mass_std"]) == pytest.approx(mass_std, rel=1e-3)


def test_a_joint_torque_of_the_other_sign_is_warned_naming_the_joint(runs) -> None:
    """One joint's recorded torques negated (a drive counting the other way): every estimate
    warns, naming the joint and the node parameter; the right signs give no such warning."""
    flipped = runs.loaded.effort.copy()
    flipped[:, 1] *= -1.0
    session = payload_torque_session(
        runs.links, true_links_x(runs), runs.frame, window_sec=DURATION_SEC + 1.0
    )
    feed(session, runs.loaded, runs.links.joint_names, efforts=flipped)
    (warning,) = [message for kind, message in session.latest.warnings if kind == "torque_sign"]
    assert f"joint {runs.links.joint_names[1]!r}" in warning and "torques_effort_signs" in warning
    assert "opposite sign" in warning
    right = payload_torque_session(runs.links, true_links_x(runs), runs.frame)
    feed(right, runs.loaded, runs.links.joint_names)
    assert right.latest.ok and right.estimator.flipped_joints() == []
    assert not [kind for kind, _ in right.latest.warnings if kind == "torque_sign"]


def test_efforts_as_signed_motor_currents(runs) -> None:
    """Efforts recorded as motor currents, some joints counting the other way: with each joint's
    torque constant, gear ratio and sign the estimate equals the one from joint torques."""
    constants = np.array([0.07, 0.07, 0.06, 0.06, 0.05, 0.05, 0.04])
    ratios = np.full(7, 100.0)
    signs = np.array([1, -1, 1, 1, -1, 1, -1])
    scales = np.array(effort_scales(runs.links.joint_names, constants, ratios, signs))
    np.testing.assert_allclose(scales, signs * constants * ratios)
    links = LinkModel(
        runs.links.model,
        [JointDrive(coulomb_velocity=0.02, effort_scale=scale) for scale in scales],
        runs.links.robot_joint_names,
    )
    estimates = []
    for model, efforts in ((runs.links, runs.loaded.effort), (links, runs.loaded.effort / scales)):
        session = payload_torque_session(
            model, true_links_x(runs), runs.frame, window_sec=DURATION_SEC + 1.0
        )
        feed(session, runs.loaded, model.joint_names, efforts)
        estimates.append(session.latest.estimate.theta)
    np.testing.assert_allclose(estimates[1], estimates[0], rtol=1e-6, atol=1e-9)
    with pytest.raises(ConfigError, match="effort_sign"):
        ActuatorConfig(effort_sign=0.5)


def test_tare_of_the_torque_offsets(runs) -> None:
    """Offsets not estimated, the link model's offsets wrong by 0.6-1 N m: the mass is off;
    a tare of the unloaded arm (the same motion) fixes the offsets and the mass."""
    x = true_links_x(runs)
    offsets = [runs.links.parameter_names.index(f"{j}.offset") for j in runs.links.joint_names]
    x[offsets] += np.array([1.0, -0.8, 0.6, -1.0, 0.8, -0.6, 0.6])
    masses = []
    for tare in (False, True):
        session = payload_torque_session(
            runs.links, x, runs.frame, window_sec=DURATION_SEC + 1, estimate_offset=False
        )
        if tare:
            feed(session, runs.unloaded, runs.links.joint_names)
            tared = session.tare(DURATION_SEC / 2)
            assert tared.offset.shape == (7,) and session.estimator.window.count() == 0
        shifted = type(runs.loaded)(
            runs.loaded.t + DURATION_SEC,
            runs.loaded.q,
            runs.loaded.dq,
            runs.loaded.effort,
            runs.loaded.truth,
            runs.loaded.simulator,
        )
        feed(session, shifted, runs.links.joint_names)
        masses.append(session.latest.estimate.mass)
    true_mass = runs.payload_theta[0]
    assert abs(masses[0] - true_mass) > 0.01 * true_mass
    assert abs(masses[1] - true_mass) < 0.3 * abs(masses[0] - true_mass)


def test_tare_needs_samples(runs) -> None:
    session = payload_torque_session(runs.links, true_links_x(runs), runs.frame)
    with pytest.raises(EstimateUnavailable, match="joint states"):
        session.tare(1.0)


def test_payload_change_is_detected(runs) -> None:
    """The payload is swapped mid-run (1.5 kg -> 0.8 kg): the detector on the joints' torque
    residuals raises an alarm after the swap, and the window restarts with the new payload."""
    second = theta_from_inertia(0.8, np.array([0.0, 0.03, 0.05]), np.diag([1e-3, 1e-3, 8e-4]))
    sim = runs.loaded.simulator
    swapped = JointTorqueSimulator(
        sim.links,
        sim.trajectory,
        sim.link_thetas,
        sim.drives,
        (PANDA_FLANGE, second),
        sim.torque_noise_std,
    )
    rng = np.random.default_rng(5)
    t = np.arange(DURATION_SEC, 2 * DURATION_SEC, 1 / RATE_HZ)
    data = swapped.measure(t, rng)
    after = type(runs.loaded)(t, data.positions, data.velocities, data.efforts, data, swapped)
    session = payload_torque_session(runs.links, true_links_x(runs), runs.frame, window_sec=10.0)
    feed(session, runs.loaded, runs.links.joint_names)
    assert session.latest.ok and not session.changes
    feed(session, after, runs.links.joint_names)
    assert len(session.changes) == 1
    change = session.changes[0]
    assert DURATION_SEC <= change.t_onset < change.t_detected < DURATION_SEC + 1.0
    assert "joint torques depart" in str(change)
    assert session.latest.estimate.mass == pytest.approx(0.8, rel=0.02)


def test_one_path_chirp_warns_that_the_mass_is_poorly_determined() -> None:
    """Issue 21: a 0.48 kg load on a one-path chirp with the URDF's links (the truth 10 % off):
    the mass comes out wrong, and the session says it is poorly determined, with its standard
    error."""
    theta = theta_from_inertia(0.48, np.array([0.0, 0.0, 0.05]), np.diag([4e-4, 4e-4, 3e-4]))
    runs = panda_payload_torque_runs(
        duration=DURATION_SEC, rate=RATE_HZ, seed=0, payload_theta=theta, trajectory=one_path_chirp
    )
    q = runs.loaded.truth.positions
    assert np.abs(np.corrcoef(q.T)).min() > 0.997
    session = payload_torque_session(
        runs.links, runs.links.prior, runs.frame, window_sec=DURATION_SEC + 1.0
    )
    feed(session, runs.loaded, runs.links.joint_names)
    update = session.latest
    assert update.ok
    assert abs(update.estimate.mass - 0.48) > 0.01  # 2 %: beyond what torques should give
    kinds = [kind for kind, _ in update.warnings]
    assert "poorly_determined" in kinds
    message = next(m for kind, m in update.warnings if "mass is poorly determined" in m)
    assert f"{update.estimate.mass:.4f} ± {update.estimate.theta_std[0]:.4f} kg" in message
    assert "mass is poorly determined" in session.diagnostics().message


def test_read_link_result(runs, tmp_path) -> None:
    """A fit-links result JSON becomes the chain's link model: every link's theta and joint's
    drive terms in parameter order, the result's gravity and Coulomb widths, the chain's effort
    scales; a result lacking a joint of the chain is refused, naming it."""
    import json

    from inertia_id_ros.formats.link_result import read_link_result

    links = runs.links
    x = true_links_x(runs)
    drives = links.drive_parameters(x)
    result = {
        "bodies": [
            {"name": name, "theta": theta.tolist()}
            for name, theta in zip(links.link_names, links.link_parameters(x))
        ],
        "joints": [
            {"name": joint, "coulomb_velocity": 0.03, **drives[joint]}
            for joint in links.joint_names
        ],
        "gravity": [0.1, 0.0, -9.8],
    }
    path = tmp_path / "links.json"
    path.write_text(json.dumps(result))
    read = read_link_result(path, links)
    np.testing.assert_allclose(read.x, x)
    assert read.model.parameter_names == links.parameter_names
    assert all(d.coulomb_velocity == 0.03 for d in read.model.drives)
    np.testing.assert_allclose(read.model.model.gravity.linear, [0.1, 0.0, -9.8])
    result["joints"] = result["joints"][:-1]
    path.write_text(json.dumps(result))
    with pytest.raises(ConfigError, match="lacks \\['panda_joint7'\\]"):
        read_link_result(path, links)


def test_estimate_message_leaves_the_joint_offsets_out(runs) -> None:
    """The node's message of a payload from joint torques: theta, covariance and fit values; the
    joints' torque offsets are no wrench, so ``sensor_offset`` stays zero."""
    from inertia_id_ros.ros.conversions import payload_torque_estimate_to_msg, wrench_to_array

    session = payload_torque_session(
        runs.links, true_links_x(runs), runs.frame, window_sec=DURATION_SEC + 1.0
    )
    feed(session, runs.loaded, runs.links.joint_names)
    estimate = session.latest.estimate
    msg = payload_torque_estimate_to_msg(estimate, runs.frame, "payload")
    np.testing.assert_array_equal(msg.theta, estimate.theta)
    np.testing.assert_array_equal(np.reshape(msg.covariance, (10, 10)), estimate.covariance)
    assert msg.header.frame_id == runs.frame and msg.num_samples == estimate.n_samples
    assert msg.inertia.m == pytest.approx(estimate.mass)
    np.testing.assert_array_equal(wrench_to_array(msg.sensor_offset), np.zeros(6))


@pytest.mark.parametrize("half_width, warned", [(0.03, True), (0.044, False)])
def test_a_filter_of_too_few_joint_states_is_warned(half_width: float, warned: bool) -> None:
    """Joint states at 125 Hz: a 0.03 s filter spans under four of them on each side, and the
    session says so with the half-width to set (0.044 s); at 0.044 s it says nothing of it."""
    runs = panda_payload_torque_runs(duration=6.0, rate=125.0, seed=1)
    session = payload_torque_session(
        runs.links, true_links_x(runs), runs.frame, window_sec=10.0, filter_half_width=half_width
    )
    feed(session, runs.loaded, runs.links.joint_names, block=250)
    update = session.latest
    assert update.ok, update.message
    messages = [message for kind, message in update.warnings if kind == "filter_samples"]
    assert bool(messages) == warned
    if warned:
        assert "every 8.0 ms" in messages[0] and "spans only 3 of them" in messages[0]
        assert "Set it to 0.044 s" in messages[0]
