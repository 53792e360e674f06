"""Export an identified body: into a URDF link's ``<inertial>``, and as the parameters of
ros2_control's gravity-compensation filter; the ``bodies`` entries of the result JSON.

**Result JSON** (written by ``inertia-id fit-payload``, ``fit-links`` and ``replay``; schema in
:mod:`inertia_id_ros.cli`): :func:`body_json` writes a ``bodies`` entry, :func:`read_body` reads
one back as an :class:`IdentifiedBody` (``theta`` about and in ``frame``).

**URDF** (:func:`export_urdf`): writes a *new* file in which link ``link``'s ``<inertial>`` holds
the body (the input file is not touched; a link without ``<inertial>`` gets one; nothing else in
the text changes). The inertial's origin
is the COM with the link frame's axes (``rpy="0 0 0"``), so ``<inertia>`` is the inertia about the
COM in link axes: the same numbers as ``geometry_msgs/Inertia`` of the estimate, no principal-axis
ambiguity (order or sign of eigenvectors) and exact round trips. When the body's frame (e.g. the
F/T sensor frame) is not the link, it is moved with the URDF's fixed-joint placement between the
two (pinocchio; both frames must hang on the same moving joint). ``mode="replace"`` writes the
body alone; ``mode="add"`` adds it to the link's present inertial (a payload rigidly mounted on a
hand: the sum of the two spatial inertias, exact since ``theta`` is additive about one origin).

**Gravity compensation** (:func:`gravity_compensation_yaml`): a ROS 2 parameter file for
``control_filters/GravityCompensationWrench`` of control_toolbox (the filter ros2_controllers'
force-torque chains load), parameters from its ``gravity_compensation_filter_parameters.yaml``:
``world_frame``, ``sensor_frame``, ``CoG.pos`` (COM in ``sensor_frame``, m) and ``CoG.force``
(the weight ``m g`` in ``world_frame``, N: ``[0, 0, -9.81 m]`` for gravity along ``-z``), under
``<chain>.filter1.params`` as ``filters::FilterChain`` reads them. The filter subtracts the weight
from the reading (``f - R g``); that is right for sensors reporting the load's wrench on the sensor
(the node's ``flip_wrench_sign:=true``); for the node's default convention (the wrench the sensor
exerts on the payload) negate ``CoG.force``. It knows no F/T offset: the identified offset is
written as a comment.

**Robot controllers' payload settings**: :mod:`~inertia_id_ros.formats.controller_payloads`.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.parsers import expat

import numpy as np
import pinocchio as pin
import yaml

from inertia_id_ros.core.inertia import (
    check_consistency,
    inertia_from_theta,
    inertia_to_msg_order,
    theta_from_inertia,
)
from inertia_id_ros.core.robots import STANDARD_GRAVITY, frame_id, load_model
from inertia_id_ros.errors import CallerError, ExportError, FrameNotFound
from inertia_id_ros.options import DEFAULT_FILTER_CHAIN, EXPORT_MODES
from inertia_id_ros.solvers.problem import on_consistency_bound

GRAVITY_COMPENSATION_TYPE = "control_filters/GravityCompensationWrench"
DEFAULT_GRAVITY = np.array([0.0, 0.0, -STANDARD_GRAVITY])
"""Gravity (m/s²) in the world frame when no URDF gives the model's."""


@dataclass(frozen=True)
class IdentifiedBody:
    """A rigid body's ``theta`` (10,) about and in ``frame`` (:mod:`inertia_id_ros.core.inertia`
    conventions), its ``name``, and the F/T ``sensor_offset`` (6,) identified with it, if any."""

    name: str
    frame: str
    theta: np.ndarray
    sensor_offset: np.ndarray | None = None


# ---- result JSON ---------------------------------------------------------------------------


