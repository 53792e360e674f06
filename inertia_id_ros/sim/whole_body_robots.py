"""The simulated whole-body robots by name (:data:`ROBOTS`).

iCub (example-robot-data ``icub.urdf``) standing on its left sole, which stays fixed in the world
while all 32 joints move (the base moves as the stance leg and the contact require), six internal
F/T sensors (arms, legs, feet) and the sole's contact wrench measured, the IMU at ``imu_frame`` in
the head; Go1 with its base moving (a multi-sine in all six directions) and four point contacts at
the feet, each measured; iCub hanging from a crane F/T sensor; and iCub on a stand (its root link
fixed, level, the stand's wrench not measured); and iCub balancing on its left sole on a tilted
floor with only its leg F/T sensors, the ground's wrench not measured (to root the fit at the
sole). Each is a :class:`~inertia_id_ros.sim.whole_body_simulator.WholeBodySimulator`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pinocchio as pin

from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.sim.payload import ExcitingTrajectory
from inertia_id_ros.sim.whole_body_simulator import NoiseModel, WholeBodySimulator

ICUB_INTERNAL_SENSORS = (
    "l_arm_ft_sensor",
    "r_arm_ft_sensor",
    "l_leg_ft_sensor",
    "r_leg_ft_sensor",
    "l_foot_ft_sensor",
    "r_foot_ft_sensor",
)
"""iCub's six F/T sensors, fixed joints of its URDF."""
ICUB_LEG_SENSORS = ICUB_INTERNAL_SENSORS[2:]
"""iCub's leg and foot F/T sensors."""
ICUB_STANCE_FRAME = "l_sole"
ICUB_STANCE_TILT = (0.03, -0.05)
"""Roll and pitch (rad) of the floor under :func:`icub_stance`'s sole (about 2° and 3°)."""
ICUB_IMU_FRAME = "imu_frame"
ICUB_CRANE_FRAME = "root_link"
"""Where the suspended iCub hangs (its crane F/T sensor's frame)."""
ICUB_STANCE_JOINTS = tuple(
    f"l_{name}"
    for name in ("hip_pitch", "hip_roll", "hip_yaw", "knee", "ankle_pitch", "ankle_roll")
)
GO1_FEET = ("FL_foot", "FR_foot", "RL_foot", "RR_foot")
GO1_IMU_FRAME = "imu_link"


