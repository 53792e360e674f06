"""Whole-body identification: every URDF link of a floating-base robot, consistent, at scale.

The rows of :class:`~inertia_id_ros.core.whole_body_model.WholeBodyModel` (base, internal F/T
sensors, optional joint torques) are accumulated into normal equations
(:func:`whole_body_problem`), the problem is **scaled** (:func:`scale_problem`) and solved (``lmi``
fast or cvxpy, ``pointmass`` with OSQP, ``ols``) with a weak prior toward the URDF for the
directions the data leave open.

Scaling (FloBaRoID reports that unscaled SDPs fail at humanoid size): link ``k``'s ``θ`` is
divided by ``[m, m ℓ (×3), m ℓ² (×6)]`` with ``m`` its URDF mass and ``ℓ² = tr(Σ)/m`` its URDF
second moment about the link frame; then ``J(θ') = T J(θ) T`` with ``T = diag(1/(ℓ√m) (×3),
1/√m)`` (a congruence: ``J(θ') ⪰ 0 ⇔ J(θ) ⪰ 0``), every link is a unit body and the constraint
is unchanged. Offsets are divided by the RMS of their columns' data (N, N m). The objective is
divided by its mean diagonal.

Weighting (``weighting="channel"``): Gautier's weighted least squares over the groups of rows
that share a noise level (:func:`noise_groups`: the base's and each sensor's force rows and
torque rows, each joint's torque), the weights iterated from the groups' residual variances
(:mod:`inertia_id_ros.core.weighting`, on the per-group normal equations
:func:`group_normal_equations`); the scaling and the identifiability then follow the weighted
rows.

Identifiability (:class:`Identifiability`): the base parameters of the scaled gram matrix
(:func:`~inertia_id_ros.chain.base_parameters.base_parameters_from_gram`); a link is ``identified``
when no coordinate of it has a component in the null space, ``prior only`` when all of its
coordinates are in the null space's span (they move no row), ``partly identified`` otherwise.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from inertia_id_ros.chain.base_parameters import (
    DEFAULT_GRAM_RANK_TOLERANCE,
    BaseParameters,
    base_parameters_from_gram,
)
from inertia_id_ros.core.covariance import ChannelNormalEquations
from inertia_id_ros.core.inertia import N_BODY_PARAMS, check_consistency
from inertia_id_ros.core.regressors import N_WRENCH_CHANNELS
from inertia_id_ros.core.weighting import (
    ChannelWeights,
    check_weighting,
    iterate_channel_weights,
    weighted_normal_equations,
)
from inertia_id_ros.core.whole_body_model import WholeBodyModel, WholeBodySamples
from inertia_id_ros.errors import ProblemError
from inertia_id_ros.options import WHOLE_BODY_DEFAULT_PRIOR_WEIGHT as DEFAULT_PRIOR_WEIGHT
from inertia_id_ros.options import WHOLE_BODY_DEFAULT_WEIGHTING, WHOLE_BODY_METHODS
from inertia_id_ros.solvers import Problem, Solution, ellipsoids_for, solve
from inertia_id_ros.solvers.problem import CONSISTENCY_MARGIN, lift_to_margin

DEFAULT_WEIGHTING = WHOLE_BODY_DEFAULT_WEIGHTING
"""The ``weighting`` the node and the command line use for a whole-body fit by default
(:data:`inertia_id_ros.options.WHOLE_BODY_DEFAULT_WEIGHTING`)."""
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


def noise_groups(
    model: WholeBodyModel, with_efforts: bool = False
) -> tuple[tuple[str, ...], list[np.ndarray]]:
    """The groups of a sample's rows that share a noise level (the channels of a weighted fit,
    :mod:`inertia_id_ros.core.weighting`): ``(names (G,), rows)``, ``rows[g]`` the indices into
    :meth:`WholeBodyModel.channels` of group ``g``. Each 6-row block (the base, an internal
    sensor) gives its force rows (``<block>.force``) and its torque rows (``<block>.torque``),
    each joint its torque row (``tau.<joint>``); in the order of
    :meth:`WholeBodyModel.row_groups`."""
    channels = model.channels(with_efforts)
    names: list[str] = []
    rows: list[np.ndarray] = []
    for group, _ in model.row_groups(with_efforts):
        if group.size == N_WRENCH_CHANNELS:
            block = channels[group[0]].rsplit(".", 1)[0]
            names += [f"{block}.force", f"{block}.torque"]
            rows += [group[:3], group[3:]]
        else:
            names.append(channels[group[0]])
            rows.append(group)
    return tuple(names), rows


def _accumulate(
    model: WholeBodyModel,
    samples: WholeBodySamples,
    with_efforts: bool,
    channel_weights: np.ndarray | None,
    by_noise_group: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """``(gram (G, p, p), moment (G, p), yty (G,), rows)``: the products of all rows of
    ``samples`` summed (``G = 1``) or per :func:`noise_groups` (accumulated in blocks of
    samples: the stacked rows of a minute at 200 Hz would take gigabytes)."""
    p = model.n_params
    groups = model.row_groups(with_efforts)
    parts, g = [], 0  # per row group: (its rows' slice, the product they add to)
    for rows, _ in groups:
        if not by_noise_group:
            parts.append([(slice(None), 0)])
        elif rows.size == N_WRENCH_CHANNELS:
            parts.append([(slice(0, 3), g), (slice(3, 6), g + 1)])
            g += 2
        else:
            parts.append([(slice(None), g)])
            g += 1
    n_products = max(g, 1)
    gram, moment = np.zeros((n_products, p, p)), np.zeros((n_products, p))
    yty, n_rows = np.zeros(n_products), 0
    weights = None if channel_weights is None else np.asarray(channel_weights, dtype=float)
    for start in range(0, len(samples), _CHUNK):
        chunk = samples.subset(slice(start, start + _CHUNK))
        blocks = model.group_rows(chunk, with_efforts)
        for (rows, cols), (Yg, bg), group_parts in zip(groups, blocks, parts):
            if weights is not None:  # a sensor's rows touch only its subtree's columns
                Yg, bg = Yg * weights[rows][:, None], bg * weights[rows]
            for part, k in group_parts:
                Yk, bk = Yg[:, part], bg[:, part].reshape(-1)
                if cols.size:  # (rows touching no parameter only add to yty)
                    Yk = Yk.reshape(-1, cols.size)
                    gram[k][np.ix_(cols, cols)] += Yk.T @ Yk
                    moment[k, cols] += Yk.T @ bk
                yty[k] += float(bk @ bk)
                n_rows += bk.size
    return gram, moment, yty, n_rows


def normal_equations(
    model: WholeBodyModel,
    samples: WholeBodySamples,
    with_efforts: bool = False,
    channel_weights: np.ndarray | None = None,
) -> NormalEquations:
    """Normal equations of all rows of ``samples``. ``channel_weights`` (C,) multiply each
    channel's rows (1 / noise std, per :meth:`WholeBodyModel.channels`)."""
    gram, moment, yty, n_rows = _accumulate(model, samples, with_efforts, channel_weights, False)
    return NormalEquations(gram[0], moment[0], float(yty[0]), n_rows)