def body_json(name: str, frame: str, theta: np.ndarray) -> dict[str, Any]:
    """The result JSON's ``bodies`` entry of ``theta`` (10,) about and in ``frame``."""
    report = check_consistency(theta)
    com = inertia_com = None
    if theta[0] > 0:
        _, c, i = inertia_from_theta(theta)
        com, inertia_com = c.tolist(), inertia_to_msg_order(i).tolist()
    return {
        "name": name,
        "frame": frame,
        "mass": float(theta[0]),
        "com": com,
        "inertia_com": inertia_com,
        "theta": np.asarray(theta, dtype=float).tolist(),
        "fully_consistent": report.fully_consistent,
        "min_pseudo_inertia_eig": report.min_pseudo_inertia_eig,
        "at_bound": on_consistency_bound(report.min_pseudo_inertia_eig),
    }


def read_result(path: str | Path, error: type[CallerError] = ExportError) -> dict[str, Any]:
    """The result JSON at ``path`` (an object with a ``bodies`` list); raises ``error`` naming
    the file when it cannot be read or is not one."""
    try:
        result = json.loads(Path(path).read_text())
    except OSError as e:
        raise error(f"{path}: cannot read: {e.strerror or e}") from None
    except ValueError as e:
        raise error(f"{path}: not JSON ({e})") from None
    if not isinstance(result, dict) or not isinstance(result.get("bodies"), list):
        raise error(f"{path}: not a result JSON of inertia-id (no bodies)")
    return result


def read_known_body(
    path: str | Path, frame: str, error: type[CallerError] = ExportError
) -> np.ndarray:
    """``theta`` (10,) of the first body of the result JSON at ``path``, a body of known inertia
    about and in ``frame`` (a sensor's); raises ``error`` naming the file when it cannot be read,
    has no such ``theta`` or is in another frame."""
    bodies = read_result(path, error)["bodies"]
    body = bodies[0] if bodies and isinstance(bodies[0], dict) else {}
    try:
        theta = np.array(body["theta"], dtype=float)
    except (KeyError, TypeError, ValueError):
        raise error(f"{path}: its first body has no theta") from None
    if theta.shape != (10,):
        raise error(f"{path}: its first body's theta has {theta.size} values, not 10")
    if body.get("frame", frame) != frame:
        raise error(
            f"{path}: the body is in frame {body['frame']!r}, not the sensor's {frame!r} "
            "(inertia-id export moves a body between frames)"
        )
    return theta


def read_body(path: str | Path, name: str | None = None) -> IdentifiedBody:
    """Body ``name`` (default: the only one) of a result JSON file."""
    result = read_result(path)
    bodies = result["bodies"]
    try:
        names = [body["name"] for body in bodies]
    except (KeyError, TypeError) as e:
        raise ExportError(f"{path}: a body without a name ({e})") from None
    if name is None and len(bodies) != 1:
        raise ExportError(f"{path} holds {len(bodies)} bodies {names}; choose one with --body")
    matches = [body for body in bodies if name is None or body["name"] == name]
    if not matches:
        raise ExportError(f"{path}: no body {name!r}; it has {names}")
    body = matches[0]
    try:
        theta = np.asarray(body["theta"], dtype=float).reshape(10)
        offset = result.get("sensor_offset")
        offset = None if offset is None else np.asarray(offset, dtype=float).reshape(6)
        return IdentifiedBody(str(body["name"]), str(body["frame"]), theta, offset)
    except (KeyError, TypeError, ValueError) as e:
        raise ExportError(f"{path}: body {body.get('name')!r} is malformed ({e})") from None


def _check_exportable(body: IdentifiedBody) -> None:
    report = check_consistency(body.theta)
    if not report.fully_consistent:
        raise ExportError(
            f"body {body.name!r} is not physically consistent "
            f"({'; '.join(report.problems)}); refusing to export it"
        )


# ---- frames --------------------------------------------------------------------------------


