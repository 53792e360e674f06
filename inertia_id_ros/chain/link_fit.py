"""The fit of a chain's links and drives to its joint torques, and its prior weight.

With the regressor of :mod:`inertia_id_ros.chain.links` (``tau = Y x + tau_known``), a fit
(:func:`fit_links`) minimises, over the ``n_rows = N * n`` torque samples::

    (1 / n_rows) * ||Y x - (tau_measured - tau_known)||^2 + prior_weight * ||x - x_prior||^2

subject to every link's pseudo-inertia ``J(theta_k) >= 0`` and viscous, Coulomb and armature
``>= 0``. ``x_prior`` is the URDF's inertials with zero friction and offset (Tikhonov
regularisation toward the CAD model as in Wensing, Kim & Slotine 2017, "Linear matrix inequalities
for physically consistent inertial parameter identification"). ``prior_weight`` is per torque
sample, so the fit does not change with subsampling; its unit is (N·m)² per (SI unit of x)², i.e.
one weight for all parameters. Choose it by blocked cross-validation (:func:`select_prior_weight`).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from inertia_id_ros.chain.links import JointTorqueData, LinkModel, link_channels
from inertia_id_ros.core.covariance import ChannelNormalEquations
from inertia_id_ros.core.inertia import ConsistencyReport, check_consistency
from inertia_id_ros.core.weighting import (
    ChannelWeights,
    check_weighting,
    iterate_channel_weights,
    weighted_normal_equations,
)
from inertia_id_ros.options import DEFAULT_PRIOR_WEIGHT
from inertia_id_ros.solvers import Problem, Solution, solve


def link_problem(
    model: LinkModel,
    data: JointTorqueData | Iterable[JointTorqueData],
    prior_weight: float = DEFAULT_PRIOR_WEIGHT,
    bounding_ellipsoids: Sequence[np.ndarray | None] | None = None,
    channel_weights: np.ndarray | None = None,
) -> Problem:
    """The solver problem of fitting ``model`` to all samples of ``data`` (one run or several).

    Normal equations of :func:`~inertia_id_ros.chain.links.regression_system` (accumulated in
    blocks; joint ``j``'s rows weighted by ``channel_weights[j]`` when given, see
    :mod:`inertia_id_ros.core.weighting`), the prior ``model.prior`` with weight ``prior_weight *
    n_rows`` (``prior_weight`` is per torque sample, see the module docstring), every link a body
    (``J(theta_k) >= 0`` for constrained methods), viscous, Coulomb and armature in ``nonnegative``;
    optional bounding ellipsoids per link (:func:`inertia_id_ros.solvers.ellipsoid_matrix`, link
    frame).
    """
    return build_link_problem(
        model,
        *weighted_normal_equations(link_channels(model, data), channel_weights),
        prior_weight,
        bounding_ellipsoids,
    )


def build_link_problem(
    model: LinkModel,
    gram: np.ndarray,
    moment: np.ndarray,
    yty: float,
    n_rows: int,
    prior_weight: float = DEFAULT_PRIOR_WEIGHT,
    bounding_ellipsoids: Sequence[np.ndarray | None] | None = None,
) -> Problem:
    """The solver problem of fitting ``model`` given the normal equations of its
    :func:`~inertia_id_ros.chain.links.regression_system` over ``n_rows`` torque samples: ``gram``
    (p, p) ``= Y^T Y``, ``moment`` (p,) ``= Y^T y``, ``yty = y^T y`` (N·m)²; the prior and
    constraints as in :func:`link_problem` (``prior_weight`` per torque sample)."""
    if not prior_weight >= 0.0:
        raise ValueError(f"prior_weight must be >= 0, got {prior_weight!r}")
    return Problem(
        gram=gram,
        moment=moment,
        yty=yty,
        n_rows=n_rows,
        n_bodies=model.n_joints,
        nonnegative=model.nonnegative,
        prior=model.prior,
        prior_weight=prior_weight * n_rows,
        bounding_ellipsoids=bounding_ellipsoids,
        body_names=model.link_names,
        param_names=model.parameter_names,
    )


@dataclass(frozen=True)
class LinkFit:
    """Result of :func:`fit_links`: ``x`` (p,) in
    :attr:`~inertia_id_ros.chain.links.LinkModel.parameter_names` order."""

    x: np.ndarray
    parameter_names: tuple[str, ...]
    link_names: tuple[str, ...]
    method: str
    prior_weight: float
    solution: Solution
    consistency: tuple[ConsistencyReport, ...] = field(repr=False)
    channel_weights: ChannelWeights | None = None
    """The joints' weights (``weighting="channel"``), ``None`` unweighted."""

    @property
    def link_parameters(self) -> np.ndarray:
        """(n_links, 10) each link's ``theta``."""
        return self.x[: 10 * len(self.link_names)].reshape(-1, 10)

    @property
    def fully_consistent(self) -> bool:
        """Every link passes :func:`inertia_id_ros.core.inertia.check_consistency`."""
        return all(r.fully_consistent for r in self.consistency)