def group_normal_equations(
    model: WholeBodyModel, samples: WholeBodySamples, with_efforts: bool = False
) -> ChannelNormalEquations:
    """Normal equations of the rows of ``samples`` per :func:`noise_groups` (their sum is
    :func:`normal_equations`), what a weighted fit reweights."""
    gram, moment, yty, _ = _accumulate(model, samples, with_efforts, None, True)
    sizes = np.array([rows.size for rows in noise_groups(model, with_efforts)[1]])
    return ChannelNormalEquations(gram, moment, yty, len(samples), rows_per_channel=sizes)


def parameter_scales(model: WholeBodyModel, gram: np.ndarray, n_rows: int) -> np.ndarray:
    """(p,) ``d`` with ``x = d x'`` (see the module docstring)."""
    thetas = model.link_prior[[model.links.index(b) for b in model.bodies]]
    mass = thetas[:, 0]
    length = np.sqrt(np.maximum((thetas[:, 4] + thetas[:, 6] + thetas[:, 9]) / (2 * mass), 1e-8))
    per_body = np.column_stack([mass, *(3 * [mass * length]), *(6 * [mass * length**2])])
    offsets = np.sqrt(
        np.maximum(np.diag(gram)[N_BODY_PARAMS * model.n_bodies :], 1e-300) / max(n_rows, 1)
    )
    return np.concatenate([per_body.ravel(), 1.0 / np.maximum(offsets, 1e-12)])