def transform_theta(
    model: pin.Model, theta: np.ndarray, from_frame: str, to_frame: str
) -> np.ndarray:
    """``theta`` (10,) about and in ``from_frame`` -> about and in ``to_frame``, two frames of
    ``model`` rigidly connected (same parent joint: only fixed joints between them)."""
    try:
        source, target = (model.frames[frame_id(model, name)] for name in (from_frame, to_frame))
    except FrameNotFound as e:
        raise ExportError(str(e)) from None
    if source.parentJoint != target.parentJoint:
        raise ExportError(
            f"frames {from_frame!r} and {to_frame!r} are not rigidly connected "
            f"(they move with joints {model.names[source.parentJoint]!r} and "
            f"{model.names[target.parentJoint]!r})"
        )
    target_from_source = target.placement.inverse() * source.placement
    inertia = target_from_source.act(pin.Inertia.FromDynamicParameters(np.asarray(theta, float)))
    return np.asarray(inertia.toDynamicParameters())


# ---- URDF ----------------------------------------------------------------------------------


def _floats(text: str | None, default: tuple[float, ...]) -> np.ndarray:
    return np.array(default if text is None else [float(v) for v in text.split()])


def inertial_theta(inertial: ET.Element) -> np.ndarray:
    """``theta`` (10,) in the link frame of a URDF ``<inertial>`` element (missing parts 0)."""
    origin, mass, inertia = (inertial.find(tag) for tag in ("origin", "mass", "inertia"))
    xyz = _floats(None if origin is None else origin.get("xyz"), (0.0, 0.0, 0.0))
    rpy = _floats(None if origin is None else origin.get("rpy"), (0.0, 0.0, 0.0))
    m = 0.0 if mass is None else float(mass.get("value", 0.0))
    names = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
    six = [0.0 if inertia is None else float(inertia.get(n, 0.0)) for n in names]
    ixx, ixy, ixz, iyy, iyz, izz = six
    rotation = pin.rpy.rpyToMatrix(*rpy)
    inertia_com = (
        rotation @ np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]]) @ rotation.T
    )
    return theta_from_inertia(m, xyz, inertia_com)


def _number(value: float) -> str:
    return repr(float(value))


def _inertial_xml(theta: np.ndarray, indent: str) -> str:
    """``<inertial>`` element of ``theta`` (link frame): origin at the COM, link axes; inner lines
    indented by ``indent`` plus two spaces, the closing tag by ``indent``."""
    mass, com, inertia_com = inertia_from_theta(theta)
    six = inertia_to_msg_order(inertia_com)
    inertia = " ".join(
        f'{name}="{_number(v)}"' for name, v in zip(("ixx", "ixy", "ixz", "iyy", "iyz", "izz"), six)
    )
    inner = indent + "  "
    origin = " ".join(map(_number, com))
    return (
        f'<inertial>\n{inner}<origin xyz="{origin}" rpy="0 0 0"/>\n'
        f'{inner}<mass value="{_number(mass)}"/>\n{inner}<inertia {inertia}/>\n{indent}'
        "</inertial>"
    )


@dataclass
class _LinkSpans:
    """Byte offsets in a URDF of a link: its start tag ``[start, tag_end)`` (``self_closing``:
    ``<link .../>``), its end tag's start ``end_tag``, its first child's start (-1: none) and its
    ``<inertial>`` ``[inertial_start, inertial_end)`` (-1: none)."""

    start: int = -1
    tag_end: int = -1
    self_closing: bool = False
    end_tag: int = -1
    first_child: int = -1
    inertial_start: int = -1
    inertial_end: int = -1


