"""Tests of inertia_id_ros.solvers on synthetic pinocchio problems.

Payload: rows ``[pin.bodyRegressor(v, a_g), 1_6]`` (10 + 6 F/T offset parameters). Arm: the
Panda's joint-torque regressor (fingers locked: 7 bodies, 70 parameters).

The properties every method must have are parametrized over the registry (``METHODS``, and its
constrained and ellipsoid-taking subsets): a newly registered method is tested without an edit
here. Tests of one named method (its back ends, its own options) name it.
"""

from __future__ import annotations

import functools
import glob
import inspect
import sys

import numpy as np
import pinocchio as pin
import pytest

from inertia_id_ros.core.inertia import (
    PSEUDO_INERTIA_BASIS,
    check_consistency,
    pseudo_inertia,
    theta_from_inertia,
)
from inertia_id_ros.errors import ProblemError
from inertia_id_ros.options import NO_ELLIPSOID_METHODS
from inertia_id_ros.solvers import (
    METHODS,
    Problem,
    Solution,
    check_options,
    ellipsoid_matrix,
    feasibility,
    lmi,
    solve,
)
from inertia_id_ros.solvers._linalg import cholesky, cholesky_solve
from inertia_id_ros.solvers._lmi_active_set import solve_newton_kkt
from inertia_id_ros.solvers._lmi_fast import ConeProblem, solve_cone_qp
from inertia_id_ros.solvers.lmi import build_cvxpy_model, cached_cvxpy_model
from inertia_id_ros.solvers.problem import body_min_eigs
from inertia_id_ros.solvers.registry import UNCONSTRAINED_METHODS

GRAVITY = 9.81
PAYLOAD_THETA = theta_from_inertia(1.3, np.array([0.02, -0.01, 0.05]), np.diag([4e-3, 5e-3, 3e-3]))
PAYLOAD_OFFSET = np.array([0.5, -0.3, 1.0, 0.02, 0.01, -0.03])
PRIOR = np.concatenate([PAYLOAD_THETA * 1.2, np.zeros(6)])
"""A payload prior 20 % off the truth, no offset (the prior that ``cad_prior`` requires)."""
CONSTRAINED = [method for method in METHODS if method not in UNCONSTRAINED_METHODS]
"""The registered methods that return consistent bodies."""
ELLIPSOID_METHODS = [method for method in CONSTRAINED if method not in NO_ELLIPSOID_METHODS]
"""The registered methods that keep each body inside its bounding ellipsoid."""
BACKENDS = {"lmi_cvxpy": ("lmi", {"backend": "cvxpy"})}
"""Second back ends of registered methods (id -> method, options), tested beside them."""


def method_cases(methods: list[str]) -> list:
    """``(method, options)`` parameters: each of ``methods`` with its defaults, and the second
    back ends (:data:`BACKENDS`) of those among them."""
    return [pytest.param(method, {}, id=method) for method in methods] + [
        pytest.param(method, options, id=name)
        for name, (method, options) in BACKENDS.items()
        if method in methods
    ]


