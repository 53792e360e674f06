"""Robot controllers' payload settings, from an identified body.

:func:`payload_formats` gives them all; every one is in the *flange* frame, the frame the body
must be in (move it there with :func:`~inertia_id_ros.formats.export.transform_theta` first);
SI units unless said; inertias are tensors, products of inertia the matrix entries ``-∫xy dm``:

- UR, ``ur_msgs/srv/SetPayload`` of the ROS 2 driver's ``/io_and_status_controller/set_payload``
  (:func:`ur_set_payload`): ``mass`` (kg), ``center_of_gravity`` ``{x, y, z}`` (m, from the tool
  flange, ``tool0``), and, in the newer ``ur_msgs`` that carries them (URScript
  ``set_target_payload``), ``ixx iyy izz ixy ixz iyz`` (kg m², about the COG with the flange's
  axes) and ``transition_time`` (s). Older ``ur_msgs`` have only mass and COG: drop the rest.
- franka, ``franka_msgs/srv/SetLoad`` (:func:`franka_set_load`): ``mass`` (kg),
  ``center_of_mass`` (3,) (m, flange frame ``F``), ``load_inertia`` (9,): the 3x3 inertia about
  the COM with the flange's axes, column-major (symmetric, so row-major reads the same).
- KUKA load data (:func:`kuka_load_data`): ``M`` (kg); ``X, Y, Z`` (mm): the COM in the flange
  frame; ``A, B, C`` (deg): the principal inertia axes frame relative to the flange,
  ``R = Rz(A) Ry(B) Rx(C)`` (rotations about Z, then the new Y, then the new X), ``A, C`` in
  (-180, 180], ``B`` in [-90, 90]; ``JX, JY, JZ`` (kg m²): the principal moments about the COM
  along that frame's X, Y, Z. The principal frame is made unique by taking, of the 24
  right-handed frames along the eigenvectors (3! orders of the moments x 4 signs), the one
  closest to the flange (smallest rotation angle, i.e. largest ``trace R``): a body whose
  principal axes are the flange's gets ``A = B = C = 0`` and its moments in flange order. With
  repeated moments any axes of the repeated eigenspace are principal; the angles are then one
  valid choice (the inertia, and so ``theta``, round-trips exactly either way).
- :func:`ros2_service_call`: the ``ros2 service call`` line of a request (KUKA load data has no
  ROS 2 service in the KUKA drivers: it is set on the controller, ``LOAD_DATA[n]`` in KRL).

Each format has an inverse (``theta_from_*``) and round-trips to ``theta`` (tests).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin
import yaml

from inertia_id_ros.core.inertia import (
    check_consistency,
    inertia_from_msg_order,
    inertia_from_theta,
    theta_from_inertia,
)
from inertia_id_ros.core.robots import load_model
from inertia_id_ros.errors import ExportError
from inertia_id_ros.formats.export import IdentifiedBody, transform_theta

UR_SET_PAYLOAD_SERVICE = "/io_and_status_controller/set_payload"


UR_SET_PAYLOAD_TYPE = "ur_msgs/srv/SetPayload"


FRANKA_SET_LOAD_SERVICE = "/service_server/set_load"


FRANKA_SET_LOAD_TYPE = "franka_msgs/srv/SetLoad"


KUKA_LOAD_KEYS = ("M", "X", "Y", "Z", "A", "B", "C", "JX", "JY", "JZ")


def _mass_com_inertia(theta: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """``(mass kg, COM (3,) m, 3x3 inertia about the COM kg m²)``; :class:`ExportError` if the
    body is not physically consistent."""
    report = check_consistency(theta)
    if not report.fully_consistent:
        raise ExportError(f"the body is not physically consistent ({'; '.join(report.problems)})")
    return inertia_from_theta(theta)


def ur_set_payload(theta: np.ndarray, transition_time: float = 0.0) -> dict[str, Any]:
    """``ur_msgs/srv/SetPayload`` request of ``theta`` (10,) about and in the tool flange (see the
    module docstring): mass, COG, inertia about the COG in flange axes, transition time (s)."""
    mass, com, inertia = _mass_com_inertia(theta)
    return {
        "mass": mass,
        "center_of_gravity": dict(zip("xyz", map(float, com))),
        "ixx": float(inertia[0, 0]),
        "iyy": float(inertia[1, 1]),
        "izz": float(inertia[2, 2]),
        "ixy": float(inertia[0, 1]),
        "ixz": float(inertia[0, 2]),
        "iyz": float(inertia[1, 2]),
        "transition_time": float(transition_time),
    }


def theta_from_ur_set_payload(request: dict[str, Any]) -> np.ndarray:
    """Inverse of :func:`ur_set_payload`: ``theta`` (10,) in the tool flange."""
    cog = request["center_of_gravity"]
    six = [request[k] for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")]
    return theta_from_inertia(
        float(request["mass"]),
        np.array([cog["x"], cog["y"], cog["z"]], dtype=float),
        inertia_from_msg_order(np.array(six, dtype=float)),
    )


def franka_set_load(theta: np.ndarray) -> dict[str, Any]:
    """``franka_msgs/srv/SetLoad`` request of ``theta`` (10,) about and in the flange: mass,
    COM, 3x3 inertia about the COM, column-major."""
    mass, com, inertia = _mass_com_inertia(theta)
    return {
        "mass": mass,
        "center_of_mass": [float(c) for c in com],
        "load_inertia": [float(v) for v in inertia.flatten(order="F")],
    }


def theta_from_franka_set_load(request: dict[str, Any]) -> np.ndarray:
    """Inverse of :func:`franka_set_load`: ``theta`` (10,) in the flange."""
    inertia = np.asarray(request["load_inertia"], dtype=float).reshape(3, 3, order="F")
    return theta_from_inertia(float(request["mass"]), request["center_of_mass"], inertia)


def _zyx_angles(rotation: np.ndarray) -> np.ndarray:
    """``(A, B, C)`` (rad) with ``rotation = Rz(A) Ry(B) Rx(C)``; ``A, C`` in (-pi, pi]."""
    return pin.rpy.matrixToRpy(rotation)[::-1]


def _zyx_rotation(a: float, b: float, c: float) -> np.ndarray:
    """``Rz(a) Ry(b) Rx(c)`` (angles in rad)."""
    return pin.rpy.rpyToMatrix(c, b, a)


def principal_frame(inertia_com: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(R, moments)``: ``inertia_com = R diag(moments) R^T`` with ``R`` the right-handed
    principal frame closest to the body's axes (largest ``trace R``; see the module docstring)."""
    moments, vectors = np.linalg.eigh(0.5 * (inertia_com + inertia_com.T))
    best = (np.eye(3), moments)
    for order in itertools.permutations(range(3)):
        for k, signs in enumerate(itertools.product((1.0, -1.0), repeat=2)):
            R = vectors[:, order] * np.array([signs[0], signs[1], 1.0])
            R[:, 2] = np.cross(R[:, 0], R[:, 1])  # right-handed
            if (order == (0, 1, 2) and k == 0) or np.trace(R) > np.trace(best[0]) + 1e-12:
                best = (R, moments[list(order)])
    return best