def _find_link(data: bytes, link: str) -> _LinkSpans:
    """Where link ``link`` is in the URDF ``data``; :class:`ExportError` if it is not there."""
    parser = expat.ParserCreate()
    spans, names, depth = _LinkSpans(), [], [0]
    inside = [False]  # within the wanted link's element

    def start(name: str, attrs: dict[str, str]) -> None:
        position = parser.CurrentByteIndex
        depth[0] += 1
        if depth[0] == 2 and name == "link":
            names.append(attrs.get("name", "?"))
            if attrs.get("name") == link and spans.start < 0:
                spans.start, spans.tag_end = position, data.index(b">", position) + 1
                inside[0] = True
        elif depth[0] == 3 and inside[0]:  # a child of the wanted link
            if spans.first_child < 0:
                spans.first_child = position
            if name == "inertial" and spans.inertial_start < 0:
                spans.inertial_start = position

    def end(name: str) -> None:
        position = parser.CurrentByteIndex
        closing = data.startswith(b"</", position)  # else a self-closing tag that ends here
        if depth[0] == 3 and inside[0] and name == "inertial" and spans.inertial_end < 0:
            spans.inertial_end = data.index(b">", position) + 1 if closing else position
        elif depth[0] == 2 and inside[0]:
            spans.self_closing, spans.end_tag = not closing, position
            inside[0] = False
        depth[0] -= 1

    parser.StartElementHandler, parser.EndElementHandler = start, end
    try:
        parser.Parse(data, True)
    except expat.ExpatError as e:
        raise ExportError(f"the URDF is not valid XML: {e}") from None
    if spans.start < 0:
        raise ExportError(f"no link {link!r} in the URDF; its links: {', '.join(names)}")
    return spans


def _line_indent(data: bytes, position: int) -> str:
    """The whitespace from the start of the line to ``position`` ("" if there is text)."""
    prefix = data[data.rfind(b"\n", 0, position) + 1 : position].decode()
    return prefix if not prefix.strip() else ""


def with_link_inertial(urdf_xml: str, link: str, theta: np.ndarray, mode: str = "replace") -> str:
    """URDF text with link ``link``'s ``<inertial>`` set to ``theta`` (10,) (about and in the
    link frame), or, with ``mode="add"``, to the sum of its present inertial and ``theta``. Only
    that element changes (or is inserted as the link's first child): the rest of the text, with
    its comments and formatting, is kept byte for byte."""
    if mode not in EXPORT_MODES:
        raise ExportError(f"unknown mode {mode!r}; choose one of {EXPORT_MODES}")
    data = urdf_xml.encode()
    spans = _find_link(data, link)
    link_indent = _line_indent(data, spans.start)
    if spans.inertial_start >= 0:
        present = data[spans.inertial_start : spans.inertial_end]
        if mode == "add":
            theta = np.asarray(theta, dtype=float) + inertial_theta(ET.fromstring(present))
        text = _inertial_xml(theta, _line_indent(data, spans.inertial_start))
        return (data[: spans.inertial_start] + text.encode() + data[spans.inertial_end :]).decode()
    child_indent = (
        _line_indent(data, spans.first_child) if spans.first_child >= 0 else link_indent + "  "
    )
    text = f"\n{child_indent}{_inertial_xml(theta, child_indent)}"
    if spans.self_closing:  # <link name="..."/>: open it, close it after the inertial
        opened = data[spans.start : spans.tag_end - 2].rstrip() + b">"
        text += f"\n{link_indent}</link>"
        return (data[: spans.start] + opened + text.encode() + data[spans.tag_end :]).decode()
    if spans.first_child < 0 and not data[spans.tag_end : spans.end_tag].strip():
        # <link ...></link> or only whitespace inside: the closing tag on its own line
        text += f"\n{link_indent}"
        return (data[: spans.tag_end] + text.encode() + data[spans.end_tag :]).decode()
    return (data[: spans.tag_end] + text.encode() + data[spans.tag_end :]).decode()