def payload_rows(n: int, seed: int, planar: bool = False) -> np.ndarray:
    """(6n, 16) rows for random twists and proper accelerations (gravity of random direction;
    ``planar``: motion in the x-y plane, rotation about z only, gravity along z: rank-deficient)."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        v, a = rng.normal(size=6), 3.0 * rng.normal(size=6)
        if planar:
            v[[2, 3, 4]] = 0.0
            a[[2, 3, 4]] = 0.0
            a[2] += GRAVITY
        else:
            direction = rng.normal(size=3)
            a[:3] += GRAVITY * direction / np.linalg.norm(direction)
        rows.append(np.hstack([pin.bodyRegressor(pin.Motion(v), pin.Motion(a)), np.eye(6)]))
    return np.vstack(rows)


def payload_problem(
    noise: float = 0.0,
    n: int = 100,
    seed: int = 0,
    planar: bool = False,
    theta: np.ndarray = PAYLOAD_THETA,
    **kwargs,
) -> tuple[Problem, np.ndarray]:
    Y = payload_rows(n, seed, planar)
    truth = np.concatenate([theta, PAYLOAD_OFFSET])
    y = Y @ truth + noise * np.random.default_rng(seed + 1000).normal(size=Y.shape[0])
    return Problem.from_regressor(Y, y, n_bodies=1, **kwargs), truth


@functools.lru_cache(maxsize=1)
def panda_model() -> pin.Model:
    candidates = [
        path
        for entry in sys.path
        for path in glob.glob(
            f"{entry}/cmeel.prefix/share/example-robot-data/robots/panda_description/urdf/panda.urdf"
        )
    ]
    if not candidates:
        pytest.skip("example-robot-data's panda.urdf not found")
    model = pin.buildModelFromUrdf(candidates[0])
    fingers = [model.getJointId(name) for name in model.names if "finger" in name]
    return pin.buildReducedModel(model, fingers, pin.neutral(model))


@functools.lru_cache(maxsize=8)
def panda_data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    model = panda_model()
    data = model.createData()
    rng = np.random.default_rng(seed)
    pin.seed(seed)  # pin.randomConfiguration draws from its own generator, not numpy's
    truth = np.concatenate(
        [model.inertias[j].toDynamicParameters() for j in range(1, model.njoints)]
    )
    rows = [
        pin.computeJointTorqueRegressor(
            model,
            data,
            pin.randomConfiguration(model),
            rng.normal(size=model.nv),
            2.0 * rng.normal(size=model.nv),
        ).copy()
        for _ in range(n)
    ]
    return np.vstack(rows), truth


def panda_problem(
    noise: float = 0.0, n: int = 100, seed: int = 0, **kwargs
) -> tuple[Problem, np.ndarray]:
    Y, truth = panda_data(n, seed)
    y = Y @ truth + noise * np.random.default_rng(seed + 1000).normal(size=Y.shape[0])
    return Problem.from_regressor(Y, y, n_bodies=7, **kwargs), truth


def relative_error(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def assert_consistent(solution: Solution) -> None:
    reports = [check_consistency(theta) for theta in solution.bodies]
    assert all(reports), [r.problems for r in reports]
    assert solution.fully_consistent
    np.testing.assert_allclose(solution.min_eigs, [r.min_pseudo_inertia_eig for r in reports])


# ---- Problem / Solution ----------------------------------------------------------------------


def test_problem_from_regressor_matches_normal_equations_and_merges():
    Y = payload_rows(20, 1)
    y = np.random.default_rng(2).normal(size=Y.shape[0])
    problem = Problem.from_regressor(Y, y, n_bodies=1)
    np.testing.assert_allclose(problem.gram, Y.T @ Y)
    np.testing.assert_allclose(problem.moment, Y.T @ y)
    assert problem.yty == pytest.approx(y @ y) and problem.n_rows == Y.shape[0]
    half = Problem.from_regressor(Y[:60], y[:60], n_bodies=1)
    for merged in (
        half.add_rows(Y[60:], y[60:]),
        half + Problem.from_regressor(Y[60:], y[60:], n_bodies=1),
    ):
        np.testing.assert_allclose(merged.gram, problem.gram, atol=1e-9)
        np.testing.assert_allclose(merged.moment, problem.moment, atol=1e-9)
        assert merged.n_rows == problem.n_rows
    back = problem.remove_rows(Y[60:], y[60:])
    np.testing.assert_allclose(back.gram, half.gram, atol=1e-9)
    x = np.random.default_rng(3).normal(size=16)
    assert problem.residual_rms(x) == pytest.approx(np.sqrt(np.mean((Y @ x - y) ** 2)), rel=1e-9)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(gram=np.eye(3), moment=np.zeros(2), yty=0.0, n_rows=1, n_bodies=0), "moment"),
        (dict(gram=np.ones((3, 4)), moment=np.zeros(3), yty=0.0, n_rows=1, n_bodies=0), "gram"),
        (dict(gram=np.eye(5), moment=np.zeros(5), yty=0.0, n_rows=1, n_bodies=1), "n_bodies"),
        (
            dict(
                gram=np.eye(10),
                moment=np.zeros(10),
                yty=0.0,
                n_rows=1,
                n_bodies=1,
                prior=np.zeros(9),
            ),
            "prior",
        ),
        (
            dict(
                gram=np.eye(10),
                moment=np.zeros(10),
                yty=0.0,
                n_rows=1,
                n_bodies=1,
                prior_weight=1.0,
            ),
            "prior_weight",
        ),
        (
            dict(
                gram=np.eye(10),
                moment=np.zeros(10),
                yty=0.0,
                n_rows=1,
                n_bodies=1,
                prior=np.zeros(10),
                prior_weight=np.ones(4),
            ),
            "prior_weight",
        ),
        (
            dict(
                gram=np.eye(10),
                moment=np.zeros(10),
                yty=0.0,
                n_rows=1,
                n_bodies=1,
                nonnegative=(10,),
            ),
            "nonnegative",
        ),
        (
            dict(
                gram=np.eye(10),
                moment=np.zeros(10),
                yty=0.0,
                n_rows=1,
                n_bodies=1,
                bounding_ellipsoids=[np.eye(3)],
            ),
            "bounding_ellipsoids[0]",
        ),
        (
            dict(gram=np.eye(10), moment=np.full(10, np.nan), yty=0.0, n_rows=1, n_bodies=1),
            "moment",
        ),
    ],
)
def test_problem_rejects_bad_shapes_naming_the_array(kwargs, name):
    with pytest.raises(ProblemError, match=name.replace("[", r"\[").replace("]", r"\]")):
        Problem(**kwargs)


def test_from_regressor_rejects_mismatched_rows():
    with pytest.raises(ProblemError, match="y has 5 rows but Y has 6"):
        Problem.from_regressor(np.zeros((6, 16)), np.zeros(5), n_bodies=1)


def test_solve_rejects_unknown_method_option_backend_and_bad_initvals():
    problem, _ = payload_problem(n=10)
    with pytest.raises(ProblemError, match="unknown method"):
        solve(problem, "nope")
    with pytest.raises(ProblemError, match="unexpected keyword"):
        solve(problem, "lmi", not_an_option=1)
    with pytest.raises(ProblemError, match="unknown backend"):
        solve(problem, "lmi", backend="nope")
    with pytest.raises(ProblemError, match="initvals"):
        solve(problem, "lmi", initvals=np.zeros(3))
    with pytest.raises(ProblemError, match="prior"):
        solve(problem, "cad_prior")


# ---- every method: consistency on well and badly excited problems ----------------------------


PAYLOAD_CASES = {
    "well_excited": dict(noise=0.05),
    "heavy_noise": dict(noise=30.0, n=30),
    "planar": dict(noise=0.5, planar=True),
}


@pytest.mark.parametrize("case", sorted(PAYLOAD_CASES))
@pytest.mark.parametrize("method, options", method_cases(CONSTRAINED))
def test_constrained_methods_return_consistent_bodies(method, options, case):
    problem, truth = payload_problem(**PAYLOAD_CASES[case], prior=PRIOR)
    solution = solve(problem, method, **options)
    assert solution.method == method and solution.found, solution.status
    assert_consistent(solution)
    assert solution.solve_time > 0 and np.isfinite(solution.objective)
    assert solution.residual_rms == pytest.approx(problem.residual_rms(solution.x))


def test_heavy_noise_makes_ols_inconsistent_but_found():
    problem, _ = payload_problem(**PAYLOAD_CASES["heavy_noise"])
    solution = solve(problem, "ols")
    assert solution.found and not solution.fully_consistent
    assert solution.min_eigs[0] < 0


@pytest.mark.parametrize("method", list(METHODS))
def test_well_excited_payload_recovers_truth_consistent(method):
    """Every method, ols too: a well-excited payload with little noise comes out fully
    consistent, its parameters and offset close to the truth."""
    problem, truth = payload_problem(
        noise=0.01,
        n=200,
        prior=np.concatenate([PAYLOAD_THETA * 1.1, PAYLOAD_OFFSET]),
        prior_weight=0.0,
    )
    options = dict(points_per_axis=5) if method == "pointmass" else {}
    solution = solve(problem, method, **options)
    assert solution.method == method and solution.found, solution.status
    assert_consistent(solution)
    tolerance = 2e-2 if method == "pointmass" else 1e-3  # grid: mass only at the points
    assert relative_error(solution.bodies[0], truth[:10]) < tolerance
    np.testing.assert_allclose(solution.extras, PAYLOAD_OFFSET, atol=5e-3)


def test_methods_agree_on_well_excited_noisy_payload():
    problem, truth = payload_problem(noise=1.0, n=200)
    reference = solve(problem, "lmi", backend="cvxpy")
    for method in ("lmi", "manifold"):
        assert relative_error(solve(problem, method).x, reference.x) < 1e-5, method
    assert relative_error(solve(problem, "pointmass").x, reference.x) < 5e-2


@pytest.mark.parametrize("method", CONSTRAINED)
def test_panda_all_methods_consistent_without_prior_rank_deficient(method):
    problem, truth = panda_problem(noise=0.3, n=40, prior=truth_prior(), prior_weight=0.0)
    options = dict(points_per_axis=3) if method == "pointmass" else {}
    solution = solve(problem, method, **options)
    assert_consistent(solution)
    assert solution.x.shape == (70,)


def truth_prior() -> np.ndarray:
    _, truth = panda_data(40, 0)
    return truth * (1.0 + 0.2 * np.random.default_rng(5).normal(size=truth.size))


# ---- lmi: fast against the cvxpy reference ---------------------------------------------------


@pytest.mark.parametrize(
    "name, make, active",
    [
        ("payload_inactive", lambda: payload_problem(noise=0.0, n=100), False),
        ("payload_active", lambda: payload_problem(noise=2.0, n=100), True),
        (
            "panda_inactive",
            lambda: panda_problem(noise=0.0, n=60, prior=panda_data(60, 0)[1], prior_weight=10.0),
            False,
        ),
        (
            "panda_active",
            lambda: panda_problem(noise=1.0, n=60, prior=truth_prior(), prior_weight=10.0),
            True,
        ),
    ],
)
@pytest.mark.parametrize("use_active_set", [True, False])
def test_lmi_fast_matches_cvxpy_reference(name, make, active, use_active_set):
    problem, _ = make()
    fast = solve(problem, "lmi", use_active_set=use_active_set)
    reference = solve(problem, "lmi", backend="cvxpy")
    assert fast.found and reference.found, (fast.status, reference.status)
    assert fast.info["active"] is active
    if active:
        assert fast.info["algorithm"] == ("active_set" if use_active_set else "interior_point")
    assert relative_error(fast.x, reference.x) < 1e-6
    assert fast.objective <= reference.objective * (1 + 1e-9) + 1e-12
    if active:
        assert solve(problem, "ols").min_eigs.min() < 0
        assert fast.min_eigs.min() < 1e-6


def test_lmi_cvxpy_model_is_dpp_cached_and_matches_per_solve_build():
    problem, _ = payload_problem(noise=2.0, n=50)
    model = cached_cvxpy_model(problem)
    assert model.problem.is_dpp()
    assert cached_cvxpy_model(problem) is model
    assert build_cvxpy_model(problem).problem.is_dpp()
    cached = solve(problem, "lmi", backend="cvxpy")
    fresh = solve(problem, "lmi", backend="cvxpy_per_solve")
    assert cached.info["is_dpp"]
    assert relative_error(cached.x, fresh.x) < 1e-6


def test_lmi_unconstrained_optimum_returned_without_iterations():
    problem, truth = payload_problem(noise=0.0, n=50)
    solution = solve(problem, "lmi")
    assert solution.iterations == 0 and not solution.info["active"]
    np.testing.assert_allclose(solution.x, truth, rtol=1e-8, atol=1e-10)


# ---- warm start -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method, options",
    [
        ("lmi", {}),  # the semismooth Newton method
        ("lmi", dict(use_active_set=False)),  # the interior point
        ("manifold", {}),
        ("pointmass", {}),
    ],
)
def test_warm_start_reduces_iterations(method, options):
    problem, _ = payload_problem(noise=2.0, n=100, seed=3)
    previous = solve(problem, method, **options)
    new_rows = payload_rows(3, 42)
    updated = problem.add_rows(new_rows, new_rows @ np.concatenate([PAYLOAD_THETA, PAYLOAD_OFFSET]))
    cold = solve(updated, method, **options)
    warm = solve(updated, method, initvals=previous, **options)
    assert warm.found and cold.found
    assert warm.iterations < cold.iterations, (warm.iterations, cold.iterations)
    tolerance = 5e-3 if method == "pointmass" else 1e-5
    assert relative_error(warm.x, cold.x) < tolerance
    assert_consistent(warm)


@pytest.mark.parametrize("method", list(METHODS))
def test_every_method_takes_a_warm_start_and_refuses_a_misshapen_one(method):
    """Warm-started from the previous window's solution or from its ``x`` (what the online
    estimators pass), every method gives the cold start's answer on the updated problem; an
    ``initvals`` of the wrong size is a ProblemError naming it."""
    problem, truth = payload_problem(noise=2.0, n=60, seed=3, prior=PRIOR)
    previous = solve(problem, method)
    new_rows = payload_rows(3, 42)
    updated = problem.add_rows(new_rows, new_rows @ truth)
    cold = solve(updated, method)
    tolerance = 5e-3 if method == "pointmass" else 1e-5  # grid: where the refinement stops
    for initvals in (previous, previous.x):
        warm = solve(updated, method, initvals=initvals)
        assert warm.found and warm.method == method, warm.status
        assert relative_error(warm.x, cold.x) < tolerance
        assert warm.fully_consistent or method in UNCONSTRAINED_METHODS
    with pytest.raises(ProblemError, match="initvals"):
        solve(updated, method, initvals=np.zeros(3))


def test_lmi_newton_warm_start_on_the_arm_and_from_a_poor_guess():
    problem, _ = panda_problem(noise=1.0, n=60, prior=truth_prior(), prior_weight=10.0)
    previous = solve(problem, "lmi")
    Y, truth = panda_data(63, 0)
    updated = problem.add_rows(Y[-21:], Y[-21:] @ truth)  # 3 more samples
    cold = solve(updated, "lmi")
    warm = solve(updated, "lmi", initvals=previous)
    assert cold.info["algorithm"] == warm.info["algorithm"] == "active_set"
    assert warm.iterations < cold.iterations, (warm.iterations, cold.iterations)
    assert relative_error(warm.x, cold.x) < 1e-8
    # a useless warm start: the Newton method restarts from the unconstrained minimiser
    guess = solve(updated, "lmi", initvals=np.random.default_rng(0).normal(size=70))
    assert guess.found and relative_error(guess.x, cold.x) < 1e-8
    assert_consistent(guess)


# ---- the fast back end's building blocks ------------------------------------------------------


def random_cone_qp(n_bodies: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(P, q)`` of a well-conditioned reduced problem whose unconstrained minimiser
    (a noisy 1 kg point mass per body) violates every body's LMI."""
    rng = np.random.default_rng(seed)
    d = 10 * n_bodies
    A = rng.normal(size=(3 * d, d))
    P = A.T @ A / (3 * d) + 0.1 * np.eye(d)
    point = theta_from_inertia(1.0, np.array([0.1, 0.0, 0.0]), np.zeros((3, 3)))
    target = np.tile(point, n_bodies) + 0.05 * rng.normal(size=d)
    return P, P @ target