def scale_problem(
    equations: NormalEquations,
    scales: np.ndarray,
    n_bodies: int,
    prior: np.ndarray,
    prior_weight: float,
    **fields: Any,
) -> tuple[Problem, float]:
    """The problem in ``x' = x / scales``, its objective divided by the mean diagonal ``s`` of
    ``D G D`` (returned): gram ``D G D / s``, moment ``D m / s``, prior ``prior / scales`` with
    weight ``prior_weight`` (identity, scaled coordinates)."""
    d = scales
    gram = equations.gram * np.outer(d, d)
    s = float(np.mean(np.diag(gram))) or 1.0
    problem = Problem(
        gram=gram / s,
        moment=d * equations.moment / s,
        yty=equations.yty / s,
        n_rows=equations.n_rows,
        n_bodies=n_bodies,
        prior=prior / d,
        prior_weight=prior_weight,
        **fields,
    )
    return problem, s


@dataclass(frozen=True)
class Identifiability:
    """What the data determine: ``rank`` base parameters of ``n_params``; per identified link
    (``labels``, in :attr:`WholeBodyModel.bodies` order) ``identified``, ``partly identified`` or
    ``prior only``, and ``identified_fraction`` (0..1: the mean over its 10 coordinates of the
    squared component outside the null space); ``base_parameters`` the combinations (text, in
    SI units; written out on first use: an online update does not need them)."""

    rank: int
    n_params: int
    labels: tuple[str, ...]
    identified_fraction: np.ndarray
    combinations: BaseParameters = field(repr=False)
    """The base parameters in physical units (``x = scales x'``)."""

    @functools.cached_property
    def base_parameters(self) -> tuple[str, ...]:
        """Each base parameter as text, e.g. ``'l_foot.m + 0.02*l_foot.mcx'``."""
        return tuple(self.combinations.expressions())


def identifiability(
    model: WholeBodyModel,
    scaled_gram: np.ndarray,
    scales: np.ndarray,
    tolerance: float = DEFAULT_GRAM_RANK_TOLERANCE,
) -> Identifiability:
    """Base parameters and per-link labels of the scaled gram matrix (scaled: a relative
    tolerance compares links of all sizes fairly); the combinations in SI units (``x = scales
    x'``)."""
    bp = base_parameters_from_gram(model.parameter_names, scaled_gram, tolerance)
    physical = dataclasses.replace(
        bp,
        combination=bp.combination * np.outer(scales[bp.independent], 1.0 / scales[bp.dependent]),
    )
    p = model.n_params
    basis = np.linalg.qr(bp.null_space)[0] if p > bp.rank else np.zeros((p, 0))
    leak = np.sum(basis**2, axis=1)[: N_BODY_PARAMS * model.n_bodies].reshape(-1, N_BODY_PARAMS)
    labels = tuple(
        IDENTIFIED
        if row.max() < LABEL_TOLERANCE
        else PRIOR_ONLY
        if row.min() > 1 - LABEL_TOLERANCE
        else PARTLY_IDENTIFIED
        for row in leak
    )
    return Identifiability(bp.rank, p, labels, 1.0 - leak.mean(axis=1), physical)


@dataclass(frozen=True)
class WholeBodyFit:
    """Result of :func:`fit_whole_body`: ``x`` (p,) physical units (:attr:`WholeBodyModel.
    parameter_names`), ``thetas`` (n_bodies, 10), ``offsets`` {frame: (6,)}, the scaled problem's
    ``solution``, :attr:`identifiability` (of the weighted rows when weighted; ``identify``
    computes it), ``residual_rms`` of the rows (unweighted, whatever the weighting; with
    ``channel_weights``: of the rows so multiplied); ``solve_time`` (s) of the solver, summed over
    a weighted fit's solves; ``weights`` of :func:`noise_groups` (``weighting="channel"``, else
    ``None``)."""

    x: np.ndarray
    thetas: np.ndarray
    offsets: dict[str, np.ndarray]
    solution: Solution
    identify: Callable[[], Identifiability] = field(repr=False, compare=False)
    residual_rms: float
    n_samples: int
    solve_time: float
    weights: ChannelWeights | None = None

    @functools.cached_property
    def identifiability(self) -> Identifiability:
        """Base parameters and per-link labels, computed when first asked for (a weighted fit's
        intermediate solves are never asked)."""
        return self.identify()

    @property
    def fully_consistent(self) -> bool:
        """Every identified link passes the independent consistency check."""
        return all(check_consistency(theta).fully_consistent for theta in self.thetas)


