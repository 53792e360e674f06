"""Whole-body simulators: consistent base motion, contact and internal wrenches, IMU, truth."""

import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest

from inertia_id_ros.core.inertia import inertia_from_theta
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.errors import ConfigError
from inertia_id_ros.sim import urdf_inertials as inertials
from inertia_id_ros.sim import whole_body_robots as wbr
from inertia_id_ros.sim import whole_body_simulator as wb

RATE = 200.0


@pytest.fixture(scope="module")
def icub():
    return wbr.icub(seed=3)


@pytest.fixture(scope="module")
def icub_motion(icub):
    return icub.simulate(2.0 + np.arange(6) / RATE)


def test_icub_truth_is_consistent_and_differs_from_the_cad_within_bounds(icub):
    cad = inertials.link_inertials(icub.cad_xml)
    assert len(icub.true_links) == 39 and set(cad) == set(icub.true_links)
    assert wb.check_truth(icub) == []
    mass_ratio, com_shift = [], []
    for name, theta in icub.true_links.items():
        if cad[name][0] < inertials.PLACEHOLDER_MASS:
            continue
        m0, c0, _ = inertia_from_theta(cad[name])
        m1, c1, _ = inertia_from_theta(theta)
        mass_ratio.append(m1 / m0)
        com_shift.append(np.abs(c1 - c0).max())
    assert 0.7 - 1e-9 <= min(mass_ratio) and max(mass_ratio) <= 1.3 + 1e-9
    assert max(com_shift) <= inertials.COM_OFFSET + 1e-9
    assert np.std(mass_ratio) > 0.05 and np.median(com_shift) > 0.002  # really perturbed


def test_icub_stance_sole_stays_put_and_the_contact_balances_the_base(icub, icub_motion):
    assert len(icub.joint_names) == 32
    assert np.abs(icub_motion.base_residual).max() < 1e-9
    model, data = icub.model, icub.data
    fid = model.getFrameId(wbr.ICUB_STANCE_FRAME)
    for q, v in zip(icub_motion.q_full, icub_motion.v_full):
        pin.forwardKinematics(model, data, q, v)
        placement = pin.updateFramePlacement(model, data, fid)
        assert np.allclose(placement.homogeneous, np.eye(4), atol=1e-9)
        assert np.abs(pin.getFrameVelocity(model, data, fid).vector).max() < 1e-9
    assert np.ptp(icub_motion.q_full[:, :3], axis=0).max() > 1e-4  # the base moves
    assert np.abs(icub_motion.dq).min(axis=0).max() > 0  # the joints move


def _subtree_links(urdf_xml, link):
    children = {}
    for joint in ET.fromstring(urdf_xml).findall("joint"):
        children.setdefault(joint.find("parent").get("link"), []).append(
            joint.find("child").get("link")
        )
    found, todo = [], [link]
    while todo:
        found.append(todo.pop())
        todo.extend(children.get(found[-1], []))
    return found


@pytest.mark.parametrize("sensor", ["l_leg_ft_sensor", "l_foot_ft_sensor", "r_arm_ft_sensor"])
def test_icub_internal_wrench_is_the_sum_of_link_wrenches_beyond_minus_the_contact(
    icub, icub_motion, sensor
):
    """Independent of RNEA's joint forces: each link's I a_g + v x* I v at its own frame,
    moved to the sensor frame, summed over the URDF subtree, minus the sole's contact wrench."""
    model, data = icub.model, icub.data
    child = next(
        j.find("child").get("link")
        for j in ET.fromstring(icub.true_xml).findall("joint")
        if j.get("name") == sensor
    )
    subtree = _subtree_links(icub.true_xml, child)
    links = [name for name in subtree if name in icub.true_links]
    column = [frame for frame, _ in icub.ft_sensors].index(sensor)
    contact_column = [frame for frame, _ in icub.ft_sensors].index(wbr.ICUB_STANCE_FRAME)
    sensor_id = model.getFrameId(sensor)
    local = pin.ReferenceFrame.LOCAL
    for i in range(icub_motion.t.size):
        pin.forwardKinematics(
            model, data, icub_motion.q_full[i], icub_motion.v_full[i], icub_motion.a_full[i]
        )
        pin.updateFramePlacements(model, data)
        total = pin.Force.Zero()
        for name in links:
            fid = model.getFrameId(name, pin.FrameType.BODY)
            inertia = pin.Inertia.FromDynamicParameters(icub.true_links[name])
            v = pin.getFrameVelocity(model, data, fid, local)
            a = pin.getFrameAcceleration(model, data, fid, local).vector
            a[:3] -= data.oMf[fid].rotation.T @ model.gravity.linear
            f = inertia * pin.Motion(a) + v.cross(inertia * v)
            total += (data.oMf[sensor_id].inverse() * data.oMf[fid]).act(f)
        if wbr.ICUB_STANCE_FRAME in subtree:
            sole = model.getFrameId(wbr.ICUB_STANCE_FRAME)
            total -= (data.oMf[sensor_id].inverse() * data.oMf[sole]).act(
                pin.Force(icub_motion.ft_wrench[i, contact_column])
            )
        assert np.allclose(icub_motion.ft_wrench[i, column], total.vector, atol=1e-8)


