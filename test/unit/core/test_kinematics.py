"""Robot models and sensor kinematics: finite differences, reductions, inertia beyond a frame."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from inertia_id_ros.core.kinematics import VECTORISED_FROM_SAMPLES, SensorKinematics
from inertia_id_ros.core.regressors import body_regressor
from inertia_id_ros.core.robots import (
    ROBOT_URDFS,
    configuration,
    example_robot_urdf,
    load_model,
    reduce_model,
)
from inertia_id_ros.errors import FrameNotFound, JointNotFound

TOY_URDF = """<robot name="toy">
  <link name="base"/>
  <link name="link1"><inertial><mass value="2.0"/><origin xyz="0 0 0.1"/>
    <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.01"/></inertial></link>
  <link name="link2"><inertial><mass value="1.0"/><origin xyz="0.1 0 0"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <link name="tool"><inertial><mass value="0.8"/><origin xyz="0.01 0.02 0.05" rpy="0.1 0.2 0.3"/>
    <inertia ixx="0.003" ixy="0.0001" ixz="0" iyy="0.002" iyz="0" izz="0.001"/></inertial></link>
  <link name="tip"><inertial><mass value="0.2"/><origin xyz="0 0 0.02"/>
    <inertia ixx="0.0001" ixy="0" ixz="0" iyy="0.0001" iyz="0" izz="0.0001"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="link1"/>
    <origin xyz="0 0 0.3"/><axis xyz="0 0 1"/>
    <limit lower="-2" upper="2" effort="10" velocity="2"/></joint>
  <joint name="j2" type="JOINT2"><parent link="link1"/><child link="link2"/>
    <origin xyz="0 0 0.2" rpy="0.3 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-2" upper="2" effort="10" velocity="2"/></joint>
  <joint name="ft_joint" type="fixed"><parent link="link2"/><child link="tool"/>
    <origin xyz="0.2 0 0" rpy="0 1.2 0"/></joint>
  <joint name="tip_joint" type="fixed"><parent link="tool"/><child link="tip"/>
    <origin xyz="0 0 0.1" rpy="0.5 0 0"/></joint>
