"""What every offline job returns (:class:`JobResult`), and the steps several jobs share.

A job is a function ``job(inputs..., options) -> result``: ``options`` a frozen dataclass whose
field defaults are the job's defaults (the command line takes its defaults from them), ``result``
a :class:`JobResult` subclass with the job's typed estimate. A job raises
:class:`~inertia_id_ros.errors.CallerError` subclasses for the caller's mistakes (a bad file,
name or option: exit code 2), :class:`~inertia_id_ros.errors.EstimateUnavailable` when the data
give no estimate (exit code 1), and returns its findings, a refusing one included (exit code 3).
It prints nothing: progress goes to ``progress`` callbacks where a job takes one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from inertia_id_ros.errors import InputError
from inertia_id_ros.findings import Finding, refused

if TYPE_CHECKING:
    import pinocchio as pin

E = TypeVar("E")
"""The estimate type of a job's result."""

Progress = Callable[[str], None]
"""Where a long job reports what it is doing (a line of text, e.g. printed on stderr)."""


@dataclass(frozen=True)
class JobResult(Generic[E]):
    """A job's answer: ``estimate`` (the job's typed estimate; ``None`` when its input was
    refused before any fit), ``findings`` (refusals, warnings and notes, in the order found),
    ``document`` (the result JSON: what ``--json`` writes; the findings included) and ``summary``
    (lines for people: what the command prints)."""

    estimate: E | None
    findings: tuple[Finding, ...]
    document: dict[str, Any]
    summary: tuple[str, ...] = ()

    @property
    def refused(self) -> bool:
        """Whether a finding refuses the answer (it cannot be trusted: exit code 3)."""
        return refused(self.findings)


def findings_document(findings: tuple[Finding, ...] | list[Finding]) -> dict[str, Any]:
    """``{"findings": [...], "refused": bool}``: the findings' part of a result JSON."""
    return {"findings": [f.as_json() for f in findings], "refused": refused(findings)}


def refused_input(findings: list[Finding]) -> JobResult[Any]:
    """The result of a job whose input checks refused the data before any fit: no estimate, the
    findings alone in the document."""
    return JobResult(None, tuple(findings), findings_document(findings))


def load_urdf(urdf: str) -> pin.Model:
    """The model of the URDF file ``urdf``; a missing or bad file is an :class:`InputError`."""
    from inertia_id_ros.core.robots import load_model

    try:
        return load_model(urdf)
    except (FileNotFoundError, ValueError) as e:
        raise InputError(str(e)) from None


def body_lines(body: dict[str, Any]) -> list[str]:
    """What a result's ``bodies`` entry says, for people: its mass, COM (mm) and inertia about
    the COM (1e-3 kg m²), and whether it is fully physically consistent."""
    lines = [f"  mass      {body['mass']:.4f} kg"]
    if body["com"] is not None:
        com = ", ".join(f"{1e3 * c:.2f}" for c in body["com"])
        inertia = ", ".join(f"{1e3 * i:.4f}" for i in body["inertia_com"])
        lines += [
            f"  COM       [{com}] mm",
            f"  inertia about the COM [ixx, ixy, ixz, iyy, iyz, izz]: [{inertia}] 1e-3 kg m²",
        ]
    verdict = "yes" if body["fully_consistent"] else "NO"
    lines.append(
        f"  fully physically consistent: {verdict} "
        f"(λmin(J) = {body['min_pseudo_inertia_eig']:.3e} kg m²)"
    )
    return lines
