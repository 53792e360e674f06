"""Every exception the package raises on purpose: one base, :class:`InertiaIdError`, so a caller
can catch the package's errors apart from bugs; under it, :class:`CallerError` for the caller's
mistakes (bad files, names, options). Each also derives from the built-in exception it
refines (``ValueError`` for bad input, ``RuntimeError`` for a failure at run time, ``KeyError``
for a missing name), so ``except ValueError`` keeps working."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from inertia_id_ros.findings import Finding


class InertiaIdError(Exception):
    """Base of the package's exceptions. ``findings``: what an offline job had found when it
    raised (warnings, notes; :func:`inertia_id_ros.jobs.base.carrying`), which ``inertia-id``
    prints before the error."""

    findings: tuple[Finding, ...] = ()


class CallerError(InertiaIdError):
    """The caller's input is wrong (a file, a name, an option, a configuration): the message
    says what in one line. ``inertia-id`` prints it and exits 2."""


# ---- inputs ----------------------------------------------------------------------------


class SampleRejected(InertiaIdError, ValueError):
    """An input sample was rejected; ``reason`` is a short machine-readable code.

    See :meth:`~inertia_id_ros.online.inputs.JointStateValidator.validate` and
    :meth:`~inertia_id_ros.online.payload_estimator.PayloadEstimator.add_wrench`.
    """

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        self.message = message
        super().__init__(f"{reason}: {message}")


# ---- estimates -------------------------------------------------------------------------


class EstimateUnavailable(InertiaIdError, RuntimeError):
    """No estimate can be given now; ``reason``: ``"too_few_samples"``,
    ``"offset_not_identifiable"``, ``"solver_failed"``, ``"invalid_problem"`` (the problem
    built from the data cannot be solved as posed) or ``"inconsistent"``."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        self.message = message
        super().__init__(f"{reason}: {message}")


DATA_LIMITED = ("too_few_samples", "offset_not_identifiable")
"""Reasons of :class:`EstimateUnavailable` that mean the data cannot determine the estimate."""


# ---- models and configuration ----------------------------------------------------------


class FrameNotFound(CallerError, KeyError):
    """A frame name is not in the model; ``available`` lists the model's frame names."""

    def __init__(self, name: str, available: Sequence[str]) -> None:
        self.name = name
        self.available = tuple(available)
        super().__init__(name)

    def __str__(self) -> str:
        return (
            f"frame {self.name!r} is not in the model; available frames: "
            f"{', '.join(self.available)}"
        )


class JointNotFound(CallerError, KeyError):
    """A joint name is not in the model; ``available`` lists the model's joint names."""

    def __init__(self, names: Sequence[str], available: Sequence[str]) -> None:
        self.names = tuple(names)
        self.available = tuple(available)
        super().__init__(self.names)

    def __str__(self) -> str:
        return (
            f"joint(s) {', '.join(map(repr, self.names))} not in the model; available joints: "
            f"{', '.join(self.available)}"
        )


class ConfigError(CallerError, ValueError):
    """A chain or actuator configuration, a prior, or a workspace or environment file is invalid
    (names the offending key)."""


# ---- solvers ---------------------------------------------------------------------------


class ProblemError(CallerError, ValueError):
    """The problem, the method name or an option is invalid (the caller's error)."""


class SolverError(InertiaIdError, RuntimeError):
    """A numerical back end failed; the original exception is chained as ``__cause__``."""


# ---- files and command line ------------------------------------------------------------


class DataError(CallerError, ValueError):
    """A recorded-data file is unusable; the message is one line naming the file and the problem."""


class TrajectoryError(InertiaIdError, ValueError):
    """A joint trajectory is invalid (shapes, stamps, joints) or is used outside its span."""


class ExportError(CallerError, ValueError):
    """The body cannot be exported as asked; the message is one line."""


class KeystoreError(CallerError, ValueError):
    """A DDS-Security keystore cannot be created as asked (the directory holds one already, an
    enclave name is invalid); the message names the path or the name."""


class InputError(CallerError):
    """Bad input: the message is the one line printed on stderr."""


# ---- the node --------------------------------------------------------------------------


class StartupError(InertiaIdError, RuntimeError):
    """A start-up parameter is invalid; the message names it."""


class ExcitationRefused(InertiaIdError, RuntimeError):
    """An excitation cannot start (or go on); ``reason`` is a short machine-readable code
    (``busy``, ``stale_joint_states``, ``missing_joints``, ``far_from_start``, ...), the message
    says why in words."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message