def _solve(
    problem: Problem, method: str, initvals: Solution | np.ndarray | None, **solver_options: object
) -> Solution:
    solution = solve(problem, method=method, initvals=initvals, **solver_options)
    if not solution.found:
        warnings.warn(
            f"link fit with method {method!r} did not converge (status "
            f"{solution.status!r}); using its last iterate",
            RuntimeWarning,
            stacklevel=3,
        )
    return solution


def fit_links(
    model: LinkModel,
    data: JointTorqueData | Iterable[JointTorqueData],
    method: str = "lmi",
    prior_weight: float = DEFAULT_PRIOR_WEIGHT,
    initvals: LinkFit | Solution | np.ndarray | None = None,
    bounding_ellipsoids: Sequence[np.ndarray | None] | None = None,
    weighting: str = "none",
    channels: ChannelNormalEquations | None = None,
    **solver_options: object,
) -> LinkFit:
    """Fit links and drives to the torques of ``data`` (one run or several).

    Minimises ``(1/n_rows) ||Y x - y||² + prior_weight ||x - model.prior||²`` (see
    :func:`link_problem`) with ``method`` of :func:`inertia_id_ros.solvers.solve`: ``"lmi"`` keeps
    every link fully consistent (``J(theta_k) >= 0``) and viscous, Coulomb and armature ``>= 0``;
    ``"ols"`` is unconstrained. ``weighting="channel"``: each joint's rows weighted by its inverse
    residual variance, iterated (Gautier's weighted least squares,
    :func:`inertia_id_ros.core.weighting.iterate_channel_weights`); ``"none"``: unweighted.
    ``channels``: the data's :func:`~inertia_id_ros.chain.links.link_channels` when already
    computed. ``initvals`` warm-starts the solver (a previous fit, solution or x);
    ``solver_options`` go to the method. Warns if the solver did not converge.
    """
    check_weighting(weighting)
    if isinstance(initvals, LinkFit):
        initvals = initvals.solution
    channels = link_channels(model, data) if channels is None else channels
    solutions: list[Solution] = []

    def fit(weights: np.ndarray | None) -> np.ndarray:
        problem = build_link_problem(
            model, *weighted_normal_equations(channels, weights), prior_weight, bounding_ellipsoids
        )
        solutions.append(
            _solve(problem, method, solutions[-1] if solutions else initvals, **solver_options)
        )
        return solutions[-1].x

    weights = None
    if weighting == "channel":
        _, weights = iterate_channel_weights(channels, fit)
    else:
        fit(None)
    solution = solutions[-1]
    x = np.asarray(solution.x, dtype=float)
    consistency = tuple(check_consistency(theta) for theta in model.link_parameters(x))
    return LinkFit(
        x,
        model.parameter_names,
        model.link_names,
        method,
        prior_weight,
        solution,
        consistency,
        weights,
    )


@dataclass(frozen=True)
class PriorWeightSelection:
    """Blocked cross-validation of ``prior_weight``: ``cv_rms[i]`` (N·m) is the RMS torque error
    on held-out blocks with ``weights[i]``; ``best`` the weight with the smallest."""

    weights: np.ndarray
    cv_rms: np.ndarray
    """NaN for a candidate not evaluated (``search="descent"``)."""
    best: float