</robot>"""


def toy_model(second_joint: str = "revolute") -> pin.Model:
    return load_model(urdf_xml=TOY_URDF.replace("JOINT2", second_joint))


# ---- robots ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["panda", "icub", "ur5", "solo12", "go1"])
def test_example_robots_load(name):
    path = example_robot_urdf(name)
    assert path.is_file() and path == example_robot_urdf(name)
    assert load_model(path).nq > 0


def test_icub_has_its_arm_force_torque_sensor_frames():
    model = load_model(example_robot_urdf("icub"))
    assert model.existFrame("r_arm_ft_sensor") and model.existFrame("l_arm_ft_sensor")


def test_load_model_errors_name_their_source(tmp_path):
    with pytest.raises(KeyError, match="known: .*panda"):
        example_robot_urdf("no_such_robot")
    missing = tmp_path / "missing.urdf"
    with pytest.raises(FileNotFoundError, match="missing.urdf"):
        load_model(missing)
    broken = tmp_path / "broken.urdf"
    broken.write_text("<robot name='x'><link")
    with pytest.raises(ValueError, match="broken.urdf"):
        load_model(broken)
    with pytest.raises(ValueError, match="exactly one"):
        load_model()
    with pytest.raises(ValueError, match="exactly one"):
        load_model(missing, urdf_xml=TOY_URDF)


def test_frame_not_found_lists_the_frames():
    with pytest.raises(FrameNotFound) as error:
        SensorKinematics(toy_model(), "no_such_frame")
    assert error.value.name == "no_such_frame"
    assert "ft_joint" in error.value.available and "tool" in str(error.value)


def test_reduce_model_locks_the_other_joints_at_the_given_positions():
    model = load_model(example_robot_urdf("panda"))
    keep = [f"panda_joint{i}" for i in (2, 4, 6)]
    locked = {"panda_joint1": 0.4, "panda_joint7": -0.3}
    reduced = reduce_model(model, keep, locked)
    assert list(reduced.names)[1:] == keep
    q_small = np.array([0.1, -1.5, 1.2])
    full = {**locked, "panda_joint2": 0.1, "panda_joint4": -1.5, "panda_joint6": 1.2}
    placements = []
    for m, q in ((reduced, q_small), (model, configuration(model, full))):
        data = m.createData()
        pin.framesForwardKinematics(m, data, q)
        placements.append(data.oMf[m.getFrameId("panda_link8")])
    assert placements[0].isApprox(placements[1], 1e-12)
    with pytest.raises(JointNotFound, match="ghost"):
        reduce_model(model, ["ghost"])


# ---- sensor kinematics -------------------------------------------------------------------------


def test_joint_names_default_to_the_chain_and_subsets_must_move_the_sensor():
    panda = load_model(example_robot_urdf("panda"))
    assert SensorKinematics(panda, "panda_link8").joint_names == tuple(
        f"panda_joint{i}" for i in range(1, 8)
    )
    icub = load_model(example_robot_urdf("icub"))
    kinematics = SensorKinematics(icub, "r_arm_ft_sensor")
    assert kinematics.joint_names == (
        "torso_pitch",
        "torso_roll",
        "torso_yaw",
        "r_shoulder_pitch",
        "r_shoulder_roll",
        "r_shoulder_yaw",
    )
    assert kinematics.subtree_joint_names() == (
        "r_elbow",
        "r_wrist_prosup",
        "r_wrist_pitch",
        "r_wrist_yaw",
    )
    subset = SensorKinematics(icub, "r_arm_ft_sensor", ["r_shoulder_yaw", "r_shoulder_pitch"])
    assert subset.joint_names == ("r_shoulder_pitch", "r_shoulder_yaw")
    with pytest.raises(ValueError, match="do not move frame"):
        SensorKinematics(icub, "r_arm_ft_sensor", ["r_elbow"])
    go1 = load_model(example_robot_urdf("go1"))  # a leg of a quadruped (the trunk is fixed)
    assert SensorKinematics(go1, "FL_foot").joint_names == (
        "FL_hip_joint",
        "FL_thigh_joint",
        "FL_calf_joint",
    )


def test_locked_chain_joints_are_held_at_their_positions():
    icub = load_model(example_robot_urdf("icub"))
    torso = {"torso_pitch": 0.2, "torso_roll": -0.1, "torso_yaw": 0.3}
    arm = ("r_shoulder_pitch", "r_shoulder_roll", "r_shoulder_yaw")
    full = SensorKinematics(icub, "r_arm_ft_sensor")
    part = SensorKinematics(icub, "r_arm_ft_sensor", arm, locked_positions=torso)
    rng = np.random.default_rng(0)
    q, dq, ddq = rng.normal(size=(3, 3))
    zeros = np.zeros(3)
    v_full, a_full = full.compute(
        np.r_[list(torso.values()), q], np.r_[zeros, dq], np.r_[zeros, ddq]
    )
    v_part, a_part = part.compute(q, dq, ddq)
    assert np.allclose(v_full, v_part, atol=1e-12) and np.allclose(a_full, a_part, atol=1e-12)


def sinusoid(t: float, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    k = np.arange(1, n + 1)
    w, phase, amplitude = 0.7 + 0.3 * k, 0.5 * k, 0.8 / k
    return (
        amplitude * np.sin(w * t + phase),
        amplitude * w * np.cos(w * t + phase),
        -amplitude * w**2 * np.sin(w * t + phase),
    )


@pytest.mark.parametrize(
    "robot, frame",
    [
        ("panda", "panda_link8"),
        ("icub", "r_arm_ft_sensor"),
        ("solo12", "FL_FOOT"),
        ("go1", "FL_foot"),
    ],
)
def test_twist_and_proper_acceleration_match_finite_differences(robot, frame):
    kinematics = SensorKinematics(load_model(example_robot_urdf(robot)), frame)
    n, h = kinematics.n_joints, 1e-4
    gravity = kinematics.gravity
    for t in (0.3, 1.7, 4.2):
        q, dq, ddq = sinusoid(t, n)
        v, a_g = kinematics.compute(q, dq, ddq)
        before = kinematics.sensor_placement(sinusoid(t - h, n)[0])
        after = kinematics.sensor_placement(sinusoid(t + h, n)[0])
        assert np.allclose(v, pin.log6(before.inverse() * after).vector / (2 * h), atol=1e-6)
        v_before = kinematics.compute(*sinusoid(t - h, n))[0]
        v_after = kinematics.compute(*sinusoid(t + h, n))[0]
        a = (v_after - v_before) / (2 * h)  # body-frame spatial acceleration = d/dt body twist
        rotation = kinematics.sensor_placement(q).rotation
        assert np.allclose(a_g, a - np.r_[rotation.T @ gravity, np.zeros(3)], atol=1e-6)


def test_batch_equals_single_samples_and_shapes_are_checked():
    kinematics = SensorKinematics(load_model(example_robot_urdf("panda")), "panda_link8")
    rng = np.random.default_rng(3)
    Q, DQ, DDQ = rng.normal(size=(3, 10, 7))
    V, A = kinematics.compute_batch(Q, DQ, DDQ)
    for i in range(10):
        v, a = kinematics.compute(Q[i], DQ[i], DDQ[i])
        assert np.array_equal(V[i], v) and np.array_equal(A[i], a)
    with pytest.raises(ValueError, match="panda_joint1"):
        kinematics.compute(np.zeros(6), np.zeros(6), np.zeros(6))


def test_a_continuous_joint_takes_its_angle():
    rng = np.random.default_rng(4)
    revolute = SensorKinematics(toy_model("revolute"), "ft_joint")
    continuous = SensorKinematics(toy_model("continuous"), "ft_joint")
    assert continuous.reduced_model.nq == 3 and continuous.n_joints == 2
    for _ in range(5):
        q, dq, ddq = rng.normal(size=(3, 2))
        for x, y in zip(revolute.compute(q, dq, ddq), continuous.compute(q, dq, ddq)):
            assert np.allclose(x, y, atol=1e-12)


def test_subtree_inertia_of_the_toy_splits_the_merged_body_at_the_sensor():
    model = toy_model()
    rotation = pin.rpy.rpyToMatrix(0.1, 0.2, 0.3)
    inertia = np.array([[0.003, 0.0001, 0], [0.0001, 0.002, 0], [0, 0, 0.001]])
    tool = pin.Inertia(0.8, np.array([0.01, 0.02, 0.05]), rotation @ inertia @ rotation.T)
    tip = pin.Inertia(0.2, np.array([0, 0, 0.02]), 1e-4 * np.eye(3))
    tool_to_tip = pin.SE3(pin.rpy.rpyToMatrix(0.5, 0, 0), np.array([0, 0, 0.1]))
    expected = (tool + tool_to_tip.act(tip)).toDynamicParameters()
    for frame in ("ft_joint", "tool"):  # the fixed joint's frame is its child link's frame
        assert np.allclose(SensorKinematics(model, frame).subtree_inertia(), expected, atol=1e-14)
    assert np.allclose(
        SensorKinematics(model, "tip").subtree_inertia(), tip.toDynamicParameters(), atol=1e-14
    )
    whole = SensorKinematics(model, "link2").subtree_inertia()  # j2's first link: all beyond j2
    assert np.isclose(whole[0], 2.0)


def test_icub_arm_subtree_inertia_matches_a_model_where_the_sensor_is_a_joint():
    """Turn iCub's fixed r_arm_ft_sensor joint into a revolute one held at 0: the bodies beyond
    are then the joint's subtree, and RNEA gives the wrench through the sensor."""
    xml = example_robot_urdf("icub").read_text()
    fixed = load_model(urdf_xml=xml)
    xml = xml.replace(
        '<joint name="r_arm_ft_sensor" type="fixed">',
        '<joint name="r_arm_ft_sensor" type="revolute">'
        '<limit effort="1" velocity="1" lower="-1" upper="1"/>',
    )
    xml = xml.replace('<parent joint="r_arm_ft_sensor" />', '<parent joint="unused" />')
    jointed = load_model(urdf_xml=xml)
    sensor_joint = jointed.getJointId("r_arm_ft_sensor")
    kinematics = SensorKinematics(fixed, "r_arm_ft_sensor")
    rng = np.random.default_rng(5)
    q_jointed = pin.randomConfiguration(jointed)
    q_jointed[jointed.joints[sensor_joint].idx_q] = 0.0
    q_fixed = configuration(
        fixed,
        {
            fixed.names[j]: q_jointed[jointed.joints[jointed.getJointId(fixed.names[j])].idx_q]
            for j in range(1, fixed.njoints)
        },
    )
    theta = kinematics.subtree_inertia(q_fixed)
    data = jointed.createData()
    pin.forwardKinematics(jointed, data, q_jointed)
    total = pin.Inertia.Zero()
    for j in jointed.subtrees[sensor_joint]:
        total += (data.oMi[sensor_joint].inverse() * data.oMi[j]).act(jointed.inertias[j])
    assert np.allclose(theta, total.toDynamicParameters(), atol=1e-12)
    assert np.isclose(theta[0], 1.641)  # r_upper_arm 0.729 + forearm and hand 0.912
    # the wrench through the sensor when only the chain moves (the arm beyond is rigid)
    dq, ddq = np.zeros(jointed.nv), np.zeros(jointed.nv)
    chain = [jointed.joints[jointed.getJointId(n)].idx_v for n in kinematics.joint_names]
    dq[chain], ddq[chain] = rng.normal(size=(2, len(chain)))
    pin.rnea(jointed, data, q_jointed, dq, ddq)
    q_chain = np.array(
        [q_jointed[jointed.joints[jointed.getJointId(n)].idx_q] for n in kinematics.joint_names]
    )
    v, a_g = kinematics.compute(q_chain, dq[chain], ddq[chain])
    assert np.allclose(body_regressor(v, a_g) @ theta, data.f[sensor_joint].vector, atol=1e-10)


