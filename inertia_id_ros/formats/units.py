"""The units of a log, judged from its values: stamps counted in ms, us or ns rather than s;
joint positions in degrees rather than radians (against the URDF limits); a robot that barely
moved. Each check returns :class:`~inertia_id_ros.findings.Finding` s (how the thresholds were
chosen: docs/measurements.md, "Plausibility").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from inertia_id_ros.findings import REFUSE, WARN, Finding, advice

if TYPE_CHECKING:
    import pinocchio as pin

    from inertia_id_ros.formats.data import JointStates

TIME_UNITS = (("milliseconds", 1e-3), ("microseconds", 1e-6), ("nanoseconds", 1e-9))
"""Units a clock may count in, and their size in seconds."""
UNIT_KEYS = {"milliseconds": "ms", "microseconds": "us", "nanoseconds": "ns"}
"""The names of :data:`TIME_UNITS` in ``--time-unit`` and a description's ``time_unit``."""


SAMPLE_PERIOD_RANGE = (1e-5, 0.5)
"""Plausible time steps of recorded joint states or wrenches (s): 100 kHz to 2 Hz."""


ANGLE_LIMIT_MARGIN = 0.1
"""Positions up to this far outside the URDF limits (rad) are within them (calibration, URDF
limits set a little inside the hardware's)."""


STILL_MIN_SPAN = 1.0
"""Revolute joints whose URDF limits span over this (rad) are judged by the ``still`` check:
when every one stays within its limits divided by 180/π (radians read as degrees: a Panda's or
KUKA's ±2.9 rad become ±0.05 rad), or the robot barely moved."""


def check_time_units(t: np.ndarray, subject: str) -> list[Finding]:
    """``time_units`` (refuse) when the median step of the stamps ``t`` (N,) is longer than
    :data:`SAMPLE_PERIOD_RANGE` allows for seconds but fits a smaller unit."""
    t = np.asarray(t, dtype=float)
    if t.size < 2:
        return []
    step = float(np.median(np.diff(t)))
    low, high = SAMPLE_PERIOD_RANGE
    if step <= high:
        return []
    for unit, size in TIME_UNITS:
        if low <= step * size <= high:
            return [
                Finding(
                    "time_units",
                    subject,
                    REFUSE,
                    f"the time steps are {step:g} 'seconds' ({1.0 / step:.3g} Hz); as "
                    f"{unit} they would be {step * size:g} s ({1.0 / (step * size):.4g} "
                    f"Hz). {unit.capitalize()}?",
                    {"median_step": step, "unit": unit, "factor": size},
                    *advice("time_unit", unit=UNIT_KEYS[unit], factor=size),
                )
            ]
    return [
        Finding(
            "time_units",
            subject,
            REFUSE,
            f"the time steps are {step:g} s ({1.0 / step:.3g} Hz), slower than any "
            "recording this tool can use and no known unit explains them: check the "
            "time column.",
            {"median_step": step},
        )
    ]


def _still_findings(
    low: np.ndarray,
    high: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    judged: np.ndarray,
    joint_names: Sequence[str],
) -> list[Finding]:
    """``still`` (warn) when every ``judged`` joint (n,) bool stays from ``low`` to ``high``
    (n,) rad within its limits ``lower``, ``upper`` (n,) rad divided by 180/π."""
    margin = np.deg2rad(ANGLE_LIMIT_MARGIN)
    inside = (low >= np.deg2rad(lower) - margin) & (high <= np.deg2rad(upper) + margin)
    if not judged.any() or not inside[judged].all():
        return []
    j = int(np.flatnonzero(judged)[0])
    names = [joint_names[int(k)] for k in np.flatnonzero(judged)]
    return [
        Finding(
            "still",
            ", ".join(names),
            WARN,
            f"every joint stays within its URDF limits divided by 180/π (e.g. "
            f"{joint_names[j]}: {low[j]:.3g} to {high[j]:.3g} rad, limits "
            f"{lower[j]:.3g} to {upper[j]:.3g}): positions in radians read as degrees? "
            "Otherwise the robot barely moved, too little to identify anything.",
            {
                "joints": names,
                "range": [[float(low[k]), float(high[k])] for k in np.flatnonzero(judged)],
            },
            *advice("radians"),
        )
    ]