def test_icub_imu_matches_finite_differences_of_the_pose(icub):
    dt = 1e-4
    motion = icub.simulate(1.5 + np.arange(-1, 2) * dt)
    model, data, fid = icub.model, icub.data, icub.model.getFrameId(wbr.ICUB_IMU_FRAME)
    poses = []
    for q in motion.q_full:
        pin.framesForwardKinematics(model, data, q)
        poses.append(data.oMf[fid].copy())
    rotation = poses[1].rotation
    acceleration = (poses[2].translation - 2 * poses[1].translation + poses[0].translation) / dt**2
    specific_force = rotation.T @ (acceleration - model.gravity.linear)
    omega = pin.log3(poses[0].rotation.T @ poses[2].rotation) / (2 * dt)
    assert np.allclose(motion.imu_linear_acceleration[1], specific_force, atol=1e-3)
    assert np.allclose(motion.imu_angular_velocity[1], omega, atol=1e-5)
    assert np.allclose(pin.Quaternion(motion.imu_orientation[1]).toRotationMatrix(), rotation)


def test_record_has_the_whole_body_keys_and_noise_free_records_equal_the_truth():
    sim = wbr.icub(seed=1, noise=wb.NoiseModel.none())
    data = sim.record(0.05, RATE, with_ddq=True, with_effort=True)
    n, s = 10, 7
    assert data["t"].shape == (n,) and np.allclose(np.diff(data["t"]), 1 / RATE)
    for key in ("q", "dq", "ddq", "effort"):
        assert data[key].shape == (n, 32)
    assert data["imu_orientation"].shape == (n, 4) and str(data["imu_frame"]) == "imu_frame"
    assert data["ft_wrench"].shape == (n, s, 6) and list(data["ft_types"]).count("internal") == 6
    assert np.allclose(data["ft_wrench"], data["true_ft_wrench"])
    assert np.allclose(np.linalg.norm(data["imu_orientation"], axis=1), 1.0)
    assert data["true_theta"].shape == (39, 10)
    noisy = wbr.icub(seed=1).record(0.05, RATE)
    internal = noisy["ft_types"] == "internal"
    assert "ddq" not in noisy and "effort" not in noisy
    assert np.abs(noisy["true_ft_offset"][internal]).min(axis=0)[:3].max() > 0
    assert np.all(noisy["true_ft_offset"][~internal] == 0)
    assert not np.allclose(noisy["ft_wrench"], noisy["true_ft_wrench"] + noisy["true_ft_offset"])


def test_go1_base_follows_its_trajectory_and_point_contacts_carry_the_base_wrench():
    sim = wbr.go1(seed=2)
    motion = sim.simulate(0.7 + np.arange(5) / RATE)
    assert np.abs(motion.base_residual).max() < 1e-8
    assert motion.ft_wrench.shape == (5, 4, 6)
    assert np.all(motion.ft_wrench[:, :, 3:] == 0)
    total_weight = sum(theta[0] for theta in sim.true_links.values()) * 9.81
    assert 0.5 * total_weight < motion.ft_wrench[:, :, 2].sum(axis=1).mean() < 1.5 * total_weight
    assert [
        name
        for name in wb.check_truth(sim)
        if sim.true_links[name][0] >= inertials.PLACEHOLDER_MASS
    ] == []
    dt = 1 / RATE  # base velocity = derivative of the base configuration
    finite = pin.difference(sim.model, motion.q_full[1], motion.q_full[3])[:6] / (2 * dt)
    assert np.allclose(finite, motion.v_full[2, :6], atol=2e-3)


