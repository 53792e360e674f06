"""The 7-DOF Barrett WAM of Sousa & Cortesão (2014, "Physical feasibility of robot base
inertial parameter identification: a linear matrix inequality approach", IJRR) from its standard
Denavit–Hartenberg table, as a URDF, with joint friction and drive inertia, in simulation.

**DH** (standard, Craig's "distal" form): frame ``k`` follows frame ``k-1`` by
``T_k = Rz(q_k) Tz(d_k) Tx(a_k) Rx(alpha_k)`` (:func:`dh_transform`); joint ``k`` turns about
``z_{k-1}``. Table (:data:`WAM_DH`, rows ``(alpha, a, d)``, m and rad)::

    1: -pi/2,  0,      0       2:  pi/2, 0,      0      3: -pi/2, 0.045, 0.55
    4:  pi/2, -0.045,  0       5: -pi/2, 0,      0.3    6:  pi/2, 0,     0
    7:  0,     0,      0.06

**URDF** (:func:`dh_urdf`): link ``wam_link{k}`` is frame ``k-1`` turned by ``q_k`` (its origin on
joint ``k``'s axis, its z that axis); joint ``k+1`` sits at ``Tz(d_k) Tx(a_k) Rx(alpha_k)`` in it,
so the URDF's forward kinematics is the DH product (tested with pinocchio); a fixed joint puts the
flange ``wam_flange`` (DH frame 7) on link 7. ``wam_base`` is frame 0 (z up, gravity -z).

**Inertials** (:data:`WAM_LINKS`): APPROXIMATE, plausible values only (total link mass 27.0 kg,
about the real arm's; each link a solid box of the stated size around a COM placed along the
link): not Barrett's data. Joint limits are the WAM's published ranges (rounded).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin

from inertia_id_ros.chain.friction import DriveParameters, JointDrive
from inertia_id_ros.chain.links import LinkModel
from inertia_id_ros.core.inertia import inertia_to_msg_order
from inertia_id_ros.core.robots import load_model
from inertia_id_ros.sim.payload import ExcitingTrajectory, box_inertia
from inertia_id_ros.sim.torques import JointTorqueSimulator

WAM_DH: tuple[tuple[float, float, float], ...] = (
    (-np.pi / 2, 0.0, 0.0),
    (np.pi / 2, 0.0, 0.0),
    (-np.pi / 2, 0.045, 0.55),
    (np.pi / 2, -0.045, 0.0),
    (-np.pi / 2, 0.0, 0.3),
    (np.pi / 2, 0.0, 0.0),
    (0.0, 0.0, 0.06),
)
"""Sousa & Cortesão's DH table of the WAM: ``(alpha rad, a m, d m)`` of joints 1..7."""
WAM_JOINTS = tuple(f"wam_joint{k}" for k in range(1, 8))
WAM_LINK_NAMES = tuple(f"wam_link{k}" for k in range(1, 8))
WAM_FLANGE = "wam_flange"
WAM_BASE = "wam_base"
WAM_LIMITS = (
    (-2.6, 2.6),
    (-2.0, 2.0),
    (-2.8, 2.8),
    (-0.9, 3.1),
    (-4.8, 1.3),
    (-1.6, 1.6),
    (-3.0, 3.0),
)
"""Joint ranges (rad), rounded from the WAM's specifications."""
WAM_VELOCITY_LIMIT = 2.0
"""rad/s, every joint (a round value for the simulated trajectories)."""


@dataclass(frozen=True)
class LinkInertial:
    """A link of :func:`dh_urdf`: ``mass`` (kg), ``com`` (3,) (m) in the link frame, and a
    solid box of edges ``size`` (3,) (m) along the link axes giving the inertia about the COM."""

    mass: float
    com: tuple[float, float, float]
    size: tuple[float, float, float]

    @property
    def inertia_com(self) -> np.ndarray:
        """3x3 inertia about the COM (kg m²), link axes."""
        return box_inertia(self.mass, self.size)