def check_angle_units(
    q: np.ndarray,
    joint_names: Sequence[str],
    lower: np.ndarray,
    upper: np.ndarray,
    revolute: np.ndarray | None = None,
) -> list[Finding]:
    """Positions ``q`` (N, n) of ``joint_names`` (n,) against the URDF limits ``lower``,
    ``upper`` (n,) rad (unbounded joints: not checked). ``degrees`` (refuse) for the joints whose
    positions leave the limits by more than the limits' span but fit them once converted from
    degrees, ``joint_limits`` (warn) for the others that leave them by more than
    :data:`ANGLE_LIMIT_MARGIN`; ``still`` (warn, alone) when every revolute joint with limits
    spanning over :data:`STILL_MIN_SPAN` stays within its limits divided by 180/π. ``revolute``
    (n,) bool: the joints whose positions are angles (default: all); only they are judged in
    degrees."""
    q, lower, upper = (np.asarray(a, dtype=float) for a in (q, lower, upper))
    bounded = np.isfinite(lower) & np.isfinite(upper) & (upper - lower < 1e3)
    span = np.where(bounded, upper - lower, np.inf)
    revolute = (
        np.ones(len(joint_names), dtype=bool)
        if revolute is None
        else np.asarray(revolute, dtype=bool)
    )
    low, high = np.min(q, axis=0), np.max(q, axis=0)
    still = _still_findings(
        low, high, lower, upper, revolute & bounded & (span > STILL_MIN_SPAN), joint_names
    )
    if still:  # the positions a hundredth of their size: the limits say nothing else
        return still
    outside = bounded & ((low < lower - ANGLE_LIMIT_MARGIN) | (high > upper + ANGLE_LIMIT_MARGIN))
    if not outside.any():
        return []
    far = (low < lower - span) | (high > upper + span)
    fits = (
        outside
        & far
        & revolute
        & (np.deg2rad(low) >= lower - ANGLE_LIMIT_MARGIN)
        & (np.deg2rad(high) <= upper + ANGLE_LIMIT_MARGIN)
    )

    def example(joints: list[int]) -> str:
        """The first of ``joints``: its range and limits, in words."""
        j = joints[0]
        return (
            f"(e.g. {joint_names[j]}: {low[j]:.3g} to {high[j]:.3g} rad, limits "
            f"{lower[j]:.3g} to {upper[j]:.3g})"
        )

    findings = []
    degrees = [j for j in range(len(joint_names)) if fits[j]]
    if degrees:
        findings.append(
            Finding(
                "degrees",
                ", ".join(joint_names[j] for j in degrees),
                REFUSE,
                f"positions leave the URDF limits far {example(degrees)} but fit them divided by "
                "180/π. Degrees?",
                {
                    "joints": [joint_names[j] for j in degrees],
                    "range": [[float(low[j]), float(high[j])] for j in degrees],
                    "limits": [[float(lower[j]), float(upper[j])] for j in degrees],
                },
                *advice("degrees"),
            )
        )
    others = [j for j in range(len(joint_names)) if outside[j] and not fits[j]]
    if others:
        findings.append(
            Finding(
                "joint_limits",
                ", ".join(joint_names[j] for j in others),
                WARN,
                f"positions leave the URDF limits {example(others)}: a joint offset, another joint "
                "order or the wrong URDF?",
                {"joints": [joint_names[j] for j in others]},
            )
        )
    return findings


def position_unit_findings(
    q: np.ndarray, joint_names: Sequence[str], model: pin.Model
) -> list[Finding]:
    """:func:`check_angle_units` of the positions ``q`` (N, n) of ``joint_names`` (n,) against
    ``model``'s limits: joints of one coordinate only (a continuous joint's angle is not
    checked), revolute ones judged in degrees; joints not in ``model`` are skipped."""
    q = np.asarray(q, dtype=float)
    checked = [
        k
        for k, name in enumerate(joint_names)
        if model.existJointName(name) and model.nqs[model.getJointId(name)] == 1
    ]
    ids = [model.getJointId(joint_names[k]) for k in checked]
    starts = [model.idx_qs[i] for i in ids]
    revolute = [model.joints[i].shortname().startswith("JointModelR") for i in ids]
    return check_angle_units(
        q[:, checked],
        [joint_names[k] for k in checked],
        model.lowerPositionLimit[starts],
        model.upperPositionLimit[starts],
        np.array(revolute, dtype=bool),
    )


def log_unit_findings(
    states: JointStates,
    model: pin.Model,
    joints: list[str],
    extra_stamps: dict[str, np.ndarray] | None = None,
) -> list[Finding]:
    """Units of a recording before any fit: its stamps (and ``extra_stamps``, {what: stamps})
    and the positions of ``joints`` against the URDF limits (joints of one coordinate: a
    continuous joint's angle is not checked)."""
    findings = check_time_units(states.t, "joint state stamps")
    for what, stamps in (extra_stamps or {}).items():
        findings += check_time_units(stamps, what)
    columns = [states.joint_names.index(j) for j in joints]
    return findings + position_unit_findings(states.q[:, columns], joints, model)