@pytest.mark.parametrize("n_bodies", [1, 3])
def test_newton_kkt_certificate_and_agreement_with_interior_point(n_bodies):
    P, q = random_cone_qp(n_bodies, seed=n_bodies)
    z_unconstrained = np.linalg.solve(P, q)
    assert body_min_eigs(z_unconstrained, n_bodies).max() < 0  # every LMI active
    result = solve_newton_kkt(P, q, z_unconstrained, n_bodies, tol=1e-12, floor=1e-9)
    assert result is not None and result.iterations <= 10
    z, Z = result.z, result.block_duals
    J = np.tensordot(z.reshape(n_bodies, 10), PSEUDO_INERTIA_BASIS, axes=1)
    assert body_min_eigs(z, n_bodies).min() >= 1e-9  # floor raised by the method itself
    assert np.linalg.eigvalsh(Z).min() >= -1e-12 * np.abs(Z).max()
    assert np.abs(J @ Z).max() <= 1e-8 * np.abs(J).max() * np.abs(Z).max()  # complementarity
    adjoint = np.einsum("iab,kab->ki", PSEUDO_INERTIA_BASIS, Z).ravel()
    assert np.linalg.norm(P @ z - q - adjoint) <= 1e-7 * np.linalg.norm(q)  # stationarity
    cone = ConeProblem(P=P, q=q, n_blocks=n_bodies, rows=np.zeros((0, 10 * n_bodies)))
    ip = solve_cone_qp(
        cone,
        z_unconstrained,
        None,
        None,
        z_unconstrained=z_unconstrained,
        tol=1e-12,
        max_iterations=60,
        warm=False,
    )
    assert ip.converged
    assert relative_error(z, ip.z) < 1e-7
    assert solve_newton_kkt(P, q, z_unconstrained, n_bodies, tol=1e-12, max_iterations=1) is None


