"""Armatures the joint torques cannot identify, fixed by their motor type's rotor inertia.

A chain to identify (one leg of a quadruped, an arm) is described by :class:`ChainConfig`: the
URDF, the joints, the locked joints' positions and one :class:`ActuatorConfig` per joint (gear
ratio, rotor inertia, torque constant, motor type, Coulomb smoothing). It is a plain mapping in
YAML (``config/go1_front_left_leg.yaml``), so a node can load it from ``config/``.

Which armatures the joint torques determine. A joint's armature (reflected rotor inertia
``N**2 * I_rotor``, :mod:`inertia_id_ros.chain.friction`) adds ``armature * ddq_k`` to joint ``k``'s
torque only. The inertia of link ``k`` (the body joint ``k`` moves) about joint ``k``'s axis,
``I_kk``, enters the torques through ``omega_k`` and ``alpha_k``; for a fixed base:

- joint 1: its axis is fixed, ``I_11`` only adds ``I_11 * ddq_1`` to joint 1's torque: the same
  column as the armature. Never separable (the classic regrouping of ``Ia_1`` with ``ZZ_1``).
- joint 2 with its axis perpendicular to joint 1's (hip flexion after hip abduction on every
  quadruped leg, Panda joint 2): ``I_22`` again only adds ``I_22 * ddq_2`` to joint 2's torque
  (``z_1 . z_2 = 0`` removes it from joint 1's row, and ``omega x I omega`` has no ``I_22`` term
  along ``z_2``): not separable either.
- a joint parallel to a previous one (the knee after the hip flexion), and in general the joints
  further out: ``I_kk`` also moves earlier joints' torques, the armature does not: separable
  (:func:`~inertia_id_ros.chain.base_parameters.base_parameters` tells for the data at hand).

So from a fixed-base leg's torques only the knee's armature is identifiable; the hip abduction's
and hip flexion's come only as "armature + link inertia about the axis". When the joints share one
motor type (:attr:`ActuatorConfig.motor`; Go1: one motor, reductions 6.33 and 9.5), the rotor
inertia follows from the identifiable armatures, ``I_rotor = sum N_k**2 a_k / sum N_k**4``
(least squares of ``a_k = N_k**2 I_rotor``), and fixes the others (:func:`resolve_armatures`):
offline :func:`fit_chain`, online :class:`~inertia_id_ros.online.link_estimator.LinkEstimator`
given the chain's actuators (the node's links mode with a ``chain_config``). On 60 s of the
simulated Go1 leg (0.1 N·m torque noise) all three armatures come out within 1.5 % and every
viscous and Coulomb friction within 1.3 %, offline (``test/unit/chain/test_leg.py``) and online
(``test/unit/online/test_link_estimator.py``); over DDS within 1.4 % and 4 %
(``test/ros/test_integration.py``, README).

:func:`resolve_armatures` is the one place this happens: :func:`fit_chain` offline and
:class:`~inertia_id_ros.online.link_estimator.LinkEstimator` online both take its
:class:`ArmatureResolution` (the chain with those armatures known, and how its parameters map to
the full chain's) and fit again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from inertia_id_ros.chain.actuators import ActuatorConfig, ChainConfig
from inertia_id_ros.chain.base_parameters import (
    DEFAULT_RANK_TOLERANCE,
    BaseParameters,
    base_parameters,
)
from inertia_id_ros.chain.link_fit import LinkFit, fit_links
from inertia_id_ros.chain.links import JointTorqueData, LinkModel
from inertia_id_ros.options import DEFAULT_PRIOR_WEIGHT


@dataclass(frozen=True)
class RotorInertia:
    """The rotor inertia of one motor type: ``value`` (kg·m²), estimated from the armatures of
    ``from_joints`` (``()``: the configured value) and used as the known armature
    ``N**2 * value`` of ``applied_to``, whose armatures the data cannot separate."""

    motor: str | None
    value: float
    from_joints: tuple[str, ...]
    applied_to: tuple[str, ...]

    @property
    def source(self) -> str:
        """``'rotor'`` when estimated from armatures, ``'configured'`` otherwise.

        The :data:`inertia_id_ros.online.link_estimator.ARMATURE_SOURCES` entry of the
        ``applied_to`` joints.
        """
        return "rotor" if self.from_joints else "configured"


@dataclass(frozen=True)
class ChainFit:
    """Result of :func:`fit_chain`.

    ``fit`` is the final :class:`LinkFit` of ``model`` (the chain with the unidentifiable
    armatures known); ``armatures`` every joint's armature (kg·m²), estimated or known;
    ``rotor_inertias`` how the unidentifiable ones were fixed; ``base`` the base parameters of the
    data with every armature estimated (``base.unidentifiable`` says what the data cannot fix).
    """

    fit: LinkFit
    model: LinkModel
    armatures: dict[str, float]
    rotor_inertias: tuple[RotorInertia, ...]
    unidentifiable_armatures: tuple[str, ...]
    base: BaseParameters

    @property
    def drive_parameters(self) -> dict[str, dict[str, float]]:
        """``{joint: {term: value}}``: the estimated drive terms and every joint's armature."""
        out = self.model.drive_parameters(self.fit.x)
        for joint, value in self.armatures.items():
            out[joint]["armature"] = value
        return out


