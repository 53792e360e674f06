"""``solve`` and the registry ``METHODS`` (name -> ``solve_<name>(problem, initvals, **opts)``, a
:class:`SolveMethod`)."""

from __future__ import annotations

import inspect
from typing import Any, Protocol, TypeVar

import numpy as np

from inertia_id_ros.errors import ProblemError, SolverError
from inertia_id_ros.solvers.cad_prior import solve_cad_prior
from inertia_id_ros.solvers.lmi import solve_lmi
from inertia_id_ros.solvers.manifold import solve_manifold
from inertia_id_ros.solvers.ols import solve_ols
from inertia_id_ros.solvers.pointmass import solve_pointmass
from inertia_id_ros.solvers.problem import Problem, Solution


class SolveMethod(Protocol):
    """A method of :data:`METHODS`: ``f(problem, initvals=None, **options) -> Solution``,
    warm-started from ``initvals`` (a previous :class:`Solution` or ``x`` (p,)); its keyword
    ``options`` are its own (:func:`check_options` checks their names)."""

    def __call__(
        self, problem: Problem, initvals: Solution | np.ndarray | None = None, /
    ) -> Solution:
        """The solution of ``problem``."""


METHODS: dict[str, SolveMethod] = {
    "ols": solve_ols,
    "lmi": solve_lmi,
    "manifold": solve_manifold,
    "pointmass": solve_pointmass,
    "cad_prior": solve_cad_prior,
}
"""Available methods by name (:class:`SolveMethod`)."""


UNCONSTRAINED_METHODS = ("ols",)
"""Methods that take no constraint: a problem for them carries no bounding ellipsoids."""


Ellipsoids = TypeVar("Ellipsoids")


def ellipsoids_for(method: str, ellipsoids: Ellipsoids | None) -> Ellipsoids | None:
    """``ellipsoids`` (per body ``None`` or its 4x4 ``Q``) for a solve with ``method``: ``None``
    for an unconstrained method (:data:`UNCONSTRAINED_METHODS`)."""
    return None if method in UNCONSTRAINED_METHODS else ellipsoids


_SIGNATURES: dict[str, tuple[SolveMethod, inspect.Signature]] = {}
"""Each method's function and its signature, read once (an online solve checks its options at
every update)."""


def _signature(method: str, function: SolveMethod) -> inspect.Signature:
    """The signature of ``function``, the function of ``method`` (read again if it changed)."""
    kept = _SIGNATURES.get(method)
    if kept is None or kept[0] is not function:
        kept = _SIGNATURES[method] = (function, inspect.signature(function))
    return kept[1]


def check_options(method: str, options: dict[str, Any]) -> SolveMethod:
    """The function of ``method``; raises :class:`ProblemError` if the method is unknown or does
    not take ``options`` (names only: values are checked when solving)."""
    try:
        function = METHODS[method]
    except KeyError:
        raise ProblemError(f"unknown method {method!r}; available: {sorted(METHODS)}") from None
    try:
        _signature(method, function).bind(None, None, **options)
    except TypeError as e:
        raise ProblemError(f"method {method!r}: {e}") from e
    return function


def solve(
    problem: Problem,
    method: str = "lmi",
    initvals: Solution | np.ndarray | None = None,
    **options: Any,
) -> Solution:
    """Solve ``problem`` with ``method`` (a key of :data:`METHODS`), warm-started from
    ``initvals`` (a previous :class:`Solution` or ``x`` (p,)); ``options`` go to the method.

    Raises :class:`ProblemError` for an invalid problem, method or option, and
    :class:`SolverError` (chaining the cause) when the numerical back end fails.
    """
    if not isinstance(problem, Problem):
        raise ProblemError(f"problem must be a Problem, got {type(problem).__name__}")
    function = check_options(method, options)
    try:
        return function(problem, initvals, **options)
    except np.linalg.LinAlgError as e:
        raise SolverError(f"method {method!r}: linear algebra failed: {e}") from e
