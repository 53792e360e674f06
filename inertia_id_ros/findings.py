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

from collections.abc import Sequence
from dataclasses import dataclass, field
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
