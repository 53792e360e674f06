"""F/T sensor conventions declared in a URDF: ``<measure_direction>`` (and ``<frame>``) of each
``force_torque`` sensor, and the sign that turns its readings into this package's convention.

Two forms are read, both as Gazebo/SDF define the element:

- ``<gazebo reference="J"><sensor type="force_torque"><force_torque><frame>child</frame>
  <measure_direction>child_to_parent</measure_direction></force_torque></sensor></gazebo>``;
- a top-level ``<sensor name="S" type="force_torque"><parent joint="J"/><force_torque>…``
  (the URDF sensor element of iDynTree-style models).

``parent_to_child``: the reading is the wrench the joint's parent link exerts on its child;
``child_to_parent``: the one the child exerts on the parent. This package expects, per sensor kind
(:data:`~inertia_id_ros.core.whole_body_model.SENSOR_KINDS`; a payload's sensor is ``internal``):

- ``internal``: the wrench the root side exerts on the part beyond = ``parent_to_child`` (sign +1;
  ``child_to_parent``: -1);
- ``contact``: the environment's wrench on the robot, which a sensor whose child side touches the
  environment transmits to its parent = ``child_to_parent`` (sign +1; ``parent_to_child``: -1).
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

from inertia_id_ros.errors import DataError

MEASURE_DIRECTIONS = ("parent_to_child", "child_to_parent")
EXPECTED_DIRECTION = {"internal": "parent_to_child", "contact": "child_to_parent"}
"""The ``measure_direction`` whose readings this package takes as they are, per sensor kind."""


@dataclass(frozen=True)
class FTConvention:
    """What a URDF declares for one F/T sensor: its ``joint`` (the sensor's joint, or "" when the
    sensor names a link), that joint's ``child`` link, the ``measure_direction`` and the
    ``frame`` the wrench is expressed in (``child``, ``parent`` or ``sensor``; "" if not said)."""

    name: str
    joint: str
    child: str
    measure_direction: str
    frame: str = ""

    def sign(self, kind: str) -> float:
        """+1 when readings of a ``kind`` sensor are already in this package's convention, -1
        when they must be negated (see the module docstring)."""
        return 1.0 if self.measure_direction == EXPECTED_DIRECTION[kind] else -1.0


def _text(element: ElementTree.Element | None, path: str) -> str:
    found = None if element is None else element.find(path)
    return "" if found is None or found.text is None else found.text.strip()


def read_ft_conventions(urdf: str | Path) -> dict[str, FTConvention]:
    """The URDF's F/T sensors that declare a ``measure_direction``, keyed by every name that
    may denote them as a frame: the Gazebo reference or parent joint, the sensor's name and the
    joint's child link. Raises :class:`DataError` for an unreadable URDF or an unknown
    direction."""
    try:
        root = ElementTree.parse(str(urdf)).getroot()
    except (OSError, ElementTree.ParseError) as e:
        raise DataError(f"{urdf}: cannot read the URDF: {e}") from None
    child_of = {
        joint.get("name", ""): child.get("link", "")
        for joint in root.findall("joint")
        if (child := joint.find("child")) is not None
    }
    found: list[tuple[str, str, ElementTree.Element]] = []
    for gazebo in root.findall("gazebo"):
        for sensor in gazebo.findall("sensor"):
            if sensor.get("type") == "force_torque":
                found.append((gazebo.get("reference", ""), sensor.get("name", ""), sensor))
    for sensor in root.findall("sensor"):
        if sensor.get("type") == "force_torque":
            parent = sensor.find("parent")
            reference = "" if parent is None else parent.get("joint", parent.get("link", ""))
            found.append((reference, sensor.get("name", ""), sensor))
    out: dict[str, FTConvention] = {}
    for reference, name, sensor in found:
        direction = _text(sensor, "force_torque/measure_direction")
        if not direction:
            continue
        if direction not in MEASURE_DIRECTIONS:
            raise DataError(
                f"{urdf}: F/T sensor {name or reference!r} has measure_direction "
                f"{direction!r}, neither of {', '.join(MEASURE_DIRECTIONS)}"
            )
        joint = reference if reference in child_of else ""
        convention = FTConvention(
            name or reference,
            joint,
            child_of.get(joint, ""),
            direction,
            _text(sensor, "force_torque/frame"),
        )
        for key in (reference, name, convention.child):
            if key:
                out.setdefault(key, convention)
    return out
