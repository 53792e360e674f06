"""Actuated chains: actuator and chain configuration (YAML-loadable).

A chain to identify (one leg of a quadruped, an arm) is described by :class:`ChainConfig`: the
URDF, the joints, the locked joints' positions and one :class:`ActuatorConfig` per joint (gear
ratio, rotor inertia, torque constant, motor type, Coulomb smoothing). It is a plain mapping in
YAML (``config/go1_front_left_leg.yaml``), so a node can load it from ``config/``. What the
rotor inertias and motor types are for: :mod:`inertia_id_ros.chain.armatures`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from inertia_id_ros.chain.friction import DRIVE_TERMS, JointDrive
from inertia_id_ros.chain.links import LinkModel
from inertia_id_ros.chain.motors import MotorCoupling
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.errors import ConfigError


def _check_keys(mapping: Mapping[str, Any], allowed: Iterable[str], where: str) -> None:
    if not isinstance(mapping, Mapping):
        raise ConfigError(f"{where} must be a mapping, got {type(mapping).__name__}")
    unknown = sorted(set(mapping) - set(allowed))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(allowed)}")


@dataclass(frozen=True)
class ActuatorConfig:
    """The actuator of one joint.

    ``gear_ratio`` N (motor turns per joint turn), ``rotor_inertia`` (kg·m², about the rotor axis):
    reflected inertia ``N**2 * rotor_inertia`` at the joint. ``torque_constant`` (N·m/A at the
    motor shaft): the recorded efforts are motor currents (A) and the joint torque is
    ``effort * torque_constant * N``; ``None``: the efforts are joint torques (N·m). ``motor``
    names the motor type: actuators with the same ``motor`` share one rotor inertia
    (:func:`~inertia_id_ros.chain.armatures.fit_chain`). ``coulomb_velocity`` (rad/s): width of
    the smooth Coulomb sign (0: exact). ``effort_sign``: +1, or -1 when the recorded effort
    counts the other way round than the joint's axis (a motor mounted mirrored).
    """

    gear_ratio: float = 1.0
    rotor_inertia: float = 0.0
    torque_constant: float | None = None
    motor: str | None = None
    coulomb_velocity: float = 0.0
    effort_sign: float = 1.0

    def __post_init__(self) -> None:
        if not (np.isfinite(self.gear_ratio) and self.gear_ratio > 0):
            raise ConfigError(f"gear_ratio must be positive, got {self.gear_ratio!r}")
        if not self.rotor_inertia >= 0.0:
            raise ConfigError(f"rotor_inertia must be >= 0 kg·m², got {self.rotor_inertia!r}")
        if self.torque_constant is not None and not self.torque_constant > 0.0:
            raise ConfigError(
                f"torque_constant must be positive N·m/A or null, got {self.torque_constant!r}"
            )
        if not self.coulomb_velocity >= 0.0:
            raise ConfigError(f"coulomb_velocity must be >= 0 rad/s, got {self.coulomb_velocity!r}")
        if self.effort_sign not in (1.0, -1.0):
            raise ConfigError(f"effort_sign must be +1 or -1, got {self.effort_sign!r}")

    @property
    def reflected_inertia(self) -> float:
        """``gear_ratio**2 * rotor_inertia`` (kg·m²)."""
        return self.gear_ratio**2 * self.rotor_inertia

    @property
    def effort_scale(self) -> float:
        """Joint torque per unit of recorded effort: ``effort_sign * torque_constant *
        gear_ratio`` (N·m/A), or ``effort_sign`` when the efforts are joint torques."""
        magnitude = 1.0 if self.torque_constant is None else self.torque_constant * self.gear_ratio
        return self.effort_sign * magnitude

    def drive(self, estimate: Iterable[str] = DRIVE_TERMS) -> JointDrive:
        """The :class:`JointDrive` estimating the drive terms ``estimate`` (a non-estimated
        armature is this actuator's reflected inertia, a known torque)."""
        terms = set(estimate)
        return JointDrive(
            **{t: t in terms for t in DRIVE_TERMS},
            coulomb_velocity=self.coulomb_velocity,
            rotor_inertia=self.rotor_inertia,
            gear_ratio=self.gear_ratio,
            effort_scale=self.effort_scale,
        )

    @classmethod
    def from_dict(cls, mapping: Mapping[str, Any], where: str = "actuator") -> ActuatorConfig:
        """From a mapping with the field names as keys (all optional)."""
        _check_keys(mapping, [f.name for f in fields(cls)], where)
        try:
            return cls(**mapping)
        except (TypeError, ConfigError) as e:
            raise ConfigError(f"{where}: {e}") from None

    def to_dict(self) -> dict[str, Any]:
        """Plain mapping (YAML-safe), the inverse of :meth:`from_dict`."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def effort_scales(
    joints: Sequence[str],
    torque_constants: Sequence[float] | None = None,
    gear_ratios: Sequence[float] | None = None,
    effort_signs: Sequence[float] | None = None,
) -> list[float]:
    """Each joint's :attr:`ActuatorConfig.effort_scale` (joint torque per unit of recorded
    effort) from per-joint lists in ``joints`` order (``None``: efforts are joint torques, gear
    ratio 1, sign +1). Raises :class:`ConfigError` naming the joint, or for lists of the wrong
    length or gear ratios without torque constants."""
    given = {
        "torque constants": torque_constants,
        "gear ratios": gear_ratios,
        "effort signs": effort_signs,
    }
    for name, values in given.items():
        if values is not None and len(values) != len(joints):
            raise ConfigError(
                f"{name}: {len(values)} values for {len(joints)} joints {list(joints)}"
            )
    if gear_ratios is not None and torque_constants is None:
        raise ConfigError("gear ratios need torque constants (the efforts are then motor currents)")
    scales = []
    for j, joint in enumerate(joints):
        try:
            scales.append(
                ActuatorConfig(
                    gear_ratio=1.0 if gear_ratios is None else float(gear_ratios[j]),
                    torque_constant=None
                    if torque_constants is None
                    else float(torque_constants[j]),
                    effort_sign=1.0 if effort_signs is None else float(effort_signs[j]),
                ).effort_scale
            )
        except ConfigError as e:
            raise ConfigError(f"joint {joint!r}: {e}") from None
    return scales


@dataclass(frozen=True)
class ChainConfig:
    """A chain of 1-DoF joints to identify and its actuators.

    Exactly one of ``robot`` (an example-robot-data name,
    :data:`inertia_id_ros.core.robots.ROBOT_URDFS`) and ``urdf`` (a path) gives the model.
    ``joints`` are identified; every other joint is locked at ``locked_positions`` (rad or m,
    default 0). ``actuators`` maps each joint to its :class:`ActuatorConfig` (a joint without one
    gets ``ActuatorConfig()``: N = 1, no rotor). ``estimate``: the drive terms estimated for every
    joint (:data:`inertia_id_ros.chain.friction.DRIVE_TERMS`).

    YAML form (:meth:`load`)::

        robot: go1                       # or  urdf: path/to/robot.urdf (relative to the file)
        joints: [FL_hip_joint, FL_thigh_joint, FL_calf_joint]
        locked_positions: {}             # joint: rad
        estimate: [viscous, coulomb, offset, armature]
        actuators:
          FL_hip_joint: {gear_ratio: 6.33, rotor_inertia: 1.11842e-4, torque_constant: null,
                         motor: go1_motor, coulomb_velocity: 0.05}
        coupling:                        # optional: motors that turn with several joints
          joints: [wrist_5, wrist_6]
          matrix: [[1.0, 0.0], [0.5, 1.0]]   # row m: motor of joint m, per joint rad, over gear

    ``coupling`` is a transmission's coupling between some of the ``joints`` (rows and columns in
    its ``joints`` order, as an input description's ``transmission.coupling``); with each joint's
    ``gear_ratio`` it gives the motor-to-joint matrix ``diag(gear_ratio) · matrix``, whose coupled
    motors get their own rotor inertia and friction (:mod:`inertia_id_ros.chain.motors`).
    """

    joints: tuple[str, ...]
    actuators: Mapping[str, ActuatorConfig] = field(default_factory=dict)
    robot: str | None = None
    urdf: str | None = None
    locked_positions: Mapping[str, float] = field(default_factory=dict)
    estimate: tuple[str, ...] = DRIVE_TERMS
    coupling: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "joints", tuple(self.joints))
        object.__setattr__(self, "estimate", tuple(self.estimate))
        object.__setattr__(self, "actuators", dict(self.actuators))
        object.__setattr__(
            self, "locked_positions", {k: float(v) for k, v in self.locked_positions.items()}
        )
        if (self.robot is None) == (self.urdf is None):
            raise ConfigError("give exactly one of 'robot' (example-robot-data name) and 'urdf'")
        if not self.joints or len(set(self.joints)) != len(self.joints):
            raise ConfigError(
                f"joints must be a non-empty list without duplicates, got {list(self.joints)}"
            )
        unknown = sorted(set(self.actuators) - set(self.joints))
        if unknown:
            raise ConfigError(
                f"actuators given for joints {unknown} that are not in joints {list(self.joints)}"
            )
        bad_terms = sorted(set(self.estimate) - set(DRIVE_TERMS))
        if bad_terms:
            raise ConfigError(
                f"estimate: unknown drive terms {bad_terms}; known: {list(DRIVE_TERMS)}"
            )
        for joint, actuator in self.actuators.items():
            if not isinstance(actuator, ActuatorConfig):
                raise ConfigError(
                    f"actuators[{joint!r}] must be an ActuatorConfig, got {type(actuator).__name__}"
                )

    def actuator(self, joint: str) -> ActuatorConfig:
        """The actuator of ``joint`` (``ActuatorConfig()`` if none is configured)."""
        if joint not in self.joints:
            raise ConfigError(f"joint {joint!r} is not in the chain {list(self.joints)}")
        return self.actuators.get(joint, ActuatorConfig())

    def urdf_path(self) -> Path:
        """Path of the chain's URDF."""
        if self.robot is not None:
            return example_robot_urdf(self.robot)
        if self.urdf is None:
            raise ConfigError("give exactly one of 'robot' (example-robot-data name) and 'urdf'")
        return Path(self.urdf)

    def drives(self, estimate: Iterable[str] | None = None) -> dict[str, JointDrive]:
        """``{joint: JointDrive}`` estimating ``estimate`` (default :attr:`estimate`)."""
        terms = tuple(self.estimate if estimate is None else estimate)
        return {j: self.actuator(j).drive(terms) for j in self.joints}

    def motor_coupling(self) -> MotorCoupling | None:
        """The motor-to-joint matrix of :attr:`coupling` (``None`` without one); ConfigError
        when it is malformed or names a joint not in the chain."""
        if self.coupling is None:
            return None
        try:
            _check_keys(self.coupling, ("joints", "matrix"), "coupling")
            coupling = MotorCoupling.from_json(self.coupling)
        except (KeyError, TypeError, ValueError) as e:
            raise ConfigError(f"coupling: needs 'joints' and a square 'matrix' ({e})") from None
        unknown = sorted(set(coupling.joint_names) - set(self.joints))
        if unknown:
            raise ConfigError(f"coupling: {unknown} are not joints of the chain")
        gears = np.array([self.actuator(j).gear_ratio for j in coupling.joint_names])
        return MotorCoupling(coupling.joint_names, gears[:, None] * coupling.matrix)

    def link_model(self) -> LinkModel:
        """The :class:`LinkModel` of the chain with :meth:`drives` and its coupled motors."""
        return LinkModel.from_urdf(
            self.urdf_path(),
            self.joints,
            self.locked_positions,
            self.drives(),
            self.motor_coupling(),
        )

    # ---- mappings and YAML --------------------------------------------------------------------

    @classmethod
    def from_dict(cls, mapping: Mapping[str, Any], base_dir: Path | None = None) -> ChainConfig:
        """From the YAML form (see the class docstring); a relative ``urdf`` is taken relative to
        ``base_dir`` (default: the working directory)."""
        _check_keys(mapping, [f.name for f in fields(cls)], "chain config")
        values = dict(mapping)
        if "joints" not in values:
            raise ConfigError("chain config: 'joints' is required")
        actuators = values.get("actuators") or {}
        _check_keys(actuators, values["joints"], "actuators")
        values["actuators"] = {
            joint: ActuatorConfig.from_dict(a or {}, f"actuators[{joint!r}]")
            for joint, a in actuators.items()
        }
        values["locked_positions"] = values.get("locked_positions") or {}
        if values.get("urdf") is not None and base_dir is not None:
            values["urdf"] = str(Path(base_dir) / Path(values["urdf"]).expanduser())
        try:
            return cls(**values)
        except TypeError as e:
            raise ConfigError(f"chain config: {e}") from None

    def to_dict(self) -> dict[str, Any]:
        """Plain mapping (YAML-safe), the inverse of :meth:`from_dict`."""
        return {
            "robot": self.robot,
            "urdf": self.urdf,
            "joints": list(self.joints),
            "locked_positions": dict(self.locked_positions),
            "estimate": list(self.estimate),
            "actuators": {j: a.to_dict() for j, a in self.actuators.items()},
            **({} if self.coupling is None else {"coupling": dict(self.coupling)}),
        }

    @classmethod
    def load(cls, path: str | Path) -> ChainConfig:
        """From a YAML file (a relative ``urdf`` is relative to the file's directory)."""
        path = Path(path)
        try:
            mapping = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError) as e:
            raise ConfigError(f"cannot read chain config {str(path)!r}: {e}") from None
        try:
            return cls.from_dict(mapping or {}, base_dir=path.parent)
        except ConfigError as e:
            raise ConfigError(f"{path}: {e}") from None

    def save(self, path: str | Path) -> None:
        """Write the YAML form to ``path``."""
        Path(path).write_text(yaml.safe_dump(self.to_dict(), sort_keys=False))


