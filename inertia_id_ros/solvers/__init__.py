"""Solvers for inertial-parameter identification: one interface, one module per method.

``solve(problem, method="lmi", initvals=None, **options) -> Solution``; see :mod:`.problem` for the
problem's definition and :data:`METHODS` for the methods. Pure library (no rclpy).
"""

from inertia_id_ros.errors import ProblemError, SolverError
from inertia_id_ros.solvers.problem import CONSISTENCY_MARGIN, Problem, Solution, ellipsoid_matrix
from inertia_id_ros.solvers.registry import METHODS, check_options, ellipsoids_for, solve

__all__ = [
    "CONSISTENCY_MARGIN",
    "METHODS",
    "Problem",
    "ProblemError",
    "Solution",
    "SolverError",
    "check_options",
    "ellipsoid_matrix",
    "ellipsoids_for",
    "solve",
]