def test_newton_kkt_with_bounded_extras_certificate_and_agreement_with_interior_point():
    """Two bodies and four bounded extras ``z[20:] >= 0``, two of them negative unconstrained."""
    n_bodies, m = 2, 4
    P_bodies, q_bodies = random_cone_qp(n_bodies, seed=7)
    rng = np.random.default_rng(7)
    d = 10 * n_bodies + m
    A = rng.normal(size=(3 * d, d))
    P = A.T @ A / (3 * d) + 0.1 * np.eye(d)
    P[:20, :20] += P_bodies
    target = np.concatenate([np.linalg.solve(P_bodies, q_bodies), [0.5, -0.3, 0.2, -0.1]])
    q = P @ target
    z_unconstrained = np.linalg.solve(P, q)
    assert body_min_eigs(z_unconstrained, n_bodies).max() < 0
    assert (z_unconstrained[20:] < 0).sum() >= 1
    result = solve_newton_kkt(P, q, z_unconstrained, n_bodies, tol=1e-12, floor=1e-9)
    assert result is not None
    z, Z, u = result.z, result.block_duals, result.row_duals
    assert body_min_eigs(z, n_bodies).min() >= 1e-9 and z[20:].min() >= 0.0
    assert u.shape == (m,) and u.min() >= 0.0 and np.all(u * z[20:] == 0.0)  # complementarity
    assert np.any(u > 0)  # a bound is active
    adjoint = np.concatenate([np.einsum("iab,kab->ki", PSEUDO_INERTIA_BASIS, Z).ravel(), u])
    assert np.linalg.norm(P @ z - q - adjoint) <= 1e-7 * np.linalg.norm(q)  # stationarity
    rows = np.zeros((m, d))
    rows[:, 20:] = np.eye(m)
    cone = ConeProblem(P=P, q=q, n_blocks=n_bodies, rows=rows)
    ip = solve_cone_qp(
        cone,
        z_unconstrained,
        None,
        None,
        z_unconstrained=z_unconstrained,
        tol=1e-12,
        max_iterations=60,
        warm=False,
    )
    assert ip.converged
    assert relative_error(z, ip.z) < 1e-7