def test_icub_on_a_stand_keeps_its_base_still_and_the_stand_carries_it():
    """Fixed base: the root link level at 1 m, at rest; no contact sensor (the stand's wrench is
    the base residual: the robot's weight); the IMU reads the joints' motion only."""
    sim = wbr.icub_fixed(seed=4)
    motion = sim.simulate(1.0 + np.arange(4) / RATE)
    assert not sim.moving_base and sim.contact_frames == ()
    assert np.allclose(motion.q_full[:, :7], [0, 0, 1, 0, 0, 0, 1])
    assert np.all(motion.v_full[:, :6] == 0) and np.all(motion.a_full[:, :6] == 0)
    assert np.abs(motion.dq).min(axis=0).max() > 0  # the joints move
    weight = sum(theta[0] for theta in sim.true_links.values()) * 9.81
    assert np.allclose(motion.base_residual[:, 2], weight, rtol=0.2)
    assert motion.ft_wrench.shape == (4, 6, 6)
    with pytest.raises(ConfigError, match="fixed base"):
        wb.WholeBodySimulator(
            sim.cad_xml, [("l_sole", "contact")], "imu_frame", sim.joint_trajectory
        )


def test_bad_sensor_kind_or_frame_names_the_item():
    xml = example_robot_urdf("icub").read_text()
    trajectory = wbr.joint_trajectory(xml, ["l_knee"], 0, 10.0, 1.0)
    with pytest.raises(ConfigError, match="r_arm_ft_sensor: 'wrist'"):
        wb.WholeBodySimulator(
            xml, [("r_arm_ft_sensor", "wrist")], "imu_frame", trajectory, stance_frame="l_sole"
        )
    with pytest.raises(ConfigError, match="'no_such_frame'"):
        wb.WholeBodySimulator(
            xml,
            [("no_such_frame", "contact")],
            "imu_frame",
            trajectory,
            stance_frame="no_such_frame",
        )


def test_cli_writes_the_npz(tmp_path):
    from inertia_id_ros.cli import main

    out = tmp_path / "go1.npz"
    assert (
        main(
            [
                "sim-whole-body",
                str(out),
                "--robot",
                "go1",
                "--duration",
                "0.05",
                "--truth-urdf",
                str(tmp_path / "true.urdf"),
            ]
        )
        == 0
    )
    with np.load(out) as data:
        assert data["q"].shape == (10, 12) and list(data["ft_types"]) == ["contact"] * 4
        assert str(data["imu_frame"]) == wbr.GO1_IMU_FRAME
        true_links = set(data["true_links"])
    assert inertials.link_inertials((tmp_path / "true.urdf").read_text()).keys() == true_links
    assert main(["sim-whole-body", str(out), "--duration", "0"]) == 2


@pytest.mark.parametrize(
    "robot, urdf, base",
    [
        ("icub", "icub", "floating"),
        ("go1", "go1", "floating"),
        ("icub_suspended", "icub", "suspended"),
    ],
)
def test_the_whole_body_rows_hold_for_the_simulated_truth(robot, urdf, base):
    """The rows of core.whole_body (regressors) against this simulator (RNEA): Y x_true = b with
    the true links and offsets, from the IMU's readings and the true angular acceleration."""
    from inertia_id_ros.core.whole_body_model import FTSensor, WholeBodyModel, WholeBodySamples

    sim = wbr.ROBOTS[robot](seed=4, noise=wb.NoiseModel.none())
    motion = sim.simulate(1.0 + np.arange(8) / RATE)
    model = WholeBodyModel.from_urdf(
        example_robot_urdf(urdf),
        base,
        [FTSensor(f, k) for f, k in sim.ft_sensors],
        sim.imu_frame,
    )
    assert model.joint_names == sim.joint_names
    base = model.base_motion_from_imu(
        motion.q,
        motion.dq,
        motion.ddq,
        motion.imu_angular_velocity,
        motion.imu_linear_acceleration,
        motion.imu_angular_acceleration,
    )
    offsets = sim.ft_offsets
    samples = WholeBodySamples(
        motion.q, motion.dq, motion.ddq, base, motion.ft_wrench + offsets, motion.effort
    )
    Y, b, _ = model.rows(samples, with_efforts=True)
    x = np.concatenate(
        [sim.true_links[name] for name in model.bodies]
        + [offsets[k] for k, (_, kind) in enumerate(sim.ft_sensors) if kind == "internal"]
    )
    assert np.abs(Y @ x - b).max() < 1e-7 * max(1.0, np.abs(b).max())
    prior_error = np.abs(Y @ model.prior - b).max()
    assert prior_error > 0.1  # the URDF is not the truth