def whole_body_problem(
    model: WholeBodyModel,
    equations: NormalEquations,
    prior_weight: float = DEFAULT_PRIOR_WEIGHT,
    bounding_ellipsoids: list[np.ndarray | None] | None = None,
) -> tuple[Problem, np.ndarray]:
    """The scaled solver problem and its ``scales`` (``x = scales * x'``);
    ``bounding_ellipsoids`` per identified link ``None`` or its ``Q`` (4x4, link frame), moved
    to the scaled coordinates: ``tr(J(θ) Q) = tr(J(θ') T⁻¹ Q T⁻¹)``, divided by ``m`` (the
    ellipsoid in coordinates ``p / ℓ``: a positive multiple is the same constraint, and the
    problem's check wants the ellipsoid's own form)."""
    scales = parameter_scales(model, equations.gram, equations.n_rows)
    scaled: list[np.ndarray | None] | None = None
    if bounding_ellipsoids is not None:
        per_body = scales[: N_BODY_PARAMS * model.n_bodies].reshape(-1, N_BODY_PARAMS)
        scaled = []
        for q, d in zip(bounding_ellipsoids, per_body):
            if q is None:
                scaled.append(None)
                continue
            length = d[1] / d[0]  # d = [m, m l (x3), m l² (x6)]
            t_inv = np.array([length] * 3 + [1.0])
            scaled.append(np.asarray(q, dtype=float) * np.outer(t_inv, t_inv))
    problem, _ = scale_problem(
        equations,
        scales,
        model.n_bodies,
        model.prior,
        prior_weight,
        body_names=model.bodies,
        bounding_ellipsoids=scaled,
    )
    return problem, scales


def fit_whole_body(
    model: WholeBodyModel,
    samples: WholeBodySamples | NormalEquations | ChannelNormalEquations,
    method: str = "lmi",
    prior_weight: float = DEFAULT_PRIOR_WEIGHT,
    with_efforts: bool = False,
    channel_weights: np.ndarray | None = None,
    initvals: Solution | None = None,
    weighting: str = "none",
    initial_weights: np.ndarray | None = None,
    bounding_ellipsoids: list[np.ndarray | None] | None = None,
    **options: Any,
) -> WholeBodyFit:
    """Consistent fit of every identified link and sensor offset (``ols``: unconstrained, the
    baseline) to ``samples`` or their normal equations (summed, or per :func:`noise_groups`).
    ``weighting="channel"``: each of :func:`noise_groups` weighted by its inverse residual
    variance, iterated (Gautier's weighted least squares,
    :func:`~inertia_id_ros.core.weighting.iterate_channel_weights`; each solve warm-started from
    the previous; needs the samples or the per-group equations; ``initial_weights`` (G,) start
    the iteration, e.g. the previous window's, default unweighted); ``"none"``: unweighted.
    ``bounding_ellipsoids``: per identified link ``None`` or its ``Q`` (4x4, link frame; Wensing
    et al. 2017), not for ``ols``.
    ``channel_weights`` (C,): fixed multipliers of each row channel instead. ``options`` go to
    the solver (e.g. ``backend="cvxpy"`` for ``lmi``; for ``pointmass`` over
    :data:`POINTMASS_OPTIONS`)."""
    if method not in WHOLE_BODY_METHODS:
        raise ProblemError(f"method {method!r} is not one of {WHOLE_BODY_METHODS}")
    check_weighting(weighting)
    if method == "pointmass":
        options = {**POINTMASS_OPTIONS, **options}
    if weighting == "none":
        return _fit_equations(
            model,
            _summed_equations(model, samples, with_efforts, channel_weights),
            method,
            prior_weight,
            initvals,
            options,
            with_efforts,
            bounding_ellipsoids,
        )
    if isinstance(samples, NormalEquations) or channel_weights is not None:
        raise ProblemError(
            "weighting='channel' needs the samples or their per-group normal "
            "equations (group_normal_equations), and no channel_weights"
        )
    channels = (
        samples
        if isinstance(samples, ChannelNormalEquations)
        else group_normal_equations(model, samples, with_efforts)
    )
    fits: list[WholeBodyFit] = []

    def fit(weights: np.ndarray) -> np.ndarray:
        equations = NormalEquations(*weighted_normal_equations(channels, weights))
        fits.append(
            _fit_equations(
                model,
                equations,
                method,
                prior_weight,
                fits[-1].solution if fits else initvals,
                options,
                with_efforts,
                bounding_ellipsoids,
            )
        )
        return fits[-1].x

    _, weights = iterate_channel_weights(channels, fit, initial=initial_weights)
    last = fits[-1]
    rows = channels.n_samples * int(channels.channel_rows.sum())
    rms = float(np.sqrt(channels.squared_residuals(last.x).sum() / max(rows, 1)))
    return dataclasses.replace(
        last, residual_rms=rms, weights=weights, solve_time=sum(f.solve_time for f in fits)
    )