def test_subtree_inertia_of_the_panda_flange_is_hand_and_fingers():
    kinematics = SensorKinematics(load_model(example_robot_urdf("panda")), "panda_link8")
    assert np.isclose(kinematics.subtree_inertia()[0], 0.73 + 2 * 0.015)
    assert set(ROBOT_URDFS) >= {"panda", "icub", "ur5", "solo12", "go1"}


# ---- vectorised chain against pinocchio --------------------------------------------------------


def assert_matches_pinocchio(kinematics: SensorKinematics, seed: int, n: int = 50) -> None:
    """compute_batch (vectorised) equals the per-sample pinocchio loop on random samples."""
    assert kinematics._chain is not None and n >= VECTORISED_FROM_SAMPLES
    Q, DQ, DDQ = np.random.default_rng(seed).normal(size=(3, n, kinematics.n_joints))
    V, A = kinematics.compute_batch(Q, DQ, DDQ)
    V_ref, A_ref = kinematics._compute_batch_pinocchio(Q, DQ, DDQ)
    assert V.shape == A.shape == (n, 6)
    assert np.allclose(V, V_ref, rtol=0, atol=1e-12) and np.allclose(A, A_ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "robot, frame, joints, locked",
    [
        ("panda", "panda_link8", None, None),
        ("panda", "panda_hand_tcp", None, None),
        ("ur5", "tool0", None, None),
        ("icub", "r_arm_ft_sensor", None, None),  # a fixed joint, unaligned axes
        ("icub", "l_leg_ft_sensor", None, None),
        ("icub", "r_arm_ft_sensor", ["r_shoulder_roll", "torso_yaw"], {"torso_pitch": 0.3}),
        ("go1", "FL_foot", None, None),
    ],
)
def test_vectorised_batch_matches_pinocchio_on_example_robots(robot, frame, joints, locked):
    model = load_model(example_robot_urdf(robot))
    assert_matches_pinocchio(SensorKinematics(model, frame, joints, locked), seed=len(frame))


