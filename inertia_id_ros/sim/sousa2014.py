"""Sousa & Cortesão (2014), "Physical feasibility of robot base inertial parameter
identification: a linear matrix inequality approach" (IJRR 33(6)), their WAM experiment
reproduced in simulation.

Model: the 7-DOF WAM of :mod:`inertia_id_ros.sim.wam` (their DH table, approximate inertials), every
joint with viscous and Coulomb friction, a torque offset and drive inertia (reflected rotor
inertia): ``7 x 10 + 7 x 4 = 98`` standard parameters, of which the data determine the *base*
parameters ``beta = K x`` (:func:`~inertia_id_ros.chain.base_parameters.base_parameters`, pivoted QR
of the stacked regressor; ``K`` (b, 98) keeps the independent columns and folds the dependent ones
in).

Physical feasibility of a base estimate (their definition): some standard ``x`` with
``K x = beta`` has every link's pseudo-inertia ``J(theta_k) >= 0``, viscous, Coulomb and drive
inertia ``>= 0``, each link's COM in its box and the total mass within its bound (the experiment's
extra knowledge; COM box ``m lo <= m c <= m hi`` and ``sum m <= M`` are linear in ``x``). Their
three methods, on the identification data:

1. ``ols``: the least-squares base estimate ``beta = argmin ||Y_b beta - tau||``, then the
   *feasibility test*: the SDP "find ``x`` feasible with ``K x = beta``";
2. ``closest``: the closest feasible base parameters, ``argmin ||K x - beta_ols||`` over feasible
   ``x`` (Euclidean in the base parameters);
3. ``constrained``: feasibility-constrained OLS, ``argmin ||Y x - tau||`` over feasible ``x``.

Each is judged (Table 8 of the paper) by the relative error ``100 ||tau_j - tau_hat_j|| /
||tau_j||`` per joint on the identification trajectory and on a validation trajectory (another
seed). The SDPs are cvxpy problems (Clarabel) whose LMI and sign constraints are the package's
(:func:`inertia_id_ros.solvers.lmi.consistency_constraints`); the COM boxes, the mass bound and
the equality ``K x = beta`` are added here because :class:`~inertia_id_ros.solvers.Problem` has
no linear (in)equalities yet. Each estimate's links are checked with
:func:`inertia_id_ros.solvers.feasibility.check`.

Simulated (the paper's was a real arm): exact joint states, white torque noise
(:data:`DEFAULT_TORQUE_NOISE_STD`), exciting Fourier trajectories
(:func:`~inertia_id_ros.sim.wam.wam_trajectory`). The COM boxes are each link's box of
:data:`~inertia_id_ros.sim.wam.WAM_LINKS` (its geometric extent), the mass bound 110 % of the
true total.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from inertia_id_ros.chain.base_parameters import BaseParameters, base_parameters
from inertia_id_ros.chain.links import JointTorqueData, LinkModel, regression_system
from inertia_id_ros.sim.wam import WAM_LINKS, LinkInertial, wam_link_model, wam_simulator
from inertia_id_ros.solvers import feasibility
from inertia_id_ros.solvers.lmi import consistency_constraints

if TYPE_CHECKING:
    import cvxpy as cp

METHODS = ("ols", "closest", "constrained")
"""Sousa & Cortesão's three estimates, in table order."""
DEFAULT_TORQUE_NOISE_STD = (0.3, 0.3, 0.15, 0.15, 0.03, 0.03, 0.01)
"""Joint torque noise of the simulated WAM per joint (N·m): current-based torque estimates, about
2 % of each joint's torque range on these trajectories."""
DEFAULT_DURATION = 20.0
DEFAULT_RATE = 50.0
FEASIBILITY_TOLERANCE = 1e-7
"""Tolerance of the linear bounds and of ``lambda_min(J)`` when checking an estimate."""


