"""A chain's links and drives from a ``fit-links`` result JSON, as a link model to subtract.

A payload identified from joint torques needs the torques of the links and drives without it
(:mod:`inertia_id_ros.chain.payload_from_torques`): the URDF's (``LinkModel.prior``, friction
zero) or those a ``fit-links`` run identified. :func:`read_link_result` turns the result's
``bodies`` (each link's ``theta`` about its own frame), ``joints`` (viscous, Coulomb with its
``coulomb_velocity``, offset, armature), ``transmission`` and ``motors`` (each coupled motor's
rotor inertia, viscous and Coulomb friction, motor side; only when a transmission couples the
chain's joints: :mod:`inertia_id_ros.chain.motors`) and ``gravity`` (the base's tilt, when
estimated) into a :class:`~inertia_id_ros.chain.links.LinkModel` of the same chain and its
parameters ``x``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from inertia_id_ros.chain.friction import DRIVE_TERMS, DriveParameters, JointDrive
from inertia_id_ros.chain.links import LinkModel, with_gravity
from inertia_id_ros.chain.motors import MOTOR_SIDE_TERMS, MotorCoupling
from inertia_id_ros.errors import ConfigError
from inertia_id_ros.formats.export import body_json, read_result


@dataclass(frozen=True)
class LinkResult:
    """A fit-links result as a link model: ``model`` (the chain with the result's drives and
    gravity), ``x`` (its :attr:`LinkModel.parameter_names` order) and the whole ``result``
    (e.g. its ``"differentiation"`` and ``"torque_delay"``, to treat new data alike:
    :func:`~inertia_id_ros.offline.validation.differentiation_of`)."""

    model: LinkModel
    x: np.ndarray
    result: dict[str, Any]


def link_result_json(
    link_names: Sequence[str], thetas: np.ndarray, drives: Mapping[str, DriveParameters]
) -> dict[str, Any]:
    """The ``bodies`` (each link's ``theta`` (10,) of ``thetas`` (n, 10), about and in its own
    frame) and ``joints`` (each joint's drive: viscous, Coulomb with its ``coulomb_velocity``,
    offset, armature) of a fit-links result, as :func:`read_link_result` reads them."""
    return {
        "bodies": [body_json(link, link, theta) for link, theta in zip(link_names, thetas)],
        "joints": [{"name": joint, **vars(drive)} for joint, drive in drives.items()],
    }


def motors_json(links: LinkModel, drives: Mapping[str, Mapping[str, float]]) -> dict[str, Any]:
    """``{"transmission", "motors"}`` of a fit-links result: ``links``'s coupling and each
    coupled motor's name, joint, ``gear_ratio`` (``G[m, m]``), terms in its own coordinate
    (:data:`MOTOR_SIDE_TERMS` of ``drives[motor name]``) and Coulomb width (motor rad/s); ``{}``
    when no motor is coupled (the result as without a transmission)."""
    if not links.motors or links.coupling is None:
        return {}
    return {
        "transmission": links.coupling.as_json(),
        "motors": [
            {
                "name": motor.name,
                "joint": motor.joint,
                "gear_ratio": motor.gear,
                **motor.motor_side(drives[motor.name]),
                "coulomb_velocity": motor.coulomb_velocity,
            }
            for motor in links.motors
        ],
    }


def motor_lines(links: LinkModel, drives: Mapping[str, Mapping[str, float]]) -> list[str]:
    """The printed table of ``links``'s coupled motors and their terms ``drives[motor name]``,
    in the motor's own coordinate (none without one)."""
    if not links.motors:
        return []
    lines = [f"{'motor':<20}{'turns with':>24}{'rotor (kg m²)':>15}{'viscous':>10}{'coulomb':>10}"]
    for motor in links.motors:
        turns = " ".join(f"{g:g}·{j}" for j, g in zip(links.joint_names, motor.row) if g != 0.0)
        terms = motor.motor_side(drives[motor.name])
        lines.append(
            f"{motor.name:<20}{turns:>24}{terms['rotor_inertia']:15.3e}"
            f"{terms['viscous']:10.2e}{terms['coulomb']:10.4f}"
        )
    return lines


