"""A payload's CAD values as a prior: ``theta`` (10,) about and in the F/T sensor frame, from a
result JSON or from a URDF link.

- :func:`prior_from_result`: a result JSON of the fit-payload schema (its body must be in the
  sensor frame);
- :func:`prior_from_link`: a URDF link's inertial and everything beyond it (links rigidly
  attached, and those beyond moving joints at their neutral position), moved to the sensor frame
  at the model's neutral configuration (exact when the link is rigidly attached beyond the
  sensor);
- :func:`resolve_payload_prior`: the node's ``payload_prior`` parameter.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin

from inertia_id_ros.core.inertia import check_consistency
from inertia_id_ros.core.kinematics import SensorKinematics
from inertia_id_ros.core.robots import frame_id
from inertia_id_ros.errors import ConfigError, ExportError, FrameNotFound
from inertia_id_ros.formats.export import read_body

NO_PRIOR = "none"
"""``payload_prior`` value for no prior."""


def _checked(theta: np.ndarray, source: str) -> np.ndarray:
    report = check_consistency(theta)
    if not (theta[0] > 0 and report.fully_consistent):
        raise ConfigError(
            f"{source}: the prior is not a physically consistent body with mass "
            f"({'; '.join(report.problems) or 'zero mass'})"
        )
    return theta


def prior_from_result(path: str | Path, sensor_frame: str) -> np.ndarray:
    """``theta`` of the only body (or the body ``"payload"``) of a result JSON; raises
    :class:`ConfigError` if it cannot be read, is not in ``sensor_frame`` or is not consistent."""
    try:
        body = read_body(path)
    except ExportError as error:
        try:
            body = read_body(path, "payload")
        except ExportError:
            raise ConfigError(str(error)) from None
    if body.frame != sensor_frame:
        raise ConfigError(
            f"{path}: body {body.name!r} is in frame {body.frame!r}, not in the "
            f"sensor frame {sensor_frame!r}"
        )
    return _checked(np.array(body.theta), str(path))


def prior_from_link(model: pin.Model, link: str, sensor_frame: str) -> np.ndarray:
    """``theta`` about and in ``sensor_frame`` of ``link`` and everything beyond it (see the
    module docstring); raises :class:`ConfigError` for an unknown frame or a body without mass."""
    try:
        theta = SensorKinematics(model, link).subtree_inertia()
        data = model.createData()
        pin.framesForwardKinematics(model, data, pin.neutral(model))
        sensor_to_link = (
            data.oMf[frame_id(model, sensor_frame)].inverse() * data.oMf[frame_id(model, link)]
        )
    except (FrameNotFound, ValueError) as error:
        raise ConfigError(str(error)) from None
    moved = sensor_to_link.act(pin.Inertia.FromDynamicParameters(theta))
    return _checked(np.array(moved.toDynamicParameters()), f"link {link!r}")


def resolve_payload_prior(spec: str, kinematics: SensorKinematics) -> np.ndarray | None:
    """The prior the node's ``payload_prior`` parameter names: ``""`` the URDF's links beyond
    the sensor frame (``None`` if it has none with mass), ``"none"`` none, a path ending in
    ``.json`` a result JSON, anything else a URDF link. Raises :class:`ConfigError`."""
    if spec == NO_PRIOR:
        return None
    if spec == "":
        theta = kinematics.subtree_inertia()
        return theta if theta[0] > 0 and check_consistency(theta).fully_consistent else None
    if spec.endswith(".json"):
        return prior_from_result(spec, kinematics.sensor_frame)
    return prior_from_link(kinematics.model, spec, kinematics.sensor_frame)