@dataclass(frozen=True)
class PhysicalBounds:
    """Extra knowledge of the links: COM boxes ``com_lower``, ``com_upper`` (n, 3) (m, link
    frames) and the bound ``max_total_mass`` (kg) on the sum of the link masses."""

    com_lower: np.ndarray
    com_upper: np.ndarray
    max_total_mass: float

    @classmethod
    def from_links(
        cls, links: tuple[LinkInertial, ...], mass_margin: float = 0.1
    ) -> PhysicalBounds:
        """Each link's box (its COM +- half its size) and ``(1 + mass_margin)`` x the total."""
        com = np.array([link.com for link in links])
        half = 0.5 * np.array([link.size for link in links])
        total = sum(link.mass for link in links)
        return cls(com - half, com + half, (1.0 + mass_margin) * total)

    def constraints(self, x: cp.Expression, n_links: int) -> list[cp.Constraint]:
        """cvxpy constraints on the expression ``x``: ``m lo <= h <= m hi`` per link, ``sum m <=
        max_total_mass``."""
        out: list[cp.Constraint] = []
        masses: list[cp.Expression] = []
        for k in range(n_links):
            m, h = x[10 * k], x[10 * k + 1 : 10 * k + 4]
            out += [h >= m * self.com_lower[k], h <= m * self.com_upper[k]]
            masses.append(m)
        import cvxpy as cp

        out.append(cp.sum(cp.hstack(masses)) <= self.max_total_mass)
        return out

    def hold(self, x: np.ndarray, n_links: int, tol: float = FEASIBILITY_TOLERANCE) -> bool:
        """Whether ``x`` meets the COM boxes and the mass bound (within ``tol``)."""
        thetas = np.asarray(x)[: 10 * n_links].reshape(n_links, 10)
        m, h = thetas[:, :1], thetas[:, 1:4]
        return bool(
            np.all(h >= m * self.com_lower - tol)
            and np.all(h <= m * self.com_upper + tol)
            and thetas[:, 0].sum() <= self.max_total_mass + tol
        )


def base_matrix(base: BaseParameters) -> np.ndarray:
    """(b, p) ``K`` with ``base.from_standard(x) == K @ x``."""
    K = np.zeros((base.rank, len(base.names)))
    K[np.arange(base.rank), base.independent] = 1.0
    K[:, base.dependent] = base.combination
    return K


@dataclass(frozen=True)
class Estimate:
    """One method's estimate: ``x`` (p,) standard parameters (for ``ols`` the one with the
    dependent parameters zero), ``feasible`` (the base estimate is physically feasible) and the
    relative errors (%) per joint on the identification and validation data (n,)."""

    method: str
    x: np.ndarray
    feasible: bool
    identification_error: np.ndarray
    validation_error: np.ndarray


@dataclass(frozen=True)
class SousaResult:
    """The experiment: ``n_standard`` and ``n_base`` parameter counts, one :class:`Estimate`
    per method, the joints' names."""

    joint_names: tuple[str, ...]
    n_standard: int
    n_base: int
    estimates: dict[str, Estimate]


def relative_errors(model: LinkModel, x: np.ndarray, data: JointTorqueData) -> np.ndarray:
    """(n,) ``100 ||tau_j - tau_hat_j|| / ||tau_j||`` per joint (Table 8 of the paper)."""
    Y, y = regression_system(model, data)
    error = (Y @ x - y).reshape(-1, model.n_joints)
    measured = y.reshape(-1, model.n_joints)
    return 100.0 * np.linalg.norm(error, axis=0) / np.linalg.norm(measured, axis=0)


class FeasibleSet:
    """The SDPs over the physically feasible ``x`` of ``model`` (LMIs, signs, ``bounds``)."""

    def __init__(self, model: LinkModel, bounds: PhysicalBounds, solver: str = "CLARABEL"):
        import cvxpy as cp

        self.model, self.bounds, self.solver = model, bounds, solver
        self.x = cp.Variable(model.n_parameters, name="x")
        self.constraints = consistency_constraints(
            self.x, model.n_joints, {}, model.nonnegative
        ) + bounds.constraints(self.x, model.n_joints)

    def _solve(
        self, objective: cp.Minimize, extra: list[cp.Constraint]
    ) -> tuple[str, np.ndarray | None]:
        import cvxpy as cp

        problem = cp.Problem(objective, self.constraints + extra)
        try:
            problem.solve(solver=self.solver)
        except cp.error.SolverError:
            return "solver_error", None
        return problem.status, None if self.x.value is None else np.asarray(self.x.value)

    def contains_base(self, K: np.ndarray, beta: np.ndarray) -> bool:
        """Feasibility test: some feasible ``x`` has ``K x = beta``."""
        import cvxpy as cp

        status, _ = self._solve(cp.Minimize(0), [K @ self.x == beta])
        return status == cp.OPTIMAL

    def closest_base(self, K: np.ndarray, beta: np.ndarray) -> np.ndarray | None:
        """Feasible ``x`` minimising ``||K x - beta||`` (``None``: the solver found none)."""
        import cvxpy as cp

        return self._solve(cp.Minimize(cp.sum_squares(K @ self.x - beta)), [])[1]

    def least_squares(self, R: np.ndarray, z: np.ndarray) -> np.ndarray | None:
        """Feasible ``x`` minimising ``||R x - z||`` (``R`` a square-root factor of ``Y^T Y``;
        ``None``: the solver found none)."""
        import cvxpy as cp

        return self._solve(cp.Minimize(cp.sum_squares(R @ self.x - z)), [])[1]

    def holds(self, x: np.ndarray) -> bool:
        """``x`` meets every constraint (:func:`~inertia_id_ros.solvers.feasibility.check`, signs,
        bounds), within :data:`FEASIBILITY_TOLERANCE`."""
        n = self.model.n_joints
        links_ok = all(
            report.min_pseudo_inertia_eig >= -FEASIBILITY_TOLERANCE
            for report in feasibility.check(x, n)
        )
        signs_ok = all(x[i] >= -FEASIBILITY_TOLERANCE for i in self.model.nonnegative)
        return links_ok and signs_ok and self.bounds.hold(x, n)


