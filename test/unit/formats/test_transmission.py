"""Motor-side logs through a transmission in the input description
(:mod:`inertia_id_ros.formats.transmission`): a simulated 7-joint arm whose motor 7 turns with
joints 6 and 7 (a coupled wrist), gear ratios per joint and joint zeros ±π/2 off the URDF's,
positions, velocities and currents logged motor side at 5 kHz, read back joint side and compared
with the truth."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from inertia_id_ros.errors import DataError
from inertia_id_ros.formats.description import InputDescription
from inertia_id_ros.formats.recording import load_recording

JOINTS = [f"panda_joint{i}" for i in range(1, 8)]
MOTORS = [f"m{i}" for i in range(1, 8)]
RATIOS = np.array([160.0, 160.0, 120.0, 120.0, 100.0, 80.0, 80.0])
COUPLING = np.eye(7)
COUPLING[6, 5] = 1.0  # motor 7 turns with joint 6 as well as joint 7
ZERO_OFFSETS = np.array([0.0, 0.0, 0.0, np.pi / 2, 0.0, -np.pi / 2, 0.0])
TORQUE_CONSTANTS = np.array([0.12, 0.12, 0.1, 0.1, 0.08, 0.06, 0.06])


def truth(t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Joint-side positions (rad), velocities (rad/s) and torques (N·m), (N, 7)."""
    w = np.linspace(0.4, 1.6, 7)
    q = 0.5 * np.sin(np.outer(t, w) + np.arange(7))
    dq = 0.5 * w * np.cos(np.outer(t, w) + np.arange(7))
    tau = 10.0 * np.cos(np.outer(t, 0.5 * w)) + np.arange(7)
    return q, dq, tau


def description(tmp_path: Path, **transmission: object) -> InputDescription:
    data = {
        "streams": {"drives": {"file": "drives.npz", "rate": 5000}},
        "joints": {
            "names": dict(zip(MOTORS, JOINTS)),
            "position": {"key": "q_motor", "unit": "rad"},
            "velocity": {"key": "dq_motor"},
            "effort": {
                "key": "current",
                "unit": "A",
                "torque_constant": dict(zip(MOTORS, TORQUE_CONSTANTS.tolist())),
            },
            "transmission": transmission
            or {
                "gear_ratio": dict(zip(MOTORS, RATIOS.tolist())),
                "coupling": COUPLING.tolist(),
                "zero_offset": {"m4": float(np.pi / 2), "panda_joint6": float(-np.pi / 2)},
            },
        },
    }
    return InputDescription.from_mapping(data, tmp_path, "drives.yaml")


@pytest.fixture
def motor_log(tmp_path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    t = np.arange(10000) / 5000.0
    q, dq, tau = truth(t)
    matrix = np.diag(RATIOS) @ COUPLING  # motor positions per joint positions
    q_motor = (q + ZERO_OFFSETS) @ matrix.T
    dq_motor = dq @ matrix.T
    current = np.linalg.solve(matrix.T, tau.T).T / TORQUE_CONSTANTS  # tau = G^T tau_motor
    np.savez(tmp_path / "drives.npz", q_motor=q_motor, dq_motor=dq_motor, current=current)
    return q, dq, tau


def test_a_coupled_wrist_read_motor_side_gives_the_joint_side_truth(
    tmp_path: Path, motor_log: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> None:
    q, dq, tau = motor_log
    states = load_recording(description(tmp_path), JOINTS).joint_states
    assert states.joint_names == tuple(JOINTS)
    np.testing.assert_allclose(states.q, q, atol=1e-9)
    np.testing.assert_allclose(states.dq, dq, atol=1e-9)
    np.testing.assert_allclose(states.effort, tau, atol=1e-9)
    uncoupled = load_recording(
        description(tmp_path, gear_ratio=dict(zip(MOTORS, RATIOS.tolist()))), JOINTS
    ).joint_states
    assert np.abs(uncoupled.q[:, 6] - q[:, 6]).max() > 0.1  # the coupling matters


def test_a_transmission_refused_where_it_does_not_fit(tmp_path: Path, motor_log) -> None:
    with pytest.raises(DataError, match=r"coupling must be 7 rows of 7"):
        load_recording(description(tmp_path, coupling=[[1.0, 0.0], [0.0, 1.0]]), JOINTS)
    with pytest.raises(DataError, match=r"transmission.zero_offset: no joint\(s\) \['m9'\]"):
        load_recording(description(tmp_path, zero_offset={"m9": 1.0}), JOINTS)
    with pytest.raises(DataError, match="is singular"):
        load_recording(description(tmp_path, gear_ratio={"m3": 0.0}), JOINTS)