def kuka_load_data(theta: np.ndarray) -> dict[str, float]:
    """KUKA load data of ``theta`` (10,) about and in the flange: ``M`` kg, ``X, Y, Z`` mm,
    ``A, B, C`` deg (ZYX of the principal frame, :func:`principal_frame`), ``JX, JY, JZ`` kg m²."""
    mass, com, inertia = _mass_com_inertia(theta)
    rotation, moments = principal_frame(inertia)
    a, b, c = np.degrees(_zyx_angles(rotation))
    values = [mass, *(1e3 * com), a, b, c, *moments]
    return dict(zip(KUKA_LOAD_KEYS, (float(v) for v in values)))


def theta_from_kuka_load_data(load: dict[str, float]) -> np.ndarray:
    """Inverse of :func:`kuka_load_data`: ``theta`` (10,) in the flange."""
    rotation = _zyx_rotation(*np.radians([load["A"], load["B"], load["C"]]))
    inertia = rotation @ np.diag([load["JX"], load["JY"], load["JZ"]]) @ rotation.T
    com = 1e-3 * np.array([load["X"], load["Y"], load["Z"]])
    return theta_from_inertia(float(load["M"]), com, inertia)


def kuka_load_data_krl(load: dict[str, float], index: int = 1) -> str:
    """``LOAD_DATA[index]`` as a KRL assignment of the load data ``load``."""
    return (
        f"LOAD_DATA[{index}]={{M {load['M']:.6g},CM {{X {load['X']:.6g},Y {load['Y']:.6g},"
        f"Z {load['Z']:.6g},A {load['A']:.6g},B {load['B']:.6g},C {load['C']:.6g}}},"
        f"J {{X {load['JX']:.6g},Y {load['JY']:.6g},Z {load['JZ']:.6g}}}}}"
    )