def test_lmi_falls_back_to_interior_point_when_newton_gives_up(monkeypatch):
    problem, _ = payload_problem(noise=2.0, n=100)
    newton = solve(problem, "lmi")
    monkeypatch.setattr(lmi, "solve_newton_kkt", lambda *args, **kwargs: None)
    fallback = solve(problem, "lmi")
    assert newton.info["algorithm"] == "active_set"
    assert fallback.info["algorithm"] == "interior_point" and fallback.found
    assert relative_error(fallback.x, newton.x) < 1e-6
    assert_consistent(fallback)


def test_cholesky_helpers():
    A = np.random.default_rng(1).normal(size=(6, 6))
    matrix = A @ A.T + np.eye(6)
    rhs = np.arange(12.0).reshape(6, 2)
    np.testing.assert_allclose(cholesky_solve(cholesky(matrix), rhs), np.linalg.solve(matrix, rhs))
    assert cholesky(-matrix) is None


@pytest.mark.parametrize("use_active_set", [True, False])
def test_lmi_fast_with_some_nonnegative_extras_matches_cvxpy(use_active_set):
    # constrained entries (bodies, 11, 15; true values < 0) interleaved with free ones
    problem, _ = payload_problem(noise=0.5, n=60, nonnegative=(15, 11))
    fast = solve(problem, "lmi", use_active_set=use_active_set)
    reference = solve(problem, "lmi", backend="cvxpy")
    assert fast.info["algorithm"] == ("active_set" if use_active_set else "interior_point")
    assert relative_error(fast.x, reference.x) < 1e-6
    assert fast.x[11] == pytest.approx(0.0, abs=1e-9) and fast.x[15] >= 0