DEFAULT_PRIOR_WEIGHT_GRID = tuple(np.logspace(-8, -1, 15))
"""Candidate ``prior_weight`` of :func:`select_prior_weight` ((N·m)² per SI unit², per torque
sample): from negligible (the data alone, the prior only settling what they cannot identify) to
strong."""


def time_blocks(n_samples: int, n_folds: int) -> list[np.ndarray]:
    """The ``n_folds`` contiguous blocks (sample indices) of blocked cross-validation over
    ``n_samples`` samples of one run."""
    if n_folds < 2:
        raise ValueError(f"n_folds must be >= 2, got {n_folds}")
    if n_samples < n_folds:
        raise ValueError(f"{n_samples} samples cannot make {n_folds} folds")
    return np.array_split(np.arange(n_samples), n_folds)


PRIOR_SEARCHES = ("grid", "descent")
"""How :func:`select_prior_weight` visits its candidates: ``"grid"`` every one; ``"descent"``
every other one from the strongest down while the score improves, then the two skipped
neighbours of the best (the same choice on a cross-validation curve with one minimum)."""


def select_prior_weight(
    model: LinkModel,
    data: JointTorqueData | None = None,
    weights: Sequence[float] = DEFAULT_PRIOR_WEIGHT_GRID,
    n_folds: int = 5,
    method: str = "lmi",
    channel_weights: np.ndarray | None = None,
    folds: Sequence[ChannelNormalEquations] | None = None,
    search: str = "grid",
    **solver_options: object,
) -> PriorWeightSelection:
    """Choose ``prior_weight`` by ``n_folds``-fold cross-validation over contiguous time blocks of
    one run (contiguous, so that a held-out block is a part of the trajectory the fit has not seen,
    rather than samples interleaved with the training ones; :func:`time_blocks`). With
    ``channel_weights`` (n_joints,) the fits are weighted (:func:`link_problem`); the held-out error
    is the plain torque RMS either way. ``folds``: the blocks'
    :func:`~inertia_id_ros.chain.links.link_channels` when already computed (then ``data`` is not
    needed). ``search``: :data:`PRIOR_SEARCHES`; with ``"descent"`` the candidates not evaluated
    have ``cv_rms`` NaN."""
    if search not in PRIOR_SEARCHES:
        raise ValueError(f"search must be one of {PRIOR_SEARCHES}, got {search!r}")
    if folds is None:
        if data is None:
            raise ValueError("select_prior_weight needs data or folds")
        folds = [link_channels(model, data.subset(b)) for b in time_blocks(data.n_samples, n_folds)]
    grid = np.asarray(sorted(weights), dtype=float)
    total = ChannelNormalEquations.summed(folds)
    bases = []
    for held_out in folds:
        training = ChannelNormalEquations(
            total.gram - held_out.gram,
            total.moment - held_out.moment,
            total.yty - held_out.yty,
            total.n_samples - held_out.n_samples,
        )
        bases.append(
            build_link_problem(
                model, *weighted_normal_equations(training, channel_weights), prior_weight=0.0
            )
        )
    previous: list[Solution | None] = [None] * len(folds)
    cv_rms = np.full(len(grid), np.nan)

    def evaluate(i: int) -> float:  # every fold, warm-started from its last solve
        if np.isnan(cv_rms[i]):
            squared = 0.0
            for f, (base, held_out) in enumerate(zip(bases, folds)):
                problem = base.replace(prior_weight=grid[i] * base.n_rows)
                solution = _solve(problem, method, previous[f], **solver_options)
                previous[f] = solution
                squared += float(held_out.squared_residuals(solution.x).sum())
            cv_rms[i] = np.sqrt(squared / (total.n_samples * model.n_joints))
        return float(cv_rms[i])

    last = len(grid) - 1
    if search == "grid":
        for i in reversed(range(len(grid))):  # strong to weak prior, warm-started
            evaluate(i)
    else:
        best = last
        evaluate(last)
        for i in range(last - 2, -1, -2):
            if evaluate(i) >= cv_rms[best]:
                break
            best = i
        for i in (best - 1, best + 1):
            if 0 <= i <= last:
                evaluate(i)
    return PriorWeightSelection(grid, cv_rms, float(grid[np.nanargmin(cv_rms)]))