def _summed_equations(
    model: WholeBodyModel,
    samples: WholeBodySamples | NormalEquations | ChannelNormalEquations,
    with_efforts: bool,
    channel_weights: np.ndarray | None,
) -> NormalEquations:
    """The normal equations of ``samples`` (rows weighted by ``channel_weights``), or those
    given, summed over their groups."""
    if isinstance(samples, ChannelNormalEquations):
        return NormalEquations(*samples.total())
    if isinstance(samples, NormalEquations):
        return samples
    return normal_equations(model, samples, with_efforts, channel_weights)


def _fit_equations(
    model: WholeBodyModel,
    equations: NormalEquations,
    method: str,
    prior_weight: float,
    initvals: Solution | None,
    options: dict,
    with_efforts: bool,
    bounding_ellipsoids: list[np.ndarray | None] | None = None,
) -> WholeBodyFit:
    """One scaled solve of ``equations`` (see :func:`fit_whole_body`)."""
    if equations.n_rows == 0:
        raise ProblemError("no rows: no samples")
    problem, scales = whole_body_problem(
        model, equations, prior_weight, ellipsoids_for(method, bounding_ellipsoids)
    )
    solution = solve(problem, method, initvals, **options)
    x = scales * solution.x
    if method != "ols":  # round-off of the unscaling must not break the margin
        physical = (
            problem
            if bounding_ellipsoids is None
            else dataclasses.replace(problem, bounding_ellipsoids=bounding_ellipsoids)
        )  # x is physical, not scaled
        x = lift_to_margin(x, physical, CONSISTENCY_MARGIN)
    nb = N_BODY_PARAMS * model.n_bodies
    offsets = {
        frame: x[nb + N_WRENCH_CHANNELS * i : nb + N_WRENCH_CHANNELS * (i + 1)]
        for i, frame in enumerate(model.offset_sensors)
    }
    residual = max(float(x @ equations.gram @ x - 2 * equations.moment @ x + equations.yty), 0.0)
    return WholeBodyFit(
        x=x,
        thetas=x[:nb].reshape(-1, N_BODY_PARAMS),
        offsets=offsets,
        solution=solution,
        identify=functools.partial(identifiability, model, problem.gram, scales),
        residual_rms=float(np.sqrt(residual / equations.n_rows)),
        n_samples=equations.n_rows // max(len(model.channels(with_efforts)), 1),
        solve_time=float(solution.solve_time),
    )


@dataclass(frozen=True)
class PredictionErrors:
    """RMS errors of predicted rows per group of :meth:`WholeBodyModel.row_groups` (``base``,
    each internal sensor's frame, ``tau``): ``force`` (N) and ``torque`` (N m) over the wrench
    channels (``tau``: the joint torques in ``torque``, ``force`` NaN)."""

    force: dict[str, float]
    torque: dict[str, float]


def prediction_errors(
    model: WholeBodyModel, x: np.ndarray, samples: WholeBodySamples, with_efforts: bool = False
) -> PredictionErrors:
    """How well parameters ``x`` (p,) predict the measured wrenches (and torques) of
    ``samples``: the residuals of the rows, which for an internal sensor are its measured minus
    its predicted wrench, for the base the contacts' measured minus predicted total wrench."""
    return prediction_errors_of(model, [x], samples, with_efforts)[0]