def ros2_service_call(service: str, service_type: str, request: dict[str, Any]) -> str:
    """The ``ros2 service call`` command line sending ``request`` (YAML flow style)."""
    text = yaml.safe_dump(request, default_flow_style=True, sort_keys=False, width=10**6).strip()
    return f'ros2 service call {service} {service_type} "{text}"'


def payload_formats(body: IdentifiedBody, flange_frame: str) -> str:
    """A YAML file with the UR, franka and KUKA settings of ``body`` (already in the flange
    ``flange_frame``) and the ``ros2 service call`` lines of the two ROS drivers."""
    if body.frame != flange_frame:
        raise ExportError(
            f"body {body.name!r} is in {body.frame!r}, not the flange "
            f"{flange_frame!r}; move it there first (--urdf)"
        )
    ur, franka = ur_set_payload(body.theta), franka_set_load(body.theta)
    kuka = kuka_load_data(body.theta)
    document = {
        "flange_frame": flange_frame,
        "ur_set_payload": ur,
        "franka_set_load": franka,
        "kuka_load_data": kuka,
    }
    lines = [
        f"# Payload {body.name!r} identified by inertia-id, in the flange frame "
        f"{flange_frame!r} (conventions: inertia_id_ros.formats.export).",
        "# UR (" + UR_SET_PAYLOAD_TYPE + "; older ur_msgs: only mass and center_of_gravity):",
        "#   " + ros2_service_call(UR_SET_PAYLOAD_SERVICE, UR_SET_PAYLOAD_TYPE, ur),
        "# franka (" + FRANKA_SET_LOAD_TYPE + ", load_inertia column-major):",
        "#   " + ros2_service_call(FRANKA_SET_LOAD_SERVICE, FRANKA_SET_LOAD_TYPE, franka),
        "# KUKA (M kg, X Y Z mm, A B C deg ZYX of the principal axes, JX JY JZ kg m^2):",
        "#   " + kuka_load_data_krl(kuka),
    ]
    return "\n".join(lines) + "\n" + yaml.safe_dump(document, sort_keys=False)


def write_payload_formats(
    path: str | Path,
    body: IdentifiedBody,
    flange_frame: str | None = None,
    urdf_xml: str | None = None,
) -> np.ndarray:
    """Write :func:`payload_formats` of ``body`` to ``path``, moved first from its frame to the
    flange ``flange_frame`` (default: the body's frame) with the URDF ``urdf_xml``; returns
    ``theta`` (10,) in the flange."""
    flange_frame = flange_frame or body.frame
    if body.frame != flange_frame:
        if urdf_xml is None:
            raise ExportError(
                f"body {body.name!r} is in {body.frame!r}: moving it to the flange "
                f"{flange_frame!r} needs the URDF"
            )
        try:
            model = load_model(urdf_xml=urdf_xml)
        except ValueError as e:
            raise ExportError(str(e)) from None
        body = IdentifiedBody(
            body.name,
            flange_frame,
            transform_theta(model, body.theta, body.frame, flange_frame),
            body.sensor_offset,
        )
    text = payload_formats(body, flange_frame)
    try:
        Path(path).write_text(text)
    except OSError as e:
        raise ExportError(f"cannot write {path}: {e.strerror or e}") from None
    return body.theta