WAM_LINKS: tuple[LinkInertial, ...] = (
    LinkInertial(10.77, (0.0, 0.01, -0.12), (0.20, 0.20, 0.30)),  # shoulder housing
    LinkInertial(3.87, (0.0, 0.03, 0.01), (0.15, 0.15, 0.15)),  # shoulder pitch
    LinkInertial(5.00, (0.02, 0.0, 0.35), (0.10, 0.10, 0.50)),  # upper arm, elbow drive
    LinkInertial(2.40, (-0.03, -0.05, 0.0), (0.12, 0.12, 0.12)),  # elbow
    LinkInertial(2.60, (0.0, 0.0, 0.18), (0.08, 0.08, 0.30)),  # forearm, wrist drives
    LinkInertial(1.20, (0.0, 0.02, 0.0), (0.08, 0.08, 0.08)),  # wrist pitch
    LinkInertial(1.20, (0.0, 0.0, 0.04), (0.08, 0.08, 0.05)),
)  # wrist roll, flange
"""APPROXIMATE inertials of links 1..7 in their URDF frames (27.04 kg in all)."""

WAM_DRIVES: tuple[DriveParameters, ...] = tuple(
    DriveParameters(viscous, coulomb, offset, armature)
    for viscous, coulomb, offset, armature in (
        (1.5, 2.0, 0.3, 1.2),
        (1.2, 1.8, -0.4, 1.2),
        (0.6, 1.0, 0.2, 0.35),
        (0.6, 1.0, -0.2, 0.35),
        (0.10, 0.25, 0.05, 0.05),
        (0.10, 0.25, -0.04, 0.05),
        (0.05, 0.15, 0.02, 0.015),
    )
)
"""Simulated joint friction (viscous N·m·s/rad, Coulomb N·m, offset N·m) and drive inertia
(reflected rotor inertia, kg·m²) per joint: plausible for cable-driven WAM joints, not measured."""


def dh_transform(alpha: float, a: float, d: float, q: float) -> np.ndarray:
    """4x4 ``Rz(q) Tz(d) Tx(a) Rx(alpha)``: frame ``k`` in frame ``k-1`` (standard DH)."""
    cq, sq, ca, sa = np.cos(q), np.sin(q), np.cos(alpha), np.sin(alpha)
    return np.array(
        [
            [cq, -sq * ca, sq * sa, a * cq],
            [sq, cq * ca, -cq * sa, a * sq],
            [0.0, sa, ca, d],
            [0.0, 0.0, 0.0, 1.0],
        ]
    )


def dh_forward_kinematics(
    dh: Sequence[tuple[float, float, float]], q: Sequence[float]
) -> list[np.ndarray]:
    """4x4 placements of DH frames ``1..n`` in frame 0 at joint positions ``q`` (n,) (rad)."""
    placements, T = [], np.eye(4)
    for (alpha, a, d), qk in zip(dh, q):
        T = T @ dh_transform(alpha, a, d, qk)
        placements.append(T)
    return placements


def _origin(transform: np.ndarray) -> str:
    rpy = pin.rpy.matrixToRpy(transform[:3, :3])
    xyz = " ".join(repr(float(v)) for v in transform[:3, 3])
    return f'<origin xyz="{xyz}" rpy="{" ".join(repr(float(v)) for v in rpy)}"/>'