def _joint_limits(model: pin.Model, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    ids = [model.joints[model.getJointId(name)].idx_q for name in names]
    return model.lowerPositionLimit[ids].copy(), model.upperPositionLimit[ids].copy()


def joint_trajectory(
    cad_xml: str,
    joint_names: Sequence[str],
    seed: int,
    period: float,
    velocity_limit: float,
    quiet_joints: Mapping[str, float] | None = None,
) -> ExcitingTrajectory:
    """Multi-sine of ``joint_names`` within 80 % of the URDF's limits and ``velocity_limit``
    (rad/s); ``quiet_joints`` (name -> half range, rad) move about zero (clipped into the limits)
    by at most that (a stance leg that keeps the robot upright)."""
    model = pin.buildModelFromXML(cad_xml)
    lower, upper = _joint_limits(model, joint_names)
    center = 0.5 * (lower + upper)
    quiet_joints = dict(quiet_joints or {})
    for k, name in enumerate(joint_names):
        if name in quiet_joints:
            half = quiet_joints[name]
            center[k] = np.clip(0.0, lower[k] + half, upper[k] - half)
            lower[k], upper[k] = center[k] - half, center[k] + half
    return ExcitingTrajectory(
        lower,
        upper,
        np.full(len(joint_names), velocity_limit),
        period=period,
        n_harmonics=5,
        seed=seed,
        center=center,
        position_fraction=0.8,
        velocity_fraction=1.0,
    )


def icub(
    seed: int = 0,
    period: float = 20.0,
    velocity_limit: float = 1.0,
    stance_amplitude: float = 0.15,
    noise: NoiseModel | None = None,
    true_xml: str | None = None,
) -> WholeBodySimulator:
    """iCub standing on its left sole (fixed in the world), all 32 joints moving (a multi-sine,
    ``period`` s, up to ``velocity_limit`` rad/s; the stance leg within ``stance_amplitude`` rad
    of upright), its six internal F/T sensors, the sole's contact wrench and the head IMU."""
    cad_xml = example_robot_urdf("icub").read_text()
    sensors = [(name, "internal") for name in ICUB_INTERNAL_SENSORS]
    sensors.append((ICUB_STANCE_FRAME, "contact"))
    model = pin.buildModelFromXML(cad_xml)
    names = [model.names[j] for j in range(1, model.njoints)]
    trajectory = joint_trajectory(
        cad_xml,
        names,
        seed,
        period,
        velocity_limit,
        dict.fromkeys(ICUB_STANCE_JOINTS, stance_amplitude),
    )
    return WholeBodySimulator(
        cad_xml,
        sensors,
        ICUB_IMU_FRAME,
        trajectory,
        stance_frame=ICUB_STANCE_FRAME,
        noise=noise or NoiseModel(),
        true_xml=true_xml,
        seed=seed,
    )


def icub_stance(
    seed: int = 0,
    period: float = 20.0,
    velocity_limit: float = 1.0,
    stance_amplitude: float = 0.35,
    tilt: tuple[float, float] = ICUB_STANCE_TILT,
    noise: NoiseModel | None = None,
    true_xml: str | None = None,
) -> WholeBodySimulator:
    """iCub balancing on its left sole, still on a floor tilted by ``tilt`` (roll, pitch; rad),
    the ground's wrench not measured; all 32 joints moving (``period`` s, up to
    ``velocity_limit`` rad/s), the stance leg's within ``stance_amplitude`` rad of upright (the
    pelvis tilts by up to about 30°); only its four leg F/T sensors (the arms' are not logged)
    and the head IMU (to fit rooted at the sole, ``fixed_frame="l_sole"``, with or without it)."""
    cad_xml = example_robot_urdf("icub").read_text()
    model = pin.buildModelFromXML(cad_xml)
    names = [model.names[j] for j in range(1, model.njoints)]
    trajectory = joint_trajectory(
        cad_xml,
        names,
        seed,
        period,
        velocity_limit,
        dict.fromkeys(ICUB_STANCE_JOINTS, stance_amplitude),
    )
    return WholeBodySimulator(
        cad_xml,
        [(name, "internal") for name in ICUB_LEG_SENSORS],
        ICUB_IMU_FRAME,
        trajectory,
        stance_frame=ICUB_STANCE_FRAME,
        stance_tilt=(tilt[0], tilt[1]),
        noise=noise or NoiseModel(),
        true_xml=true_xml,
        seed=seed,
    )


def go1(
    seed: int = 0,
    period: float = 10.0,
    velocity_limit: float = 2.0,
    noise: NoiseModel | None = None,
    true_xml: str | None = None,
) -> WholeBodySimulator:
    """Go1 with its base moving (up to 5 cm and 0.2 rad in each direction, 0.3 m high), its 12
    joints moving (a multi-sine, ``period`` s), four point contacts at the feet, each measured
    (forces; the moments are zero), the IMU at ``imu_link``."""
    cad_xml = example_robot_urdf("go1").read_text()
    model = pin.buildModelFromXML(cad_xml)
    names = [model.names[j] for j in range(1, model.njoints)]
    trajectory = joint_trajectory(cad_xml, names, seed, period, velocity_limit)
    return WholeBodySimulator(
        cad_xml,
        [(foot, "contact") for foot in GO1_FEET],
        GO1_IMU_FRAME,
        trajectory,
        base_trajectory=base_multisine(seed, period),
        base_height=0.3,
        point_contacts=True,
        noise=noise or NoiseModel(),
        true_xml=true_xml,
        seed=seed,
    )


def base_multisine(
    seed: int, period: float, reach: float = 0.05, tilt: float = 0.2
) -> ExcitingTrajectory:
    """Base motion: a multi-sine (3 harmonics of ``period`` s) of the position within ``reach``
    (m) and of the Z-Y-X angles within ``tilt`` (rad), at most 0.3 m/s and 1 rad/s."""
    return ExcitingTrajectory(
        np.array([-reach] * 3 + [-tilt] * 3),
        np.array([reach] * 3 + [tilt] * 3),
        np.array([0.3] * 3 + [1.0] * 3),
        period=period,
        n_harmonics=3,
        seed=seed + 100,
        position_fraction=1.0,
        velocity_fraction=1.0,
    )


def icub_suspended(
    seed: int = 0,
    period: float = 20.0,
    velocity_limit: float = 1.0,
    noise: NoiseModel | None = None,
    true_xml: str | None = None,
) -> WholeBodySimulator:
    """iCub hanging from a crane through an F/T sensor at its root link (a contact sensor: the
    crane's wrench on the robot), swinging (:func:`base_multisine`, 1 m high), all 32 joints
    moving, its six internal F/T sensors and the head IMU (the issue's ``suspended`` base)."""
    cad_xml = example_robot_urdf("icub").read_text()
    sensors = [(name, "internal") for name in ICUB_INTERNAL_SENSORS] + [
        (ICUB_CRANE_FRAME, "contact")
    ]
    model = pin.buildModelFromXML(cad_xml)
    names = [model.names[j] for j in range(1, model.njoints)]
    trajectory = joint_trajectory(cad_xml, names, seed, period, velocity_limit)
    return WholeBodySimulator(
        cad_xml,
        sensors,
        ICUB_IMU_FRAME,
        trajectory,
        base_trajectory=base_multisine(seed, period),
        base_height=1.0,
        noise=noise or NoiseModel(),
        true_xml=true_xml,
        seed=seed,
    )


def icub_fixed(
    seed: int = 0,
    period: float = 20.0,
    velocity_limit: float = 1.0,
    noise: NoiseModel | None = None,
    true_xml: str | None = None,
) -> WholeBodySimulator:
    """iCub on a stand: its root link fixed in the world, level, 1 m high (the issue's ``fixed``
    base), all 32 joints moving, its six internal F/T sensors, no contact sensor (the stand's
    wrench is not measured); the head IMU still reads (at rest, a fixed base needs none)."""
    cad_xml = example_robot_urdf("icub").read_text()
    model = pin.buildModelFromXML(cad_xml)
    names = [model.names[j] for j in range(1, model.njoints)]
    trajectory = joint_trajectory(cad_xml, names, seed, period, velocity_limit)
    return WholeBodySimulator(
        cad_xml,
        [(name, "internal") for name in ICUB_INTERNAL_SENSORS],
        ICUB_IMU_FRAME,
        trajectory,
        base_height=1.0,
        noise=noise or NoiseModel(),
        true_xml=true_xml,
        seed=seed,
    )


ROBOTS: dict[str, Callable[..., WholeBodySimulator]] = {
    "icub": icub,
    "go1": go1,
    "icub_suspended": icub_suspended,
    "icub_fixed": icub_fixed,
    "icub_stance": icub_stance,
}
"""Whole-body simulators by name."""