def fit_chain(
    config: ChainConfig,
    data: JointTorqueData | Iterable[JointTorqueData],
    prior_weight: float = DEFAULT_PRIOR_WEIGHT,
    method: str = "lmi",
    rank_tolerance: float = DEFAULT_RANK_TOLERANCE,
    **solver_options: Any,
) -> ChainFit:
    """Fit the chain's links and drives, resolving the armatures the torques cannot separate.

    1. :func:`~inertia_id_ros.chain.link_fit.fit_links` with every drive term of ``config.estimate``
       and :func:`~inertia_id_ros.chain.base_parameters.base_parameters` of ``data``.
    2. If some estimated armatures are unidentifiable (see the module docstring),
       :func:`resolve_armatures` gives each motor type's rotor inertia (the least-squares
       ``I_rotor = sum N_k**2 a_k / sum N_k**4`` over its joints with identifiable armatures
       ``a_k``; the configured rotor inertia when its motor type has no identifiable armature, or
       no ``motor`` is set); an unidentifiable armature is then the known ``N**2 * I_rotor``
       (:func:`known_armature_model`), and the chain is fitted again (warm start) so that the
       links' inertias about those axes exclude the rotors.

    :class:`~inertia_id_ros.online.link_estimator.LinkEstimator` does the same online when given the
    chain's actuators.
    """
    runs = [data] if isinstance(data, JointTorqueData) else list(data)
    model = config.link_model()
    base = base_parameters(model, runs, rank_tolerance)
    fit = fit_links(model, runs, method=method, prior_weight=prior_weight, **solver_options)
    resolution = resolve_armatures(model, config.actuators, fit.x, base.unidentifiable)
    if resolution is None:
        return ChainFit(fit, model, armatures(model, fit.x), (), (), base)
    final = fit_links(
        resolution.model,
        runs,
        method=method,
        prior_weight=prior_weight,
        initvals=resolution.reduce(fit.x),
        **solver_options,
    )
    return ChainFit(
        final,
        resolution.model,
        armatures(resolution.model, final.x),
        resolution.rotors,
        resolution.joints,
        base,
    )


def armatures(model: LinkModel, x: np.ndarray) -> dict[str, float]:
    """Every joint's armature (kg·m²) under ``model`` with parameters ``x``: the estimated one,
    or the drive's known reflected inertia."""
    estimated = model.drive_parameters(x)
    return {
        j: estimated[j].get("armature", d.reflected_inertia)
        for j, d in zip(model.joint_names, model.drives)
    }


def resolve_armatures(
    model: LinkModel,
    actuators: Mapping[str, ActuatorConfig],
    x: np.ndarray,
    unidentifiable: Iterable[str],
) -> ArmatureResolution | None:
    """How to fix the estimated armatures of ``model`` that the data cannot identify (``None``:
    every estimated armature is identifiable).

    ``actuators``: the chain's actuators by joint (a joint without one: no motor type, its
    drive's gear ratio and rotor inertia); ``x``: an estimate of ``model``'s parameters (the
    identifiable armatures are taken from it); ``unidentifiable``: parameter names the data cannot
    fix (:attr:`~inertia_id_ros.chain.base_parameters.BaseParameters.unidentifiable`). Returns one
    :class:`ArmatureResolution` with one :class:`RotorInertia` per motor type with
    unidentifiable armatures, its value
    ``I_rotor = sum N_k**2 a_k / sum N_k**4`` (least squares of ``a_k = N_k**2 I_rotor``, and
    ``>= 0``: an unconstrained fit may give negative armatures) over the identifiable armatures
    ``a_k`` of its joints, or, for a motor type without one and for each joint without a motor
    type, the configured rotor inertia.
    """
    unidentifiable = set(unidentifiable)
    estimated = model.drive_parameters(x)
    drives = dict(zip(model.joint_names, model.drives))

    def actuator(joint: str) -> ActuatorConfig:
        drive = drives[joint]
        return actuators.get(joint) or ActuatorConfig(
            gear_ratio=drive.gear_ratio, rotor_inertia=drive.rotor_inertia
        )

    has_armature = [j for j in model.joint_names if "armature" in estimated[j]]
    groups: dict[str | None, list[str]] = {}
    for joint in has_armature:
        if f"{joint}.armature" in unidentifiable:
            groups.setdefault(actuator(joint).motor, []).append(joint)
    out = []
    for motor, joints in groups.items():
        sources = (
            []
            if motor is None
            else [
                j
                for j in has_armature
                if f"{j}.armature" not in unidentifiable and actuator(j).motor == motor
            ]
        )
        if sources:
            ratios = np.array([actuator(j).gear_ratio for j in sources])
            armature = np.array([estimated[j]["armature"] for j in sources])
            value = max(float(ratios**2 @ armature / np.sum(ratios**4)), 0.0)
            out.append(RotorInertia(motor, value, tuple(sources), tuple(joints)))
        else:  # no data on this motor: each joint keeps its configured rotor
            out += [RotorInertia(motor, actuator(j).rotor_inertia, (), (j,)) for j in joints]
    return ArmatureResolution.of(model, tuple(out)) if out else None