def result_coupling(result: Mapping[str, Any], source: str) -> MotorCoupling | None:
    """The ``transmission`` of a fit-links result (``None``: none; restrict it to a chain with
    :meth:`~inertia_id_ros.chain.motors.MotorCoupling.restricted`); :class:`ConfigError` naming
    ``source`` when malformed."""
    if result.get("transmission") is None:
        return None
    try:
        return MotorCoupling.from_json(result["transmission"])
    except (KeyError, TypeError, ValueError) as e:
        raise ConfigError(f"{source}: malformed transmission ({e!r})") from None


def motor_values(result: Mapping[str, Any], links: LinkModel, source: str) -> list[float]:
    """The values of ``links``'s coupled motors' terms in a fit-links result (its ``motors``,
    motor side), as ``links``'s parameters; :class:`ConfigError` naming ``source`` when one
    lacks."""
    motors = {entry.get("name"): entry for entry in result.get("motors") or []}
    try:
        return [
            value
            for m in links.motors
            for value in m.joint_side(
                {term: float(motors[m.name][term]) for term in MOTOR_SIDE_TERMS}
            ).values()
        ]
    except (KeyError, TypeError, ValueError) as e:
        raise ConfigError(
            f"{source}: a coupled motor's terms are missing or malformed ({e!r})"
        ) from None


def read_link_result(path: str | Path, links: LinkModel) -> LinkResult:
    """``links``'s chain with the drives, Coulomb widths and gravity of the fit-links result
    JSON ``path``, and its parameters. Each joint's ``effort_scale`` stays ``links``'s (the
    efforts' conversion to joint torques; the result's values are joint torques). Raises
    :class:`ConfigError` when the file cannot be read, lacks a link or joint of the chain, or
    holds malformed values."""
    result = read_result(path, ConfigError)
    try:
        bodies = {body["name"]: body for body in result["bodies"]}
        joints = {joint["name"]: joint for joint in result["joints"]}
    except (KeyError, TypeError) as e:
        raise ConfigError(
            f"{path}: not a fit-links result JSON (needs 'bodies' and 'joints': {e})"
        ) from None
    missing = [link for link in links.link_names if link not in bodies] + [
        joint for joint in links.joint_names if joint not in joints
    ]
    if missing:
        raise ConfigError(
            f"{path}: the result lacks {missing} of the chain (links "
            f"{list(links.link_names)}, joints {list(links.joint_names)}); it has "
            f"bodies {sorted(bodies)} and joints {sorted(joints)}"
        )
    try:
        thetas = [
            np.asarray(bodies[link]["theta"], dtype=float).reshape(10) for link in links.link_names
        ]
        drives = [
            JointDrive(
                coulomb_velocity=float(joints[joint]["coulomb_velocity"]),
                effort_scale=drive.effort_scale,
            )
            for joint, drive in zip(links.joint_names, links.drives)
        ]
        values = [float(joints[joint][term]) for joint in links.joint_names for term in DRIVE_TERMS]
        coupling = result_coupling(result, str(path))
        gravity = result.get("gravity")
        gravity = None if gravity is None else np.asarray(gravity, dtype=float).reshape(3)
    except (KeyError, TypeError, ValueError) as e:
        raise ConfigError(f"{path}: malformed link or joint entry ({e!r})") from None
    if not all(np.isfinite(theta).all() for theta in thetas) or not np.isfinite(values).all():
        raise ConfigError(f"{path}: non-finite link or joint values")
    try:
        if coupling is not None:
            coupling = coupling.restricted(links.joint_names)
        model = LinkModel(links.model, drives, links.robot_joint_names, coupling)
    except ValueError as e:
        raise ConfigError(f"{path}: {e}") from None
    values += motor_values(result, model, str(path))
    if not np.isfinite(values).all():
        raise ConfigError(f"{path}: non-finite motor values")
    if gravity is not None:
        model = with_gravity(model, gravity)
    return LinkResult(model, np.concatenate(thetas + [np.array(values)]), result)
