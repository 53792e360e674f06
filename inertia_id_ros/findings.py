"""Findings: what a check says of an input or an answer, as data.

A :class:`Finding` has a ``kind`` (what was checked: ``"time_units"``, ``"residual_ratio"``,
...), a ``subject`` (the sensor, joint or link), a ``severity`` (:data:`REFUSE`: the answer
cannot be trusted and is not given; :data:`WARN`: given, with the doubt stated), a ``message``
(the likely cause and the fix, one sentence or two) and the ``figures`` behind it. The checks
live beside what they check (:mod:`inertia_id_ros.formats.units` for a log's units,
:mod:`inertia_id_ros.offline.plausibility` for fits); the command line prints findings, and
result JSON files carry them (:meth:`Finding.as_json`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

REFUSE, WARN = "refuse", "warn"
"""A finding's severities: the answer is not given (exit code 3), or given with the doubt."""


@dataclass(frozen=True)
class Finding:
    """One finding of a check: see the module docstring."""

    kind: str
    subject: str
    severity: str
    message: str
    figures: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """``{"kind", "subject", "severity", "message", "figures"}``."""
        return {
            "kind": self.kind,
            "subject": self.subject,
            "severity": self.severity,
            "message": self.message,
            "figures": self.figures,
        }

    def text(self) -> str:
        """``"refused: <subject>: <message>"`` or ``"warning: ..."``."""
        label = "refused" if self.severity == REFUSE else "warning"
        return f"{label}: {self.subject}: {self.message}"


def refused(findings: Sequence[Finding]) -> bool:
    """Whether any finding refuses the answer."""
    return any(f.severity == REFUSE for f in findings)