@dataclass(frozen=True)
class ArmatureResolution:
    """The chain ``full`` with the armatures of the joints the ``rotors`` are applied to known
    (``N**2 * rotor.value``): ``model`` estimates ``full``'s parameters but those; ``keep``
    (q,) are the indices of ``model``'s parameters among ``full``'s, ``fixed`` the others', whose
    values are ``values`` (kg·m²)."""

    full: LinkModel
    model: LinkModel
    rotors: tuple[RotorInertia, ...]
    keep: np.ndarray
    fixed: np.ndarray
    values: np.ndarray

    @classmethod
    def of(cls, full: LinkModel, rotors: tuple[RotorInertia, ...]) -> ArmatureResolution:
        """``full`` with the armatures the ``rotors`` fix removed from its parameters (kg m²)."""
        model = known_armature_model(full, rotors)
        names = full.parameter_names
        keep = np.array([names.index(name) for name in model.parameter_names])
        fixed = np.setdiff1d(np.arange(full.n_parameters), keep)
        drives = dict(zip(model.joint_names, model.drives))
        values = np.array([drives[names[i].rsplit(".", 1)[0]].reflected_inertia for i in fixed])
        return cls(full, model, rotors, keep, fixed, values)

    @property
    def joints(self) -> tuple[str, ...]:
        """The joints whose armatures are fixed, in chain order."""
        applied = {joint for rotor in self.rotors for joint in rotor.applied_to}
        return tuple(j for j in self.full.joint_names if j in applied)

    def reduce(self, x: np.ndarray) -> np.ndarray:
        """``model``'s parameters (q,) from ``full``'s ``x`` (p,)."""
        return np.asarray(x, dtype=float)[self.keep]

    def expand(self, x_model: np.ndarray) -> np.ndarray:
        """``full``'s parameters (p,) from ``model``'s (q,), the fixed armatures filled in."""
        x = np.empty(self.full.n_parameters)
        x[self.keep], x[self.fixed] = x_model, self.values
        return x

    def normal_equations(
        self, gram: np.ndarray, moment: np.ndarray, yty: float
    ) -> tuple[np.ndarray, np.ndarray, float]:
        """Normal equations of ``||Y[:, keep] x_keep - (y - Y[:, fixed] values)||²`` from those of
        ``||Y x - y||²`` (``gram`` (p, p), ``moment`` (p,), ``yty``): the fixed armatures' columns
        moved to the right-hand side."""
        keep, fixed, values = self.keep, self.fixed, self.values
        cross = gram[np.ix_(keep, fixed)]
        known_square = values @ gram[np.ix_(fixed, fixed)] @ values
        return (
            gram[np.ix_(keep, keep)],
            moment[keep] - cross @ values,
            float(yty - 2.0 * values @ moment[fixed] + known_square),
        )


def known_armature_model(model: LinkModel, rotors: Iterable[RotorInertia]) -> LinkModel:
    """``model`` with the armature of every joint a rotor is ``applied_to`` known, not
    estimated: ``N**2 * rotor.value`` (N: the joint drive's gear ratio). Its parameters are
    ``model``'s without those armatures, in the same order."""
    drives = dict(zip(model.joint_names, model.drives))
    for rotor in rotors:
        for joint in rotor.applied_to:
            drives[joint] = replace(drives[joint], armature=False, rotor_inertia=rotor.value)
    return LinkModel(model.model, drives, model.robot_joint_names, model.coupling)
