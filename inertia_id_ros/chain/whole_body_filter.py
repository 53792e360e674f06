"""The derivative filter of a whole-body fit, chosen by cross-validation on held-out time blocks
(as :func:`~inertia_id_ros.chain.differentiation.select_differentiation` does for a chain's links).

Each candidate half-width differentiates the joint states (and so builds the rows) its own way;
:func:`block_cv_error` scores one candidate's rows: the training samples cut into contiguous
blocks, each predicted by the fit (unconstrained least squares with the fit's pull toward the
URDF: a fast stand-in for the consistent fit) on the other blocks. The candidate with the least
held-out error per row wins (:func:`choose_filter`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from inertia_id_ros.chain.whole_body_fit import (
    NormalEquations,
    normal_equations,
    whole_body_problem,
)
from inertia_id_ros.core.whole_body_model import WholeBodyModel, WholeBodySamples
from inertia_id_ros.solvers.ols import unconstrained_minimizer

CV_FOLDS = 3
"""Contiguous time blocks of the cross-validation."""
CV_MAX_SAMPLES = 1500
"""At most this many samples (evenly spaced over the training part) score a candidate."""


@dataclass(frozen=True)
class FilterChoice:
    """The chosen ``half_width`` (s), the ``runner_up`` (``None`` with one candidate) and each
    candidate's held-out mean squared row error (``scores``, half-width -> N² or N² m²)."""

    half_width: float
    runner_up: float | None
    scores: dict[float, float]


def block_cv_error(
    model: WholeBodyModel,
    samples: WholeBodySamples,
    prior_weight: float,
    with_efforts: bool = False,
    folds: int = CV_FOLDS,
    max_samples: int = CV_MAX_SAMPLES,
) -> float:
    """The mean squared held-out row error of ``samples`` cut into ``folds`` contiguous blocks,
    each predicted by the unconstrained fit (``ols``, ``prior_weight``) on the others."""
    step = max(len(samples) // max_samples, 1)
    sub = samples.subset(slice(0, None, step))
    edges = np.linspace(0, len(sub), folds + 1).astype(int)
    blocks = [
        normal_equations(model, sub.subset(slice(a, b)), with_efforts)
        for a, b in zip(edges[:-1], edges[1:])
    ]
    total, rows = 0.0, 0
    for k, held in enumerate(blocks):
        others = [b for i, b in enumerate(blocks) if i != k]
        train = NormalEquations(
            np.sum([b.gram for b in others], axis=0),
            np.sum([b.moment for b in others], axis=0),
            float(sum(b.yty for b in others)),
            sum(b.n_rows for b in others),
        )
        problem, scales = whole_body_problem(model, train, prior_weight)
        x = scales * unconstrained_minimizer(problem)[0]
        total += max(float(x @ held.gram @ x - 2 * held.moment @ x + held.yty), 0.0)
        rows += held.n_rows
    return total / max(rows, 1)


def choose_filter(
    rows_of: Callable[[float], tuple[WholeBodyModel, WholeBodySamples]],
    candidates: Sequence[float],
    period: float,
    prior_weight: float,
    with_efforts: bool = False,
) -> FilterChoice:
    """The half-width of ``candidates`` (s) whose rows (``rows_of(half_width)``: the model and
    the training samples) leave the least :func:`block_cv_error`; candidates under two sample
    ``period`` s are skipped (the largest kept when all are)."""
    kept = [h for h in candidates if h >= 2 * period] or [max(candidates)]
    scores = {h: block_cv_error(*rows_of(h), prior_weight, with_efforts) for h in kept}
    ranked = sorted(scores, key=scores.__getitem__)
    return FilterChoice(ranked[0], ranked[1] if len(ranked) > 1 else None, scores)
