"""The width of the Coulomb sign ``tanh(dq / v)`` of a chain's joints, by cross-validation.

Friction does not jump at zero velocity (pre-sliding), and with noisy velocities an exact sign
flips at random near it: the width (one for every joint) is chosen by blocked cross-validation of
the consistent fit (:func:`select_coulomb_velocity`), one regressor pass serving every candidate
(:class:`CoulombWidthBlocks`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from inertia_id_ros.chain.link_fit import build_link_problem, time_blocks
from inertia_id_ros.chain.links import JointTorqueData, LinkModel, regression_system
from inertia_id_ros.core.covariance import ChannelNormalEquations
from inertia_id_ros.options import DEFAULT_PRIOR_WEIGHT
from inertia_id_ros.solvers import solve

DEFAULT_COULOMB_VELOCITIES = (0.0, 0.01, 0.02, 0.05, 0.1)
"""Candidate widths (rad/s) of the Coulomb sign for :func:`select_coulomb_velocity`."""


@dataclass(frozen=True)
class CoulombVelocitySelection:
    """Blocked cross-validation of the Coulomb sign's width: ``cv_rms[i]`` (N·m) the held-out
    torque RMS with ``widths[i]`` (rad/s); ``best`` the smallest."""

    widths: np.ndarray
    cv_rms: np.ndarray
    best: float

    def as_json(self) -> dict:
        """``{"value", "criterion", "candidates": [{"width", "cv_rms"}]}``."""
        return {
            "value": self.best,
            "criterion": "5-fold blocked cross-validation of the torques (consistent fit)",
            "candidates": [
                {"width": float(w), "cv_rms": float(r)} for w, r in zip(self.widths, self.cv_rms)
            ],
        }


def with_coulomb_velocity(model: LinkModel, width: float) -> LinkModel:
    """A copy of ``model`` whose every joint's Coulomb sign is ``tanh(dq / width)`` (rad/s;
    0: exact sign)."""
    drives = [dataclasses.replace(d, coulomb_velocity=width) for d in model.drives]
    return LinkModel(model.model, drives, model.robot_joint_names, model.coupling)


@dataclass(frozen=True)
class CoulombWidthBlocks:
    """Per-joint normal equations (:func:`~inertia_id_ros.chain.links.link_channels`) of each
    contiguous time block of one recording (:func:`~inertia_id_ros.chain.link_fit.time_blocks`),
    of the model's regressor extended by the Coulomb columns (the joints' and the coupled motors')
    of every candidate width (``widths`` (W,) rad/s): ``blocks`` over ``p + W c`` columns (``c``
    Coulomb terms), ``columns[i]`` (p,) the ones making the regressor with ``widths[i]``. One
    regressor pass serves every width, fold and prior weight."""

    widths: np.ndarray
    blocks: tuple[ChannelNormalEquations, ...]
    columns: tuple[np.ndarray, ...]
    n_parameters: int
    """``p``: the first ``p`` columns make the regressor with the model's own drives."""

    def folds(self, width: float | None = None) -> list[ChannelNormalEquations]:
        """The blocks' normal equations with the Coulomb ``width`` (one of :attr:`widths`;
        ``None``: the model's own drives)."""
        if width is None:
            return [block.select(np.arange(self.n_parameters)) for block in self.blocks]
        index = int(np.flatnonzero(self.widths == width)[0])
        return [block.select(self.columns[index]) for block in self.blocks]


def coulomb_width_blocks(
    model: LinkModel, data: JointTorqueData, widths: Sequence[float] = (), n_folds: int = 5
) -> CoulombWidthBlocks:
    """:class:`CoulombWidthBlocks` of ``data`` for the candidate ``widths`` (rad/s) in
    ``n_folds`` blocks."""
    candidates = np.asarray(widths, dtype=float)
    n, p = model.n_joints, model.n_parameters
    n_links = 10 * n
    coulomb = np.array(
        [
            i
            for i, name in enumerate(model.parameter_names)
            if i >= n_links and name.endswith(".coulomb")
        ],
        dtype=int,
    )
    candidate_models = [with_coulomb_velocity(model, float(width)) for width in candidates]
    columns = []
    for i in range(candidates.size):
        selected = np.arange(p)
        selected[coulomb] = p + i * coulomb.size + np.arange(coulomb.size)
        columns.append(selected)
    blocks = []
    for rows in time_blocks(data.n_samples, n_folds):
        d = model.in_joint_order(data.subset(rows))
        Y, y = regression_system(model, d)
        extra = [
            candidate.drive_regressor(d.velocities, d.accelerations)[:, :, coulomb - n_links]
            for candidate in candidate_models
        ]
        blocks.append(
            ChannelNormalEquations.from_samples(
                np.concatenate([Y.reshape(rows.size, n, p), *extra], axis=2),
                y.reshape(rows.size, n),
            )
        )
    return CoulombWidthBlocks(candidates, tuple(blocks), tuple(columns), p)


def select_coulomb_velocity(
    model: LinkModel,
    data: JointTorqueData | None = None,
    widths: Sequence[float] = DEFAULT_COULOMB_VELOCITIES,
    method: str = "lmi",
    prior_weight: float = DEFAULT_PRIOR_WEIGHT,
    n_folds: int = 5,
    blocks: CoulombWidthBlocks | None = None,
    **solver_options: object,
) -> CoulombVelocitySelection:
    """The Coulomb sign's width (one for every joint) with the smallest held-out torque RMS over
    ``n_folds`` contiguous time blocks of ``data`` (the ``method`` fit with ``prior_weight`` on
    the other blocks). ``blocks``: :func:`coulomb_width_blocks` of ``data`` when already
    computed (then its widths are the candidates and ``data`` is not needed)."""
    if blocks is None:
        if data is None:
            raise ValueError("select_coulomb_velocity needs data or blocks")
        blocks = coulomb_width_blocks(model, data, widths, n_folds)
    squared = np.zeros(blocks.widths.size)
    n_samples = sum(block.n_samples for block in blocks.blocks)
    for i, width in enumerate(blocks.widths):
        candidate = with_coulomb_velocity(model, float(width))
        folds = blocks.folds(width)
        total = ChannelNormalEquations.summed(folds)
        previous = None
        for held_out in folds:
            gram, moment, yty, n_rows = total.total()
            out_gram, out_moment, out_yty, out_rows = held_out.total()
            problem = build_link_problem(
                candidate,
                gram - out_gram,
                moment - out_moment,
                yty - out_yty,
                n_rows - out_rows,
                prior_weight,
            )
            previous = solve(problem, method=method, initvals=previous, **solver_options)
            squared[i] += float(held_out.squared_residuals(previous.x).sum())
    cv_rms = np.sqrt(squared / (n_samples * model.n_joints))
    return CoulombVelocitySelection(blocks.widths, cv_rms, float(blocks.widths[np.argmin(cv_rms)]))
