"""Findings: what a check says of an input or an answer, as data.

A :class:`Finding` has a ``kind`` (its code: what was checked, ``"time_units"``,
``"residual_ratio"``, ...), a ``subject`` (the sensor, joint, link or file; may be empty), a
``severity`` (:data:`REFUSE`: the answer cannot be trusted and is not given; :data:`WARN`: given,
with the doubt stated; :data:`NOTE`: what was done or assumed, for the record), a ``message``
(the likely cause, one sentence or two), the ``fix`` (what to do, in the user's terms; may be
empty or part of the message) and the ``figures`` behind it. The checks
live beside what they check (:mod:`inertia_id_ros.formats.units` for a log's units,
:mod:`inertia_id_ros.offline.plausibility` for fits); the command line prints findings, and
result JSON files carry them (:meth:`Finding.as_json`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

REFUSE, WARN, NOTE = "refuse", "warn", "note"
"""A finding's severities: the answer is not given (exit code 3); given with the doubt; given, with
what was done or assumed."""
LABELS = {REFUSE: "refused", WARN: "warning", NOTE: "note"}
"""How a finding of each severity is introduced where it is printed."""


@dataclass(frozen=True)
class Finding:
    """One finding of a check: see the module docstring."""

    kind: str
    subject: str
    severity: str
    message: str
    figures: dict[str, Any] = field(default_factory=dict)
    fix: str = ""
    fixes: Mapping[str, str] = field(default_factory=dict, compare=False)
    """The fix in the terms of where the input came from (:data:`TERMS`; :func:`advice`), when
    they differ from ``fix`` (the library's terms)."""

    def in_terms(self, terms: str) -> Finding:
        """This finding with its fix in ``terms`` (one of :data:`TERMS`; its ``fix`` when it
        has none in them)."""
        return replace(self, fix=self.fixes.get(terms, self.fix)) if self.fixes else self

    def as_json(self) -> dict[str, Any]:
        """``{"kind", "subject", "severity", "message", "figures"}``, and ``"fix"`` when given."""
        document = {
            "kind": self.kind,
            "subject": self.subject,
            "severity": self.severity,
            "message": self.message,
            "figures": self.figures,
        }
        return document | ({"fix": self.fix} if self.fix else {})

    def text(self) -> str:
        """``"refused: <subject>: <message> <fix>"``, ``"warning: ..."`` or ``"note: ..."`` (no
        ``"<subject>: "`` when it is empty)."""
        subject = f"{self.subject}: " if self.subject else ""
        fix = f" {self.fix}" if self.fix else ""
        return f"{LABELS[self.severity]}: {subject}{self.message}{fix}"


def refused(findings: Sequence[Finding]) -> bool:
    """Whether any finding refuses the answer."""
    return any(f.severity == REFUSE for f in findings)


TERMS = ("library", "flags", "description", "node")
"""Where an input came from, and so the terms its fixes are given in: the library's
arguments, the command line's flags (``--data``, ``--bag``), an input description's keys
(``--input``), the node's parameters."""

REMEDIES: dict[str, dict[str, str]] = {
    "time_unit": {
        "library": "Convert the stamps to seconds (multiply by {factor:g}).",
        "flags": "Give --time-unit {unit} (--data), or convert the stamps to seconds.",
        "description": "Give the stream's time_unit: {unit} in the input description.",
        "node": "Stamp the messages in seconds (the stamps times {factor:g}).",
    },
    "degrees": {
        "library": "Convert the positions (and velocities, accelerations) to radians.",
        "flags": "Give --angle-unit deg.",
        "description": "Give unit: deg in joints.position of the input description "
        "(velocities and accelerations follow it).",
        "node": "Publish the joint states in radians.",
    },
    "radians": {
        "library": "If they are in radians, do not convert them from degrees.",
        "flags": "If they are in radians, drop --angle-unit deg.",
        "description": "If they are in radians, give unit: rad in joints.position of the "
        "input description.",
        "node": "",
    },
    "effort_sign": {
        "library": "Flip the effort column's sign for this joint (the drive's convention).",
        "flags": "Flip the effort column's sign for this joint (the drive's convention), or "
        "read the log through an input description (--input) with sign: {{{name}: -1}} in "
        "joints.effort.",
        "description": "Give sign: {{{name}: -1}} in joints.effort of the input description "
        "(the drive's convention).",
        "node": "Flip the effort's sign for this joint (torques_effort_signs, or the drive's "
        "convention).",
    },
    "effort_sign_runs": {
        "library": "Flip the effort column's sign for this joint in both runs (the drive's "
        "convention).",
        "flags": "Flip the effort column's sign for this joint in both runs (--effort-signs, "
        "or the drive's convention).",
        "description": "Give sign: {{{name}: -1}} in joints.effort of both runs' input "
        "descriptions (or --effort-signs).",
    },
    "no_imu": {
        "library": "Give the recording an IMU (imu_frame and the IMU keys), or fit a robot on a "
        "stand with base='fixed', one standing on a foot with base='fixed' and fixed_frame=its "
        "sole (rooted at the stance sole).",
        "flags": "Give the IMU (an NPZ's imu_frame and imu_orientation, imu_angular_velocity, "
        "imu_linear_acceleration; a bag's --imu-topic), or fit a robot on a stand with --base "
        "fixed, one standing on a foot with --base fixed --fixed-frame SOLE (rooted at the "
        "stance sole).",
        "description": "Give the IMU (imu: in the input description), or fit a robot on a stand "
        "with --base fixed, one standing on a foot with --base fixed --fixed-frame SOLE (rooted "
        "at the stance sole).",
        "node": "Give imu_topic and imu_frame, or set base to fixed (on a stand) with "
        "fixed_frame the stance sole (standing on one foot).",
    },
    "wrench_sign": {
        "library": "Negate this sensor's readings (child_to_parent sensors such as the real "
        "iCub's), or check its frame.",
        "flags": "Give --flip-wrench-sign for this sensor (child_to_parent sensors such as the "
        "real iCub's), or check its frame.",
        "description": "Give this sensor sign: flip in ft_sensors of the input description "
        "(sign: keep if the URDF's measure_direction negated it), or check its frame.",
        "node": "Set ft_flip_wrench_sign for this sensor (child_to_parent sensors such as the "
        "real iCub's), or check its frame.",
    },
    "payload_sign": {
        "library": "Check the sensor frame and the sensor's sign convention (negate the "
        "readings of a sensor that reports the wrench the payload exerts on it).",
        "flags": "Check --sensor-frame and the sensor's sign convention (--flip-wrench-sign).",
        "description": "Check --sensor-frame and the sensor's sign in ft_sensors of the input "
        "description (sign: flip, keep or urdf).",
        "node": "Check sensor_frame and the sensor's sign convention (flip_wrench_sign).",
    },
    "sensor_sign": {
        "library": "Negate a child_to_parent sensor's readings (FTSensor's sign), or fix its "
        "frame or kind.",
        "flags": "Give --flip-wrench-sign FRAME for a child_to_parent sensor, or fix its frame "
        "or kind.",
        "description": "Give that sensor sign: flip (or urdf, from the URDF's measure_direction) "
        "in ft_sensors of the input description, or fix its frame or kind.",
        "node": "Set ft_flip_wrench_sign for a child_to_parent sensor, or fix its frame or kind.",
    },
    "offset": {
        "library": "Fit it (estimate_offset=True) or calibrate it out first.",
        "flags": "Fit it (drop --no-offset) or calibrate it out first.",
        "node": "Fit it (estimate_offset: true) or calibrate it out first.",
    },
    "known_offset": {
        "library": "calibrate the offset and set estimate_offset=False",
        "flags": "calibrate the offset and give --no-offset",
        "node": "calibrate the offset and set estimate_offset: false",
    },
}
"""Fixes in each of :data:`TERMS` (``str.format`` templates of a finding's figures, its
``subject`` and the ``name`` quoted in it); a missing term reads as the command line's."""


def advice(remedy: str, subject: str = "", **values: Any) -> tuple[str, dict[str, str]]:
    """``(fix, fixes)`` of :data:`REMEDIES` ``[remedy]`` for ``subject`` (its quoted ``name``:
    ``"joint 'a1'"`` -> ``a1``) with ``values``: the library's fix and those of the other
    terms, for a :class:`Finding`'s ``fix`` and ``fixes``."""
    quoted = re.search(r"'([^']*)'", subject)
    names = {"subject": subject, "name": quoted.group(1) if quoted else subject, **values}
    texts = REMEDIES[remedy]
    fixes = {terms: texts.get(terms, texts["flags"]).format(**names) for terms in TERMS}
    return fixes["library"], fixes


def in_terms(findings: Sequence[Finding], terms: str) -> tuple[Finding, ...]:
    """``findings`` with their fixes in ``terms`` (:meth:`Finding.in_terms`)."""
    return tuple(f.in_terms(terms) for f in findings)