# ---- special bodies and constraints --------------------------------------------------------


@pytest.mark.parametrize("method", CONSTRAINED)
def test_massless_body_does_not_break(method):
    problem, truth = payload_problem(
        noise=0.05, n=60, theta=np.zeros(10), prior=np.concatenate([np.zeros(10), PAYLOAD_OFFSET])
    )
    solution = solve(problem, method)
    assert np.all(np.isfinite(solution.x))
    assert_consistent(solution)
    assert solution.bodies[0, 0] < 0.05  # kg: noise level
    np.testing.assert_allclose(solution.extras, PAYLOAD_OFFSET, atol=0.05)


def test_manifold_capped_run_is_still_consistent():
    problem, _ = payload_problem(noise=5.0, n=60)
    solution = solve(problem, "manifold", max_iterations=2)
    assert solution.iterations == 2 and not solution.found
    assert_consistent(solution)


@pytest.mark.parametrize("method, options", method_cases(ELLIPSOID_METHODS))
def test_bounding_ellipsoid_respected(method, options):
    # a sphere of radius 5 cm about the origin: the payload's COM (5.5 cm away) is outside
    sphere = ellipsoid_matrix(np.zeros(3), np.full(3, 0.05))
    problem, _ = payload_problem(
        noise=0.1,
        n=80,
        bounding_ellipsoids=[sphere],
        prior=np.concatenate([PAYLOAD_THETA, np.zeros(6)]),
    )
    assert np.trace(problem.bounding_ellipsoids[0] @ pseudo_inertia(PAYLOAD_THETA)) < 0
    options = (
        dict(options, boxes=[(-0.03 * np.ones(3), 0.03 * np.ones(3))])
        if method == "pointmass"
        else options
    )
    solution = solve(problem, method, **options)
    assert_consistent(solution)
    assert np.trace(sphere @ pseudo_inertia(solution.bodies[0])) >= -1e-8
    if method == "lmi" and not options:  # ellipsoid rows: the interior point, not the Newton
        assert solution.info["algorithm"] == "interior_point"


