"""A URDF's inertials: read per link, and perturbed into a *true* robot that differs from the CAD.

Mass, COM and inertia about the COM of every ``<inertial>``, in the link frame
(:func:`link_inertials`); :func:`perturb_inertials` moves each within bounds
(:data:`MASS_FRACTION`, :data:`COM_OFFSET`, :data:`INERTIA_FRACTION`) keeping every link fully
consistent.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin

from inertia_id_ros.core.inertia import theta_from_inertia

MASS_FRACTION = 0.30
"""True masses differ from the CAD's by up to this fraction."""
COM_OFFSET = 0.02
"""True COMs differ from the CAD's by up to this (m) along each axis."""
INERTIA_FRACTION = 0.40
"""True principal moments about the COM differ from the CAD's by up to this fraction."""
PLACEHOLDER_MASS = 1e-3
"""Links lighter than this (kg) are placeholders (a massless root, a camera): not perturbed."""


def link_inertials(urdf_xml: str) -> dict[str, np.ndarray]:
    """``theta`` (10,) of every URDF link with a positive mass, about and in the link's frame."""
    inertials = {}
    for link in ET.fromstring(urdf_xml).findall("link"):
        inertial = link.find("inertial")
        if inertial is None:
            continue
        mass, com, inertia = _read_inertial(inertial)
        if mass > 0:
            inertials[link.get("name", "")] = theta_from_inertia(mass, com, inertia)
    return inertials


def _read_inertial(inertial: ET.Element) -> tuple[float, np.ndarray, np.ndarray]:
    """(mass kg, COM (3,) m, inertia about the COM (3, 3) kg m^2) in the link frame."""
    origin = inertial.find("origin")
    xyz = np.zeros(3) if origin is None else np.array(origin.get("xyz", "0 0 0").split(), float)
    rpy = np.zeros(3) if origin is None else np.array(origin.get("rpy", "0 0 0").split(), float)
    mass_element = inertial.find("mass")
    mass = 0.0 if mass_element is None else float(mass_element.attrib["value"])
    i = inertial.find("inertia")
    values = (
        {k: float(i.get(k, 0.0)) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
        if i is not None
        else dict.fromkeys(("ixx", "ixy", "ixz", "iyy", "iyz", "izz"), 0.0)
    )
    local = np.array(
        [
            [values["ixx"], values["ixy"], values["ixz"]],
            [values["ixy"], values["iyy"], values["iyz"]],
            [values["ixz"], values["iyz"], values["izz"]],
        ]
    )
    rotation = pin.rpy.rpyToMatrix(*rpy)
    return mass, xyz, rotation @ local @ rotation.T


def _write_inertial(
    inertial: ET.Element, mass: float, com: np.ndarray, inertia: np.ndarray
) -> None:
    """Set ``inertial`` to (mass, COM, inertia about the COM) in the link frame (rpy zero)."""
    origin = inertial.find("origin")
    if origin is None:
        origin = ET.SubElement(inertial, "origin")
    origin.set("xyz", " ".join(f"{x:.12g}" for x in com))
    origin.set("rpy", "0 0 0")
    mass_element, element = inertial.find("mass"), inertial.find("inertia")
    if mass_element is None or element is None:
        raise ValueError("an <inertial> without <mass> or <inertia> cannot be rewritten")
    mass_element.set("value", f"{mass:.12g}")
    for key, (r, c) in zip(
        ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"), ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))
    ):
        element.set(key, f"{inertia[r, c]:.12g}")


def perturb_inertials(
    urdf_xml: str,
    rng: np.random.Generator,
    mass_fraction: float = MASS_FRACTION,
    com_offset: float = COM_OFFSET,
    inertia_fraction: float = INERTIA_FRACTION,
) -> str:
    """A copy of ``urdf_xml`` whose links (but :data:`PLACEHOLDER_MASS` ones) are perturbed: mass
    times ``1 + u``, ``|u| <= mass_fraction``; COM moved by up to ``com_offset`` (m) along each
    axis; each principal moment about the COM times ``1 + u``, ``|u| <= inertia_fraction`` (redrawn
    until the moments meet the triangle inequality, so every link stays fully consistent)."""
    root = ET.fromstring(urdf_xml)
    for link in root.findall("link"):
        inertial = link.find("inertial")
        if inertial is None or inertial.find("mass") is None:
            continue
        mass, com, inertia = _read_inertial(inertial)
        if mass < PLACEHOLDER_MASS:
            continue
        moments, axes = np.linalg.eigh(inertia)
        for _ in range(1000):
            new_moments = moments * (1 + rng.uniform(-inertia_fraction, inertia_fraction, 3))
            a, b, c = np.sort(new_moments)
            if a + b >= c:
                break
        else:  # a degenerate CAD inertia (a rod): scale it as a whole
            new_moments = moments * (1 + rng.uniform(-inertia_fraction, inertia_fraction))
        new_mass = mass * (1 + rng.uniform(-mass_fraction, mass_fraction))
        new_com = com + rng.uniform(-com_offset, com_offset, 3)
        _write_inertial(inertial, new_mass, new_com, axes @ np.diag(new_moments) @ axes.T)
    return ET.tostring(root, encoding="unicode")
