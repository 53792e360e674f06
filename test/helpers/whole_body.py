"""Independent whole-body samples from pinocchio RNEA; the iCub's sensors as the tests use
them."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from inertia_id_ros.core.whole_body_model import FTSensor
from inertia_id_ros.sim.whole_body_robots import ICUB_INTERNAL_SENSORS

ICUB_SENSORS = (FTSensor("l_sole", "contact"),) + tuple(
    FTSensor(frame, "internal") for frame in ICUB_INTERNAL_SENSORS
)
"""The iCub on its left sole: the sole's contact sensor and the six internal ones."""


def _urdf_with_moving_sensors(urdf_xml: str, joints: Sequence[str]) -> str:
    """URDF text with the fixed ``joints`` made revolute (so RNEA reports the wrench through
    them in its ``data.f``; they are held at 0)."""
    for name in joints:
        urdf_xml, count = re.subn(
            rf'(<joint\s+name="{re.escape(name)}"\s+type=)"fixed"(\s*>)',
            r'\1"revolute"\2<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" '
            r'velocity="1"/>',
            urdf_xml,
        )
        assert count == 1, name
    return urdf_xml


def whole_body_rnea_samples(
    urdf_xml: str,
    sensors: Sequence,
    n: int,
    seed: int = 0,
    base: str = "floating",
    imu_frame: str | None = None,
    amplitude: float = 0.5,
    rate: float | None = None,
):
    """Independent synthetic whole-body samples from pinocchio RNEA: random independent states,
    or, given ``rate`` (Hz), smooth sums of sinusoids sampled at ``rate`` (the base's orientation
    is a smooth function too, unrelated to its twist: the rows use no base pose).

    ``sensors``: ``FTSensor`` objects whose frames are fixed joints or links attached by one. The
    internal sensors' fixed joints become revolute joints held at 0, so RNEA's ``data.f`` there is
    the wrench the root side exerts beyond; the first contact sensor takes the wrench that makes
    the base equation hold (floating, suspended), the others none. Returns ``(joint_names, q, dq,
    ddq, imu, wrenches (n, S, 6), efforts)`` with ``imu = (angular_velocity, angular_acceleration,
    specific_force)`` (n, 3) each at ``imu_frame`` (IMU frame), or ``None``.
    """
    import xml.etree.ElementTree as ET

    import pinocchio as pin

    root = ET.fromstring(urdf_xml)
    joint_of_child = {j.find("child").get("link"): j.get("name") for j in root.findall("joint")}
    joint_names_xml = {j.get("name") for j in root.findall("joint")}

    def sensor_joint(frame: str) -> str:
        return frame if frame in joint_names_xml else joint_of_child[frame]

    internal = [sensor_joint(s.frame) for s in sensors if s.kind == "internal"]
    xml = _urdf_with_moving_sensors(urdf_xml, internal)
    floating = base != "fixed"
    model = (
        pin.buildModelFromXML(xml, pin.JointModelFreeFlyer())
        if floating
        else pin.buildModelFromXML(xml)
    )
    data = model.createData()
    rng = np.random.default_rng(seed)
    first = 2 if floating else 1
    names = [model.names[j] for j in range(first, model.njoints) if model.names[j] not in internal]
    ids = [model.getJointId(name) for name in names]
    vidx = np.array([model.joints[j].idx_v for j in ids])
    qidx = np.array([model.joints[j].idx_q for j in ids])
    if rate is None:
        q = amplitude * rng.standard_normal((n, len(ids)))
        dq = amplitude * rng.standard_normal((n, len(ids)))
        ddq = 3 * amplitude * rng.standard_normal((n, len(ids)))
        base_v = rng.standard_normal((n, 6))
        base_a = 3 * rng.standard_normal((n, 6))
        base_pose = [
            pin.SE3(pin.rpy.rpyToMatrix(*rng.uniform(-np.pi, np.pi, 3)), rng.normal(size=3))
            for _ in range(n)
        ]
    else:
        t = np.arange(n) / rate

        def sines(width: int, scale: float):
            w = rng.uniform(0.5, 3.0, (3, width))
            phase = rng.uniform(0, 2 * np.pi, (3, width))
            arg = t[:, None, None] * w + phase
            return (
                scale * np.sin(arg).sum(1),
                scale * (w * np.cos(arg)).sum(1),
                -scale * (w**2 * np.sin(arg)).sum(1),
            )

        q, dq, ddq = sines(len(ids), amplitude / 2)
        base_v, base_a = sines(6, 0.3)[1:]
        angles = sines(3, 0.2)[0]
        base_pose = [pin.SE3(pin.rpy.rpyToMatrix(*angle), np.zeros(3)) for angle in angles]
    wrenches = np.zeros((n, len(sensors), 6))
    efforts = np.zeros((n, len(ids)))
    imu = None if imu_frame is None else tuple(np.zeros((n, k)) for k in (3, 3, 3, 4))
    local = pin.ReferenceFrame.LOCAL
    contact = [k for k, s in enumerate(sensors) if s.kind == "contact"]
    for i in range(n):
        config = pin.neutral(model)
        config[qidx] = q[i]
        v = np.zeros(model.nv)
        a = np.zeros(model.nv)
        v[vidx], a[vidx] = dq[i], ddq[i]
        if floating:
            config[:7] = pin.SE3ToXYZQUAT(base_pose[i])
            if base == "floating":
                v[:6], a[:6] = base_v[i], base_a[i]
        pin.forwardKinematics(model, data, config, v, a)
        pin.updateFramePlacements(model, data)
        fext = [pin.Force.Zero() for _ in range(model.njoints)]
        if floating and contact:
            tau0 = pin.rnea(model, data, config, v, a)
            c = model.getFrameId(sensors[contact[0]].frame)
            frame = model.frames[c]
            base_from_contact = data.oMi[1].inverse() * data.oMf[c]
            wrench = base_from_contact.actInv(pin.Force(tau0[:6]))  # X*_{B<-c} F = tau0
            wrenches[i, contact[0]] = wrench.vector
            fext[frame.parentJoint] = frame.placement.act(wrench)
        tau = pin.rnea(model, data, config, v, a, fext)
        if floating and contact:
            assert np.abs(tau[:6]).max() < 1e-8
        efforts[i] = tau[vidx]
        for k, s in enumerate(sensors):
            if s.kind == "internal":
                wrenches[i, k] = data.f[model.getJointId(sensor_joint(s.frame))].vector
        if imu is not None:
            f = model.getFrameId(imu_frame)
            imu[0][i] = pin.getFrameVelocity(model, data, f, local).angular
            imu[1][i] = pin.getFrameAcceleration(model, data, f, local).angular
            rotation = data.oMf[f].rotation
            imu[2][i] = (
                pin.getFrameClassicalAcceleration(model, data, f, local).linear
                - rotation.T @ model.gravity.linear
            )
            quat = pin.Quaternion(rotation)
            imu[3][i] = [quat.x, quat.y, quat.z, quat.w]
    if imu is not None and rate is None:
        imu = imu[:3]
    return names, q, dq, ddq, imu, wrenches, efforts
