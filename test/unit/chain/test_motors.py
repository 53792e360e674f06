"""A motor coupled to several joints in the link model (:mod:`inertia_id_ros.chain.motors`): the
Panda's joints with a coupled wrist (motor 7 turns with joints 6 and 7), its rotor inertia and
friction checked against torques computed independently, motor side then through ``Gᵀ``."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_id_ros.chain.coulomb_width import coulomb_width_blocks, with_coulomb_velocity
from inertia_id_ros.chain.friction import JointDrive
from inertia_id_ros.chain.links import JointTorqueData, LinkModel, link_channels, with_gravity
from inertia_id_ros.chain.motors import MotorCoupling
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.sim.payload import PANDA_ARM_JOINTS

RATIOS = np.array([160.0, 160.0, 120.0, 120.0, 100.0, 80.0, 80.0])
WIDTH = 0.02  # rad/s, joint side


def wrist_coupling(c: float = 0.5) -> MotorCoupling:
    coupling = np.eye(7)
    coupling[6, 5] = c  # motor 7 turns with joint 6 as well as joint 7
    return MotorCoupling(PANDA_ARM_JOINTS, np.diag(RATIOS) @ coupling)


def panda(coupling: MotorCoupling | None = None) -> LinkModel:
    return LinkModel.from_urdf(
        example_robot_urdf("panda"),
        PANDA_ARM_JOINTS,
        drives=JointDrive(coulomb_velocity=WIDTH),
        coupling=coupling,
    )


def motion(seed: int = 0, n: int = 40) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, (n, 7)), rng.uniform(-1, 1, (n, 7)), rng.uniform(-3, 3, (n, 7))


def test_only_a_coupled_motor_adds_terms_and_without_one_the_model_is_unchanged() -> None:
    plain = panda()
    diagonal = panda(MotorCoupling(PANDA_ARM_JOINTS, np.diag(RATIOS)))
    assert diagonal.parameter_names == plain.parameter_names and diagonal.motors == ()
    coupled = panda(wrist_coupling())
    motor_names = ["panda_joint7_motor." + t for t in ("armature", "viscous", "coulomb")]
    assert list(coupled.parameter_names) == [*plain.parameter_names, *motor_names]
    assert set(coupled.nonnegative) == set(plain.nonnegative) | {
        plain.n_parameters + k for k in (0, 1, 2)
    }
    np.testing.assert_array_equal(coupled.prior, np.r_[plain.prior, 0.0, 0.0, 0.0])
    (motor,) = coupled.motors
    np.testing.assert_allclose(motor.row, [0, 0, 0, 0, 0, 40.0, 80.0])
    assert motor.gear == 80.0
    assert motor.coulomb_velocity == pytest.approx(80.0 * WIDTH)  # motor side, the same width
    q, dq, ddq = motion()
    np.testing.assert_array_equal(
        coupled.joint_torque_regressor(q, dq, ddq)[:, :, : plain.n_parameters],
        plain.joint_torque_regressor(q, dq, ddq),
    )


def test_a_coupled_motors_regressor_is_its_torque_through_the_transmission() -> None:
    coupling = wrist_coupling(c=-0.7)
    plain, coupled = panda(), panda(coupling)
    rng = np.random.default_rng(3)
    x_plain = plain.prior + np.r_[np.zeros(70), rng.uniform(0.0, 0.5, plain.n_parameters - 70)]
    rotor, viscous, coulomb = 3e-5, 2e-4, 0.03  # kg m², N m s/rad, N m (motor side)
    x = np.r_[x_plain, 80.0**2 * rotor, 80.0**2 * viscous, 80.0 * coulomb]  # at joint 7
    q, dq, ddq = motion(seed=1)
    # motor 7's torque in its own coordinate, then to the joints: tau_joint = Gᵀ tau_motor
    G = coupling.matrix
    dq_motor, ddq_motor = dq @ G.T, ddq @ G.T
    tau_motor = np.zeros_like(dq)
    tau_motor[:, 6] = (
        rotor * ddq_motor[:, 6]
        + viscous * dq_motor[:, 6]
        + coulomb * np.tanh(dq_motor[:, 6] / (80.0 * WIDTH))
    )
    expected = plain.inverse_dynamics(x_plain, q, dq, ddq) + tau_motor @ G
    Y = coupled.joint_torque_regressor(q, dq, ddq)
    np.testing.assert_allclose(Y @ x + coupled.known_torques(ddq), expected, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(coupled.inverse_dynamics(x, q, dq, ddq), expected, atol=1e-9)
    assert np.abs(tau_motor @ G)[:, 5].max() > 0.1  # joint 6 feels motor 7
    values = coupled.motors[0].motor_side(coupled.drive_parameters(x)["panda_joint7_motor"])
    assert values == pytest.approx({"rotor_inertia": rotor, "viscous": viscous, "coulomb": coulomb})


def test_a_coupled_motors_pull_back_is_its_regressors_derivative() -> None:
    (motor,) = panda(wrist_coupling(c=-0.7)).motors
    _, dq, ddq = motion(seed=2, n=6)
    dq *= 0.05  # near the Coulomb sign's width, where it bends
    H = np.random.default_rng(4).normal(size=(6, 7, 3))
    g_dq, g_ddq = motor.pull_back(H, dq)
    step = 1e-7
    for k in range(7):
        unit = step * np.eye(7)[k]
        numeric_dq = np.einsum(
            "int,int->i", H, motor.regressor(dq + unit, ddq) - motor.regressor(dq - unit, ddq)
        ) / (2 * step)
        numeric_ddq = (
            np.einsum("int,int->i", H, motor.regressor(dq, ddq + unit) - motor.regressor(dq, ddq))
            / step
        )
        np.testing.assert_allclose(g_dq[:, k], numeric_dq, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(g_ddq[:, k], numeric_ddq, rtol=1e-5, atol=1e-6)
    assert np.count_nonzero(g_dq) == 6 * 2  # joints 6 and 7 only


def test_derived_models_keep_the_coupled_motor_and_its_coulomb_width() -> None:
    coupled = panda(wrist_coupling())
    for derived in (
        with_gravity(coupled, np.array([0.0, 1.0, -9.7])),
        with_coulomb_velocity(coupled, 0.05),
    ):
        assert derived.parameter_names == coupled.parameter_names
    assert with_coulomb_velocity(coupled, 0.05).motors[0].coulomb_velocity == pytest.approx(4.0)
    q, dq, ddq = motion(seed=2, n=50)
    data = JointTorqueData(q, dq, ddq, np.random.default_rng(0).normal(size=q.shape))
    blocks = coulomb_width_blocks(coupled, data, (0.0, 0.05), n_folds=2)
    for width in (0.0, 0.05):
        direct = [
            link_channels(with_coulomb_velocity(coupled, width), data.subset(slice(0, 25))),
            link_channels(with_coulomb_velocity(coupled, width), data.subset(slice(25, 50))),
        ]
        for block, expected in zip(blocks.folds(width), direct):
            np.testing.assert_allclose(block.gram, expected.gram, rtol=1e-12, atol=1e-12)


def test_a_motor_turning_with_a_joint_outside_the_chain() -> None:
    coupling = wrist_coupling()
    wrist = ["panda_joint7"]
    with pytest.raises(ValueError, match="turns with joints \\['panda_joint6'\\]"):
        LinkModel.from_urdf(example_robot_urdf("panda"), wrist, coupling=coupling)
    assert coupling.turning_outside(wrist) == ("panda_joint7",)
    assert coupling.turning_outside(PANDA_ARM_JOINTS) == ()
    restricted = coupling.restricted(["panda_joint6", "panda_joint7"])
    assert restricted.coupled == ("panda_joint7",)
    alone = coupling.restricted(wrist)
    assert alone.coupled == () and alone.matrix.tolist() == [[80.0]]
    combined = MotorCoupling.combined([alone, MotorCoupling(("a", "b"), [[2.0, 1.0], [0.0, 3.0]])])
    assert combined is not None and combined.coupled == ("a",)
    read = MotorCoupling.from_json(combined.as_json())
    assert read.joint_names == ("panda_joint7", "a", "b")
    np.testing.assert_array_equal(read.matrix, [[80.0, 0, 0], [0, 2.0, 1.0], [0, 0, 3.0]])


def test_a_chain_config_gives_the_link_model_its_coupled_motors(tmp_path) -> None:
    """The node's links mode reads a coupling from its chain config: with the joints' gear
    ratios it is the motor-to-joint matrix; a joint outside the chain is refused."""
    from inertia_id_ros.chain.actuators import ActuatorConfig, ChainConfig
    from inertia_id_ros.errors import ConfigError

    joints = ("panda_joint6", "panda_joint7")
    chain = ChainConfig(
        joints,
        {"panda_joint7": ActuatorConfig(gear_ratio=50.0)},
        robot="panda",
        coupling={"joints": list(joints), "matrix": [[1.0, 0.0], [0.5, 1.0]]},
    )
    coupling = chain.motor_coupling()
    assert coupling is not None and np.allclose(coupling.matrix, [[1.0, 0.0], [25.0, 50.0]])
    assert "panda_joint7_motor.armature" in chain.link_model().parameter_names
    path = tmp_path / "chain.yaml"
    chain.save(path)
    assert ChainConfig.load(path).coupling == chain.coupling
    bad = ChainConfig(joints, robot="panda", coupling={"joints": ["panda_joint1"], "matrix": [[1]]})
    with pytest.raises(ConfigError, match=r"\['panda_joint1'\] are not joints of the chain"):
        bad.motor_coupling()
    with pytest.raises(ConfigError, match="square 'matrix'"):
        ChainConfig(joints, robot="panda", coupling={"joints": list(joints)}).motor_coupling()