def export_urdf(
    urdf_path: str | Path,
    output_path: str | Path,
    link: str,
    body: IdentifiedBody,
    mode: str = "replace",
) -> np.ndarray:
    """Write ``output_path``: the URDF ``urdf_path`` with ``body`` as link ``link``'s inertial
    (see the module docstring); returns the body's ``theta`` about and in the link frame. The
    input file is only read."""
    _check_exportable(body)
    urdf_path, output_path = Path(urdf_path), Path(output_path)
    if output_path.resolve() == urdf_path.resolve():
        raise ExportError(f"the output {output_path} is the input URDF; write a new file")
    try:
        urdf_xml = urdf_path.read_text()
    except OSError as e:
        raise ExportError(f"cannot read {urdf_path}: {e.strerror or e}") from None
    _find_link(urdf_xml.encode(), link)
    theta = body.theta
    if body.frame != link:
        try:
            model = load_model(urdf_xml=urdf_xml)
        except ValueError as e:
            raise ExportError(str(e)) from None
        theta = transform_theta(model, theta, body.frame, link)
    text = with_link_inertial(urdf_xml, link, theta, mode)
    try:
        output_path.write_text(text)
    except OSError as e:
        raise ExportError(f"cannot write {output_path}: {e.strerror or e}") from None
    return theta


def root_link(urdf_xml: str) -> str:
    """Name of the URDF's root link (the one no joint has as child)."""
    try:
        root = ET.fromstring(urdf_xml)
    except ET.ParseError as e:
        raise ExportError(f"the URDF is not valid XML: {e}") from None
    children = {child.get("link") for child in root.iter("child")}
    roots = [
        link.get("name", "") for link in root.findall("link") if link.get("name") not in children
    ]
    if len(roots) != 1:
        raise ExportError(f"the URDF has {len(roots)} root links {roots}; give the world frame")
    return roots[0]


# ---- gravity compensation ------------------------------------------------------------------


def gravity_compensation_parameters(
    body: IdentifiedBody, world_frame: str, gravity: np.ndarray = DEFAULT_GRAVITY
) -> dict[str, Any]:
    """``params`` of ``control_filters/GravityCompensationWrench`` for ``body``: COM in the body's
    frame (``sensor_frame``), weight ``m * gravity`` (N) in ``world_frame``."""
    _check_exportable(body)
    mass, com, _ = inertia_from_theta(body.theta)
    return {
        "world_frame": world_frame,
        "sensor_frame": body.frame,
        "CoG": {
            "pos": [float(v) for v in com],
            "force": [float(v) for v in mass * np.asarray(gravity, dtype=float)],
        },
    }


def gravity_compensation_yaml(
    body: IdentifiedBody,
    world_frame: str,
    gravity: np.ndarray = DEFAULT_GRAVITY,
    node: str = "/**",
    chain: str = DEFAULT_FILTER_CHAIN,
) -> str:
    """A ROS 2 parameter file: filter chain ``chain`` of node ``node`` whose ``filter1`` is the
    gravity compensation of ``body`` (see :func:`gravity_compensation_parameters`)."""
    params = gravity_compensation_parameters(body, world_frame, gravity)
    document = {
        node: {
            "ros__parameters": {
                chain: {
                    "filter1": {
                        "name": "gravity_compensation",
                        "type": GRAVITY_COMPENSATION_TYPE,
                        "params": params,
                    }
                }
            }
        }
    }
    mass = float(body.theta[0])
    lines = [
        f"# Gravity compensation of {body.name!r} identified by inertia-id: {mass:.6g} kg, "
        f"COM in {body.frame!r}.",
        "# control_toolbox control_filters/GravityCompensationWrench: CoG.pos (m) in "
        "sensor_frame, CoG.force = m g (N) in world_frame;",
        "# it subtracts CoG.force from the reading: negate it for sensors reporting the "
        "wrench they exert on the load.",
    ]
    if body.sensor_offset is not None:
        lines.append(
            "# F/T offset identified with it (not part of this filter) [fx, fy, fz, tx, "
            "ty, tz]: [" + ", ".join(f"{v:.6g}" for v in body.sensor_offset) + "]"
        )
    return (
        "\n".join(lines) + "\n" + yaml.safe_dump(document, default_flow_style=None, sort_keys=False)
    )


# ---- robot controllers' payload settings ---------------------------------------------------
