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

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from inertia_id_ros.errors import InertiaIdError, InputError
from inertia_id_ros.findings import Finding, in_terms, refused
from inertia_id_ros.formats.source import LogSource

if TYPE_CHECKING:
    import pinocchio as pin

    from inertia_id_ros.offline.volumes import Volume

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


R = TypeVar("R")


def in_source_terms(source: LogSource | None, job: Callable[[], R]) -> R:
    """``job()``, its findings (in its result, its document and any package error it raises)
    giving their fixes in the terms of ``source``: an input description's keys, or the command
    line's flags (the library's without a source)."""
    terms = "library" if source is None else source.terms
    try:
        result = job()
    except InertiaIdError as e:
        e.findings = in_terms(e.findings, terms)
        raise
    if not isinstance(result, JobResult) or not result.findings:
        return result
    rendered = in_terms(result.findings, terms)
    fixes = {(f.kind, f.subject, f.message): r.fix for f, r in zip(result.findings, rendered)}
    document = dict(result.document)
    if isinstance(document.get("findings"), list):
        document["findings"] = [_with_fix(d, fixes) for d in document["findings"]]
    return replace(result, findings=rendered, document=document)


def _with_fix(entry: dict[str, Any], fixes: dict[tuple[str, str, str], str]) -> dict[str, Any]:
    """A finding's JSON ``entry`` with its fix from ``fixes`` (by kind, subject, message)."""
    fix = fixes.get((entry.get("kind", ""), entry.get("subject", ""), entry.get("message", "")))
    return entry if not fix else {**entry, "fix": fix}


@contextmanager
def carrying(findings: list[Finding]) -> Iterator[None]:
    """Within: a package error raised (a caller's mistake, no estimate) carries the
    ``findings`` found so far (the list as it is then, before the error's own), so that they
    are reported before it."""
    try:
        yield
    except InertiaIdError as e:
        e.findings = (*findings, *e.findings)
        raise


def load_urdf(urdf: str) -> pin.Model:
    """The model of the URDF file ``urdf``; a missing or bad file is an :class:`InputError`."""
    from inertia_id_ros.core.robots import load_model

    try:
        return load_model(urdf)
    except (FileNotFoundError, ValueError) as e:
        raise InputError(str(e)) from None


def check_bounding_ellipsoid(method: str, bounding_ellipsoid: bool) -> None:
    """Refuse ``bounding_ellipsoid`` with a ``method`` that cannot take it (:class:`InputError`)."""
    from inertia_id_ros.options import NO_ELLIPSOID_METHODS

    if bounding_ellipsoid and method in NO_ELLIPSOID_METHODS:
        raise InputError(
            "--bounding-ellipsoid needs --method lmi, pointmass or cad_prior "
            "(manifold cannot take bounding ellipsoids)"
        )


def check_payload_volume(sphere: float | None, box: Sequence[float] | None) -> None:
    """Refuse a payload ``sphere`` radius (m) or ``box`` half-extents (3,) (m) not > 0
    (:class:`InputError`)."""
    if sphere is not None and not sphere > 0:
        raise InputError(f"--payload-sphere must be > 0 m, got {sphere}")
    if box is not None and (len(box) != 3 or not all(v > 0 for v in box)):
        raise InputError(
            "--payload-box must be three half-extents > 0 m, got " + ",".join(f"{v:g}" for v in box)
        )


def payload_volume_of(sphere: float | None, box: Sequence[float] | None) -> Volume:
    """The payload's bounding volume: within ``box`` (half-extents (3,) m along its frame's
    axes) when given, else within ``sphere`` m of its frame's origin (default
    :func:`~inertia_id_ros.offline.volumes.payload_volume`'s sphere); checked by
    :func:`check_payload_volume`."""
    from inertia_id_ros.offline.volumes import payload_volume

    check_payload_volume(sphere, box)
    if box is None:
        return payload_volume(radius=sphere)
    return payload_volume(half_extents=box)