@pytest.mark.parametrize("method", NO_ELLIPSOID_METHODS)
def test_methods_without_ellipsoids_reject_them(method):
    sphere = ellipsoid_matrix(np.zeros(3), np.full(3, 0.05))
    problem, _ = payload_problem(n=10, bounding_ellipsoids=[sphere], prior=PRIOR)
    with pytest.raises(ProblemError, match="ellipsoid"):
        solve(problem, method)


@pytest.mark.parametrize("method, options", method_cases(CONSTRAINED))
def test_nonnegative_extras_respected(method, options):
    # the true offset has negative entries 11 and 15: constrain 10..15 to be >= 0
    problem, _ = payload_problem(
        noise=0.1,
        n=60,
        nonnegative=tuple(range(10, 16)),
        prior=np.concatenate([PAYLOAD_THETA, np.zeros(6)]),
    )
    solution = solve(problem, method, **options)
    assert np.all(solution.extras >= 0)
    assert solution.extras[1] == pytest.approx(0.0, abs=1e-6)
    assert_consistent(solution)


# ---- feasibility ------------------------------------------------------------------------------


def test_feasibility_check_and_closest_feasible():
    problem, _ = payload_problem(**PAYLOAD_CASES["heavy_noise"])
    estimate = solve(problem, "ols").x
    assert not feasibility.check(estimate, 1)[0]
    corrected = feasibility.closest_feasible(estimate, 1)
    assert feasibility.check(corrected, 1)[0]
    np.testing.assert_allclose(corrected[10:], estimate[10:], atol=1e-7)
    fast = feasibility.closest_feasible(estimate, 1, backend="fast")
    # the reference (cvxpy) is accurate to about 1e-6 in x here: the fast answer is as close to
    # the estimate as the reference's, or closer, and agrees with it within that accuracy
    assert np.sum((fast - estimate) ** 2) <= np.sum((corrected - estimate) ** 2) * (1 + 1e-9)
    assert relative_error(fast, corrected) < 1e-5
    with pytest.raises(ProblemError, match="metric"):
        feasibility.closest_feasible(estimate, 1, metric=np.ones(3))