@pytest.mark.parametrize(
    "second_joint, axis",
    [
        ("revolute", "0 1 0"),
        ("revolute", "0 0 -1"),
        ("revolute", "0.6 0 0.8"),
        ("continuous", "0 1 0"),
        ("continuous", "0 0.6 -0.8"),
        ("prismatic", "0 1 0"),
        ("prismatic", "0.48 0.6 0.64"),
    ],
)
def test_vectorised_batch_matches_pinocchio_on_each_joint_type(second_joint, axis):
    xml = TOY_URDF.replace("JOINT2", second_joint).replace(
        '<axis xyz="0 1 0"/>', f'<axis xyz="{axis}"/>'
    )
    model = load_model(urdf_xml=xml)
    for seed, frame in enumerate(("ft_joint", "tip", "link2", "link1")):
        assert_matches_pinocchio(SensorKinematics(model, frame), seed)


def test_small_batches_run_pinocchio_and_agree_with_large_ones():
    kinematics = SensorKinematics(load_model(example_robot_urdf("ur5")), "tool0")
    Q, DQ, DDQ = np.random.default_rng(8).normal(size=(3, VECTORISED_FROM_SAMPLES, 6))
    small = kinematics.compute_batch(Q[:-1], DQ[:-1], DDQ[:-1])
    reference = kinematics._compute_batch_pinocchio(Q[:-1], DQ[:-1], DDQ[:-1])
    large = kinematics.compute_batch(Q, DQ, DDQ)
    for x, y, z in zip(small, reference, large):
        assert np.array_equal(x, y) and np.allclose(x, z[:-1], rtol=0, atol=1e-12)


