"""Whole-body identification: every URDF link of a floating-base robot, consistent, at scale.

The rows of :class:`~inertia_id_ros.core.whole_body.WholeBodyModel` (base, internal F/T sensors,
optional joint torques) are accumulated into normal equations (:func:`whole_body_problem`), the
problem is **scaled** (:func:`scale_problem`) and solved (``lmi`` fast or cvxpy, ``pointmass``
with OSQP, ``ols``) with a weak prior toward the URDF for the directions the data leave open.

Scaling (FloBaRoID reports that unscaled SDPs fail at humanoid size): link ``k``'s ``θ`` is
divided by ``[m, m ℓ (×3), m ℓ² (×6)]`` with ``m`` its URDF mass and ``ℓ² = tr(Σ)/m`` its URDF
second moment about the link frame; then ``J(θ') = T J(θ) T`` with ``T = diag(1/(ℓ√m) (×3),
1/√m)`` (a congruence: ``J(θ') ⪰ 0 ⇔ J(θ) ⪰ 0``), every link is a unit body and the constraint
is unchanged. Offsets are divided by the RMS of their columns' data (N, N m). The objective is
divided by its mean diagonal.

Identifiability (:class:`Identifiability`): the base parameters of the scaled gram matrix
(:func:`~inertia_id_ros.chain.links.base_parameters_from_gram`); a link is ``identified`` when no
coordinate of it has a component in the null space, ``prior only`` when all of its coordinates
are in the null space's span (they move no row), ``partly identified`` otherwise.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from inertia_id_ros.chain.links import DEFAULT_GRAM_RANK_TOLERANCE, base_parameters_from_gram
from inertia_id_ros.core.inertia import N_BODY_PARAMS, check_consistency
from inertia_id_ros.core.regressors import N_WRENCH_CHANNELS
from inertia_id_ros.core.whole_body import WholeBodyModel, WholeBodySamples
from inertia_id_ros.errors import ProblemError
from inertia_id_ros.solvers import Problem, Solution, solve
from inertia_id_ros.solvers.problem import CONSISTENCY_MARGIN, lift_to_margin

WHOLE_BODY_METHODS = ("lmi", "pointmass", "ols")
DEFAULT_PRIOR_WEIGHT = 1e-5
"""Weight of ``|x' − prior'|²`` (scaled coordinates: 1 = one link's size) relative to the mean
diagonal of the scaled gram matrix: negligible where the data determine ``x``, decisive where
they do not."""
IDENTIFIED, PARTLY_IDENTIFIED, PRIOR_ONLY = "identified", "partly identified", "prior only"
LABEL_TOLERANCE = 1e-2
"""A link coordinate counts as determined when less than this share of it (squared) lies in the
null space, as undetermined when more than ``1 - LABEL_TOLERANCE`` does."""
POINTMASS_OPTIONS = {"points_per_axis": 3, "eps": 1e-5, "refinements": 0}
"""Point-mass QP defaults at whole-body scale: 27 points per link placed once, OSQP tolerance
1e-5 (on the 39-link iCub about ten times faster than the solver's defaults, its objective within
3e-4 of ``lmi``'s)."""
_CHUNK = 400  # samples per block of rows


@dataclass(frozen=True)
class NormalEquations:
    """``gram = Yᵀ Y`` (p, p), ``moment = Yᵀ b`` (p,), ``yty = bᵀ b``, ``n_rows`` of weighted
    rows."""

    gram: np.ndarray
    moment: np.ndarray
    yty: float
    n_rows: int


def normal_equations(model: WholeBodyModel, samples: WholeBodySamples,
                     with_efforts: bool = False,
                     channel_weights: np.ndarray | None = None) -> NormalEquations:
    """Normal equations of all rows of ``samples`` (accumulated in blocks: the stacked rows of a
    minute at 200 Hz would take gigabytes). ``channel_weights`` (C,) multiply each channel's rows
    (1 / noise std, per :meth:`WholeBodyModel.channels`)."""
    p = model.n_params
    gram, moment, yty, n_rows = np.zeros((p, p)), np.zeros(p), 0.0, 0
    groups = model.row_groups(with_efforts)
    weights = None if channel_weights is None else np.asarray(channel_weights, dtype=float)
    for start in range(0, len(samples), _CHUNK):
        chunk = samples.subset(slice(start, start + _CHUNK))
        for (rows, cols), (Yg, bg) in zip(groups, model.group_rows(chunk, with_efforts)):
            if weights is not None:  # a sensor's rows touch only its subtree's columns
                Yg, bg = Yg * weights[rows][:, None], bg * weights[rows]
            bg = bg.reshape(-1)
            if cols.size:  # (rows touching no parameter only add to yty)
                Yg = Yg.reshape(-1, cols.size)
                gram[np.ix_(cols, cols)] += Yg.T @ Yg
                moment[cols] += Yg.T @ bg
            yty += float(bg @ bg)
            n_rows += bg.size
    return NormalEquations(gram, moment, yty, n_rows)


def parameter_scales(model: WholeBodyModel, gram: np.ndarray, n_rows: int) -> np.ndarray:
    """(p,) ``d`` with ``x = d x'`` (see the module docstring)."""
    thetas = model.link_prior[[model.links.index(b) for b in model.bodies]]
    mass = thetas[:, 0]
    length = np.sqrt(np.maximum((thetas[:, 4] + thetas[:, 6] + thetas[:, 9]) / (2 * mass), 1e-8))
    per_body = np.column_stack([mass, *(3 * [mass * length]), *(6 * [mass * length ** 2])])
    offsets = np.sqrt(np.maximum(np.diag(gram)[N_BODY_PARAMS * model.n_bodies:], 1e-300)
                      / max(n_rows, 1))
    return np.concatenate([per_body.ravel(), 1.0 / np.maximum(offsets, 1e-12)])


def scale_problem(equations: NormalEquations, scales: np.ndarray, n_bodies: int,
                  prior: np.ndarray, prior_weight: float, **fields) -> tuple[Problem, float]:
    """The problem in ``x' = x / scales``, its objective divided by the mean diagonal ``s`` of
    ``D G D`` (returned): gram ``D G D / s``, moment ``D m / s``, prior ``prior / scales`` with
    weight ``prior_weight`` (identity, scaled coordinates)."""
    d = scales
    gram = equations.gram * np.outer(d, d)
    s = float(np.mean(np.diag(gram))) or 1.0
    problem = Problem(gram=gram / s, moment=d * equations.moment / s, yty=equations.yty / s,
                      n_rows=equations.n_rows, n_bodies=n_bodies, prior=prior / d,
                      prior_weight=prior_weight, **fields)
    return problem, s


@dataclass(frozen=True)
class Identifiability:
    """What the data determine: ``rank`` base parameters of ``n_params``; per identified link
    (``labels``, in :attr:`WholeBodyModel.bodies` order) ``identified``, ``partly identified`` or
    ``prior only``, and ``identified_fraction`` (0..1: the mean over its 10 coordinates of the
    squared component outside the null space); ``base_parameters`` the combinations (text)."""

    rank: int
    n_params: int
    labels: tuple[str, ...]
    identified_fraction: np.ndarray
    base_parameters: tuple[str, ...]


def identifiability(model: WholeBodyModel, scaled_gram: np.ndarray, scales: np.ndarray,
                    tolerance: float = DEFAULT_GRAM_RANK_TOLERANCE) -> Identifiability:
    """Base parameters and per-link labels of the scaled gram matrix (scaled: a relative
    tolerance compares links of all sizes fairly); the combinations in SI units (``x = scales
    x'``)."""
    bp = base_parameters_from_gram(model.parameter_names, scaled_gram, tolerance)
    physical = dataclasses.replace(bp, combination=bp.combination * np.outer(
        scales[bp.independent], 1.0 / scales[bp.dependent]))
    p = model.n_params
    basis = np.linalg.qr(bp.null_space)[0] if p > bp.rank else np.zeros((p, 0))
    leak = np.sum(basis ** 2, axis=1)[:N_BODY_PARAMS * model.n_bodies].reshape(-1, N_BODY_PARAMS)
    labels = tuple(IDENTIFIED if row.max() < LABEL_TOLERANCE
                   else PRIOR_ONLY if row.min() > 1 - LABEL_TOLERANCE
                   else PARTLY_IDENTIFIED for row in leak)
    return Identifiability(bp.rank, p, labels, 1.0 - leak.mean(axis=1),
                           tuple(physical.expressions()))


@dataclass(frozen=True)
class WholeBodyFit:
    """Result of :func:`fit_whole_body`: ``x`` (p,) physical units (:attr:`WholeBodyModel.
    parameter_names`), ``thetas`` (n_bodies, 10), ``offsets`` {frame: (6,)}, the scaled problem's
    ``solution``, ``identifiability``, ``residual_rms`` of the (weighted) rows."""

    x: np.ndarray
    thetas: np.ndarray
    offsets: dict[str, np.ndarray]
    solution: Solution
    identifiability: Identifiability
    residual_rms: float
    n_samples: int

    @property
    def fully_consistent(self) -> bool:
        """Every identified link passes the independent consistency check."""
        return all(check_consistency(theta).fully_consistent for theta in self.thetas)


def whole_body_problem(model: WholeBodyModel, equations: NormalEquations,
                       prior_weight: float = DEFAULT_PRIOR_WEIGHT) -> tuple[Problem, np.ndarray]:
    """The scaled solver problem and its ``scales`` (``x = scales * x'``)."""
    scales = parameter_scales(model, equations.gram, equations.n_rows)
    problem, _ = scale_problem(equations, scales, model.n_bodies, model.prior, prior_weight,
                               body_names=model.bodies)
    return problem, scales


def fit_whole_body(model: WholeBodyModel, samples: WholeBodySamples | NormalEquations,
                   method: str = "lmi", prior_weight: float = DEFAULT_PRIOR_WEIGHT,
                   with_efforts: bool = False, channel_weights: np.ndarray | None = None,
                   initvals: Solution | None = None, **options) -> WholeBodyFit:
    """Consistent fit of every identified link and sensor offset (``ols``: unconstrained, the
    baseline). ``options`` go to the solver (e.g. ``backend="cvxpy"`` for ``lmi``; for
    ``pointmass`` over :data:`POINTMASS_OPTIONS`)."""
    if method not in WHOLE_BODY_METHODS:
        raise ProblemError(f"method {method!r} is not one of {WHOLE_BODY_METHODS}")
    equations = (samples if isinstance(samples, NormalEquations)
                 else normal_equations(model, samples, with_efforts, channel_weights))
    if equations.n_rows == 0:
        raise ProblemError("no rows: no samples")
    problem, scales = whole_body_problem(model, equations, prior_weight)
    if method == "pointmass":
        options = {**POINTMASS_OPTIONS, **options}
    solution = solve(problem, method, initvals, **options)
    x = scales * solution.x
    if method != "ols":  # round-off of the unscaling must not break the margin
        x = lift_to_margin(x, problem, CONSISTENCY_MARGIN)
    nb = N_BODY_PARAMS * model.n_bodies
    offsets = {frame: x[nb + N_WRENCH_CHANNELS * i:nb + N_WRENCH_CHANNELS * (i + 1)]
               for i, frame in enumerate(model.offset_sensors)}
    residual = max(float(x @ equations.gram @ x - 2 * equations.moment @ x + equations.yty), 0.0)
    return WholeBodyFit(x=x, thetas=x[:nb].reshape(-1, N_BODY_PARAMS), offsets=offsets,
                        solution=solution,
                        identifiability=identifiability(model, problem.gram, scales),
                        residual_rms=float(np.sqrt(residual / equations.n_rows)),
                        n_samples=equations.n_rows // max(len(model.channels(with_efforts)), 1))


@dataclass(frozen=True)
class PredictionErrors:
    """RMS errors of predicted rows per group of :meth:`WholeBodyModel.row_groups` (``base``,
    each internal sensor's frame, ``tau``): ``force`` (N) and ``torque`` (N m) over the wrench
    channels (``tau``: the joint torques in ``torque``, ``force`` NaN)."""

    force: dict[str, float]
    torque: dict[str, float]


def prediction_errors(model: WholeBodyModel, x: np.ndarray, samples: WholeBodySamples,
                      with_efforts: bool = False) -> PredictionErrors:
    """How well parameters ``x`` (p,) predict the measured wrenches (and torques) of
    ``samples``: the residuals of the rows, which for an internal sensor are its measured minus
    its predicted wrench, for the base the contacts' measured minus predicted total wrench."""
    channels = model.channels(with_efforts)
    sums = np.zeros(len(channels))
    n = 0
    for start in range(0, len(samples), _CHUNK):
        chunk = samples.subset(slice(start, start + _CHUNK))
        for (rows, cols), (Yg, bg) in zip(model.row_groups(with_efforts),
                                          model.group_rows(chunk, with_efforts)):
            sums[rows] += np.sum((Yg @ x[cols] - bg) ** 2, axis=0)
        n += len(chunk)
    force: dict[str, float] = {}
    torque: dict[str, float] = {}
    for group in dict.fromkeys(label.rsplit(".", 1)[0] for label in channels):
        idx = [k for k, label in enumerate(channels) if label.rsplit(".", 1)[0] == group]
        if group == "tau":
            force[group] = float("nan")
            torque[group] = float(np.sqrt(sums[idx].sum() / (n * len(idx))))
        else:
            force[group] = float(np.sqrt(sums[idx[:3]].sum() / (3 * n)))
            torque[group] = float(np.sqrt(sums[idx[3:]].sum() / (3 * n)))
    return PredictionErrors(force, torque)


def holdout_comparison(model: WholeBodyModel, samples: WholeBodySamples, holdout: float,
                       method: str = "lmi", prior_weight: float = DEFAULT_PRIOR_WEIGHT,
                       with_efforts: bool = False) -> tuple[WholeBodyFit, dict[str, dict]]:
    """Fit ``method`` and the OLS baseline on the first ``1 - holdout`` of ``samples``, predict
    the rest with them and with the URDF. Returns the fit and, per row group, the force and
    torque RMS errors ``{"fit": ..., "urdf": ..., "ols": ..., "urdf_offsets": ...}`` (N, N m;
    ``urdf``: zero offsets, ``urdf_offsets``: the sensors' offsets fitted to the same samples with
    the URDF's links)."""
    if not 0.0 < holdout < 1.0:
        raise ProblemError(f"holdout must be in (0, 1), got {holdout}")
    split = int(round(len(samples) * (1.0 - holdout)))
    train, test = samples.subset(slice(0, split)), samples.subset(slice(split, None))
    if len(train) == 0 or len(test) == 0:
        raise ProblemError(f"holdout {holdout} leaves no samples to fit or to test")
    equations = normal_equations(model, train, with_efforts)
    fit = fit_whole_body(model, equations, method, prior_weight)
    ols = fit_whole_body(model, equations, "ols", prior_weight)
    errors = {name: prediction_errors(model, x, test, with_efforts)
              for name, x in (("fit", fit.x), ("urdf", model.prior), ("ols", ols.x))}
    # the URDF's links with the sensors' offsets fitted (least squares) on the same samples
    offsets_only = dataclasses.replace(model, bodies=())
    if offsets_only.n_params:
        reduced = normal_equations(offsets_only, train, with_efforts)
        x = np.linalg.lstsq(reduced.gram, reduced.moment, rcond=None)[0]
        errors["urdf_offsets"] = prediction_errors(offsets_only, x, test, with_efforts)
    table = {group: {"force": {name: e.force[group] for name, e in errors.items()},
                     "torque": {name: e.torque[group] for name, e in errors.items()},
                     "ols_inconsistent_links": sum(not check_consistency(t).fully_consistent
                                                   for t in ols.thetas)}
             for group in errors["fit"].force}
    return fit, table