def dh_urdf(
    dh: Sequence[tuple[float, float, float]],
    links: Sequence[LinkInertial],
    limits: Sequence[tuple[float, float]],
    prefix: str = "wam",
    name: str = "wam7_dh",
    velocity_limit: float = WAM_VELOCITY_LIMIT,
    effort_limit: float = 100.0,
) -> str:
    """URDF text of the revolute chain of a standard DH table (see the module docstring): links
    ``{prefix}_base``, ``{prefix}_link{k}``, ``{prefix}_flange``; joints ``{prefix}_joint{k}``."""
    n = len(dh)
    if not len(links) == len(limits) == n:
        raise ValueError(
            f"{n} DH rows need as many links and limits, got {len(links)} and {len(limits)}"
        )
    base, flange = f"{prefix}_base", f"{prefix}_flange"
    lines = [
        '<?xml version="1.0"?>',
        f"<!-- {name}: generated by inertia_id_ros.sim.wam.dh_urdf from the standard DH "
        "table; link k is DH frame k-1 turned by q_k. Inertials APPROXIMATE. -->",
        f'<robot name="{name}">',
        f'  <link name="{base}"/>',
    ]
    parent, placement = base, np.eye(4)  # joint k's origin in its parent link
    for k, ((alpha, a, d), link, (lower, upper)) in enumerate(zip(dh, links, limits), start=1):
        child = f"{prefix}_link{k}"
        six = inertia_to_msg_order(link.inertia_com)
        inertia = " ".join(
            f'{key}="{float(v)!r}"'
            for key, v in zip(("ixx", "ixy", "ixz", "iyy", "iyz", "izz"), six)
        )
        lines += [
            f'  <joint name="{prefix}_joint{k}" type="revolute">',
            f'    <parent link="{parent}"/>',
            f'    <child link="{child}"/>',
            f"    {_origin(placement)}",
            '    <axis xyz="0 0 1"/>',
            f'    <limit lower="{lower!r}" upper="{upper!r}" effort="{effort_limit!r}" '
            f'velocity="{velocity_limit!r}"/>',
            "  </joint>",
            f'  <link name="{child}">',
            "    <inertial>",
            f'      <origin xyz="{" ".join(repr(float(c)) for c in link.com)}" rpy="0 0 0"/>',
            f'      <mass value="{float(link.mass)!r}"/>',
            f"      <inertia {inertia}/>",
            "    </inertial>",
            "  </link>",
        ]
        parent, placement = child, dh_transform(alpha, a, d, 0.0)
    lines += [
        f'  <joint name="{prefix}_flange_joint" type="fixed">',
        f'    <parent link="{parent}"/>',
        f'    <child link="{flange}"/>',
        f"    {_origin(placement)}",
        "  </joint>",
        f'  <link name="{flange}"/>',
        "</robot>",
        "",
    ]
    return "\n".join(lines)


WAM_URDF = Path(__file__).resolve().parents[2] / "config" / "wam7_dh.urdf"
"""The committed URDF of the WAM, ``dh_urdf(WAM_DH, WAM_LINKS, WAM_LIMITS)`` (a test keeps it
so)."""


def wam_urdf() -> str:
    """URDF text of the WAM (see the module docstring)."""
    return dh_urdf(WAM_DH, WAM_LINKS, WAM_LIMITS)


def wam_model() -> pin.Model:
    """pinocchio model of :func:`wam_urdf`."""
    return load_model(urdf_xml=wam_urdf())


def wam_link_model(drive: JointDrive = JointDrive()) -> LinkModel:
    """The WAM's 7 links with ``drive`` at every joint (default: viscous, Coulomb (exact sign),
    offset and drive inertia estimated)."""
    return LinkModel(wam_model(), drive)


def wam_trajectory(
    model: LinkModel, seed: int, period: float = 10.0, n_harmonics: int = 5
) -> ExcitingTrajectory:
    """Exciting Fourier trajectory of every joint within 70 % of the ranges and 60 % of the
    velocity limit."""
    return ExcitingTrajectory.for_model(
        model.model,
        model.joint_names,
        period=period,
        n_harmonics=n_harmonics,
        seed=seed,
        position_fraction=0.7,
        velocity_fraction=0.6,
    )


def wam_simulator(
    seed: int, torque_noise_std: float | Sequence[float] = 0.3, links: LinkModel | None = None
) -> JointTorqueSimulator:
    """Joint torques of the WAM (links :data:`WAM_LINKS`, drives :data:`WAM_DRIVES`) along
    :func:`wam_trajectory` (``seed``), white torque noise ``torque_noise_std`` N·m."""
    links = wam_link_model() if links is None else links
    return JointTorqueSimulator(
        links, wam_trajectory(links, seed), drives=WAM_DRIVES, torque_noise_std=torque_noise_std
    )