def test_vectorised_batch_of_a_frame_on_the_base_or_of_no_samples():
    base = SensorKinematics(toy_model(), "base")
    assert base.n_joints == 0
    assert_matches_pinocchio(base, seed=0, n=VECTORISED_FROM_SAMPLES)
    assert np.allclose(
        base.compute(np.zeros(0), np.zeros(0), np.zeros(0))[1], [0, 0, 9.81, 0, 0, 0]
    )
    kinematics = SensorKinematics(toy_model("continuous"), "tip")
    V, A = kinematics.compute_batch(*np.zeros((3, 0, 2)))
    assert V.shape == A.shape == (0, 6)
    with pytest.raises(ValueError, match="DQ must have shape"):
        kinematics.compute_batch(np.zeros((4, 2)), np.zeros((4, 3)), np.zeros((4, 2)))


@pytest.mark.parametrize(
    "screw",
    [
        pin.JointModelHZ(0.05),
        pin.JointModelHelicalUnaligned(np.array([0.0, 0.6, 0.8]), 0.1),
        pin.JointModelComposite(pin.JointModelRZ()),
    ],
)
def test_other_joint_types_fall_back_to_pinocchio(screw):
    model = pin.Model()
    inertia = pin.Inertia(1.0, np.zeros(3), 0.01 * np.eye(3))
    placement = pin.SE3(pin.rpy.rpyToMatrix(0.1, 0.2, 0.3), np.array([0.1, 0.0, 0.3]))
    shoulder = model.addJoint(0, pin.JointModelRY(), placement, "shoulder")
    model.appendBodyToJoint(shoulder, inertia, pin.SE3.Identity())
    model.addJointFrame(shoulder)
    screw_id = model.addJoint(shoulder, screw, placement.inverse(), "screw")
    model.appendBodyToJoint(screw_id, inertia, pin.SE3.Identity())
    parent = model.addJointFrame(screw_id)
    model.addFrame(pin.Frame("sensor", screw_id, parent, placement, pin.FrameType.OP_FRAME))
    kinematics = SensorKinematics(model, "sensor")
    assert kinematics._chain is None
    Q, DQ, DDQ = np.random.default_rng(6).normal(size=(3, 5, 2))
    V, A = kinematics.compute_batch(Q, DQ, DDQ)
    V_ref, A_ref = kinematics._compute_batch_pinocchio(Q, DQ, DDQ)
    assert np.array_equal(V, V_ref) and np.array_equal(A, A_ref)
    with pytest.raises(ValueError, match="Q must have shape"):
        kinematics.compute_batch(np.zeros((5, 3)), DQ, DDQ)
    assert_matches_pinocchio(SensorKinematics(model, "shoulder"), seed=7)  # the screw is beyond