def run(
    seed: int = 0,
    torque_noise_std: float | tuple[float, ...] = DEFAULT_TORQUE_NOISE_STD,
    duration: float = DEFAULT_DURATION,
    rate: float = DEFAULT_RATE,
) -> SousaResult:
    """The experiment: identification trajectory ``seed``, validation ``seed + 1``, ``duration``
    s at ``rate`` Hz each, torque noise ``torque_noise_std`` N·m (noise seeded by ``seed``)."""
    model = wam_link_model()
    rng = np.random.default_rng(seed)
    t = np.arange(int(round(duration * rate))) / rate
    identification = wam_simulator(seed, torque_noise_std, model).measure(t, rng)
    validation = wam_simulator(seed + 1, torque_noise_std, model).measure(t, rng)
    base = base_parameters(model, identification)
    K = base_matrix(base)
    Y, y = regression_system(model, identification)
    beta_ols = np.linalg.lstsq(Y[:, base.independent], y, rcond=None)[0]
    x_ols = np.zeros(model.n_parameters)
    x_ols[base.independent] = beta_ols
    feasible_set = FeasibleSet(model, PhysicalBounds.from_links(WAM_LINKS))
    Q, R = np.linalg.qr(Y)
    ols_feasible = feasible_set.contains_base(K, beta_ols)
    candidates: dict[str, np.ndarray | None] = {
        "ols": x_ols,
        "closest": feasible_set.closest_base(K, beta_ols),
        "constrained": feasible_set.least_squares(R, Q.T @ y),
    }
    estimates = {}
    for method in METHODS:
        x = candidates[method]
        if x is None:
            raise RuntimeError(f"the {method} SDP found no solution")
        feasible = ols_feasible if method == "ols" else feasible_set.holds(x)
        estimates[method] = Estimate(
            method,
            x,
            feasible,
            relative_errors(model, x, identification),
            relative_errors(model, x, validation),
        )
    return SousaResult(model.joint_names, model.n_parameters, base.rank, estimates)


def format_table(result: SousaResult) -> str:
    """Table 8 of the paper's form: relative error (%) per joint of each method on the
    identification and validation trajectories, and whether each estimate is feasible."""
    names = {"ols": "OLS", "closest": "closest", "constrained": "constr. OLS"}
    methods = list(result.estimates)
    lines = [
        f"WAM (Sousa & Cortesão 2014), simulated: {result.n_standard} standard parameters "
        f"(7 links x 10 + 7 joints x viscous, Coulomb, offset, drive inertia), "
        f"{result.n_base} base parameters",
        "relative error 100·‖τ_j − τ̂_j‖/‖τ_j‖ (%) per joint",
        f"{'':8}"
        + "".join(f"{'identification':^{12 * len(methods)}}")
        + "".join(f"{'validation':^{12 * len(methods)}}"),
        f"{'joint':<8}" + "".join(f"{names[m]:>12}" for m in methods) * 2,
    ]
    for j in range(len(result.joint_names)):
        lines.append(
            f"{j + 1:<8}"
            + "".join(f"{result.estimates[m].identification_error[j]:12.2f}" for m in methods)
            + "".join(f"{result.estimates[m].validation_error[j]:12.2f}" for m in methods)
        )
    lines.append(
        "feasible"
        + "".join(f"{'yes' if result.estimates[m].feasible else 'NO':>12}" for m in methods) * 2
    )
    lines.append(
        "OLS: least-squares base estimate (feasibility test); closest: its closest "
        "feasible correction; constr. OLS: feasibility-constrained OLS"
    )
    return "\n".join(lines)