def prediction_errors_of(
    model: WholeBodyModel,
    xs: Sequence[np.ndarray],
    samples: WholeBodySamples,
    with_efforts: bool = False,
) -> list[PredictionErrors]:
    """:func:`prediction_errors` of each parameter vector of ``xs`` (each (p,)) in one pass
    over the rows of ``samples`` (the rows cost far more than the products)."""
    channels = model.channels(with_efforts)
    X = np.stack([np.asarray(x, dtype=float) for x in xs], axis=1)  # (p, k)
    sums = np.zeros((len(channels), X.shape[1]))
    n = 0
    for start in range(0, len(samples), _CHUNK):
        chunk = samples.subset(slice(start, start + _CHUNK))
        for (rows, cols), (Yg, bg) in zip(
            model.row_groups(with_efforts), model.group_rows(chunk, with_efforts)
        ):
            residuals = Yg @ X[cols] - bg[..., None]  # (N, channels, k)
            sums[rows] += np.sum(residuals**2, axis=0)
        n += len(chunk)
    groups = dict.fromkeys(label.rsplit(".", 1)[0] for label in channels)
    errors = []
    for column in sums.T:
        force: dict[str, float] = {}
        torque: dict[str, float] = {}
        for group in groups:
            idx = [k for k, label in enumerate(channels) if label.rsplit(".", 1)[0] == group]
            if group == "tau":
                force[group] = float("nan")
                torque[group] = float(np.sqrt(column[idx].sum() / (n * len(idx))))
            else:
                force[group] = float(np.sqrt(column[idx[:3]].sum() / (3 * n)))
                torque[group] = float(np.sqrt(column[idx[3:]].sum() / (3 * n)))
        errors.append(PredictionErrors(force, torque))
    return errors


def prior_with_fitted_offsets(
    model: WholeBodyModel, samples: WholeBodySamples, with_efforts: bool = False
) -> np.ndarray:
    """(p,) the URDF's links (:attr:`WholeBodyModel.prior`) with the internal sensors' offsets
    fitted to ``samples`` by least squares: the URDF's best prediction when the offsets are not
    known (a fairer yardstick than zero offsets)."""
    x = model.prior
    offsets_only = dataclasses.replace(model, bodies=())
    if offsets_only.n_params:
        reduced = normal_equations(offsets_only, samples, with_efforts)
        x[N_BODY_PARAMS * model.n_bodies :] = np.linalg.lstsq(
            reduced.gram, reduced.moment, rcond=None
        )[0]
    return x


def holdout_comparison(
    model: WholeBodyModel,
    samples: WholeBodySamples,
    holdout: float,
    method: str = "lmi",
    prior_weight: float = DEFAULT_PRIOR_WEIGHT,
    with_efforts: bool = False,
    weighting: str = "none",
    bounding_ellipsoids: list[np.ndarray | None] | None = None,
) -> tuple[WholeBodyFit, dict[str, dict]]:
    """Fit ``method`` (with ``weighting``) and the OLS baseline (unweighted) on the first
    ``1 - holdout`` of ``samples``, predict the rest with them and with the URDF. Returns the fit
    and, per row group, the force and torque RMS errors ``{"fit": ..., "urdf": ..., "ols": ...,
    "urdf_offsets": ...}`` (N, N m; ``urdf``: zero offsets, ``urdf_offsets``: the sensors'
    offsets fitted to the same samples with the URDF's links)."""
    if not 0.0 < holdout < 1.0:
        raise ProblemError(f"holdout must be in (0, 1), got {holdout}")
    split = int(round(len(samples) * (1.0 - holdout)))
    train, test = samples.subset(slice(0, split)), samples.subset(slice(split, None))
    if len(train) == 0 or len(test) == 0:
        raise ProblemError(f"holdout {holdout} leaves no samples to fit or to test")
    if check_weighting(weighting) == "none":
        equations = normal_equations(model, train, with_efforts)
        fit = fit_whole_body(
            model,
            equations,
            method,
            prior_weight,
            with_efforts,
            bounding_ellipsoids=bounding_ellipsoids,
        )
    else:
        channels = group_normal_equations(model, train, with_efforts)
        fit = fit_whole_body(
            model,
            channels,
            method,
            prior_weight,
            with_efforts,
            weighting=weighting,
            bounding_ellipsoids=bounding_ellipsoids,
        )
        equations = NormalEquations(*channels.total())
    ols = fit_whole_body(model, equations, "ols", prior_weight, with_efforts)
    compared = {"fit": fit.x, "urdf": model.prior, "ols": ols.x}
    if model.offset_sensors:
        compared["urdf_offsets"] = prior_with_fitted_offsets(model, train, with_efforts)
    errors = dict(
        zip(compared, prediction_errors_of(model, list(compared.values()), test, with_efforts))
    )
    table = {
        group: {
            "force": {name: e.force[group] for name, e in errors.items()},
            "torque": {name: e.torque[group] for name, e in errors.items()},
            "ols_inconsistent_links": sum(
                not check_consistency(t).fully_consistent for t in ols.thetas
            ),
        }
        for group in errors["fit"].force
    }
    return fit, table