# ---- the registry -----------------------------------------------------------------------------


def test_the_registry_holds_the_package_methods_and_its_subsets_name_registered_ones():
    """The package's methods are registered; the lists that select methods by what they can do
    name registered methods only (a misspelt name would drop a method from its tests)."""
    assert {"ols", "lmi", "manifold", "pointmass", "cad_prior"} <= set(METHODS)
    assert set(UNCONSTRAINED_METHODS) | set(NO_ELLIPSOID_METHODS) <= set(METHODS)
    assert {method for method, _ in BACKENDS.values()} <= set(METHODS)


@pytest.mark.parametrize("method", list(METHODS))
def test_every_method_has_the_registry_signature(method):
    """``f(problem, initvals=None, *, options with defaults)``: ``solve`` passes
    ``(problem, initvals, **options)``, ``check_options`` binds the options by name."""
    parameters = list(inspect.signature(METHODS[method]).parameters.values())
    assert [p.name for p in parameters[:2]] == ["problem", "initvals"]
    assert parameters[1].default is None
    options = parameters[2:]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in options), options
    assert all(p.default is not inspect.Parameter.empty for p in options), options


@pytest.mark.parametrize("method", list(METHODS))
def test_every_method_refuses_an_unknown_option_before_solving(method):
    assert check_options(method, {}) is METHODS[method]
    with pytest.raises(ProblemError, match=f"method '{method}'.*no_such_option"):
        check_options(method, {"no_such_option": 1})
    problem, _ = payload_problem(n=10, prior=PRIOR)
    with pytest.raises(ProblemError, match="no_such_option"):
        solve(problem, method, no_such_option=1)


def test_a_parameter_held_by_a_heavy_prior_leaves_the_others_to_the_data():
    """A prior weight 10^4 times the gram's largest diagonal entry on the mass (a reference held,
    e.g. a weighed mass) once made the data's small but genuine curvature look like a null space:
    the fast back end pulled four directions toward the prior and returned a wrong optimum (here
    2.1 off in x) as "solved". The rank is now decided on the Hessian scaled to a unit diagonal."""
    rng = np.random.default_rng(0)
    theta = pin.Inertia(1.3, np.array([0.02, -0.01, 0.05]), np.diag([0.01, 0.02, 0.015]))
    theta = theta.toDynamicParameters()
    Y = rng.normal(size=(400, 16)) * np.logspace(0, -4, 16)  # gram condition about 1e8
    x_true = np.concatenate([theta, rng.normal(size=6)])
    y = Y @ x_true + rng.normal(0.0, 1e-8, 400)
    gram = Y.T @ Y
    prior, weight = np.zeros(16), np.zeros(16)
    prior[0], weight[0] = theta[0], 1e4 * gram.diagonal().max()
    problem = Problem(
        gram=gram,
        moment=Y.T @ y,
        yty=float(y @ y),
        n_rows=400,
        n_bodies=1,
        prior=prior,
        prior_weight=weight,
    )
    # the optimum by QR of the stacked rows (the body near the true, consistent one: unconstrained)
    rows = np.vstack([Y, np.sqrt(weight[0]) * np.eye(16)[:1]])
    exact = np.linalg.lstsq(rows, np.concatenate([y, [np.sqrt(weight[0]) * theta[0]]]))[0]
    assert np.abs(exact - x_true).max() < 1e-4
    fast = lmi.solve_lmi(problem)
    assert fast.info["null_space_dim"] == 0
    assert np.abs(fast.x - exact).max() < 1e-8