GO1_GEAR_RATIO = 6.33
"""Go1 joint motor's planetary reduction (hip abduction and hip flexion)."""
GO1_KNEE_GEAR_RATIO = 9.495
"""Go1 knee: the motor's 6.33 times a 1.5 linkage (the URDF's knee limits: 1.5 x the torque,
1 / 1.5 x the speed of the hip's)."""
GO1_ROTOR_INERTIA = 1.11842e-4
"""Go1 motor rotor inertia about its axis (kg·m², the URDF's ``*_rotor`` links)."""


def go1_leg_config(leg: str = "FL", coulomb_velocity: float = 0.05) -> ChainConfig:
    """One Go1 leg (``leg`` in FL, FR, RL, RR): hip abduction, hip flexion, knee; the trunk is
    the fixed base and the other legs are locked. One motor type (``go1_motor``) with gear ratios
    6.33, 6.33 and 9.5: reflected inertias 4.5e-3, 4.5e-3 and 1.0e-2 kg·m² (on the knee about
    two thirds of the joint's inertia). The efforts are joint torques (Unitree's ``tauEst``)."""
    if leg not in ("FL", "FR", "RL", "RR"):
        raise ConfigError(f"leg must be one of FL, FR, RL, RR, got {leg!r}")
    joints = tuple(f"{leg}_{name}_joint" for name in ("hip", "thigh", "calf"))
    ratios = (GO1_GEAR_RATIO, GO1_GEAR_RATIO, GO1_KNEE_GEAR_RATIO)
    actuators = {
        j: ActuatorConfig(
            gear_ratio=n,
            rotor_inertia=GO1_ROTOR_INERTIA,
            motor="go1_motor",
            coulomb_velocity=coulomb_velocity,
        )
        for j, n in zip(joints, ratios)
    }
    return ChainConfig(joints=joints, actuators=actuators, robot="go1")


# ---- fit with shared rotor inertias ----------------------------------------------------------
