"""Joints held in a description (not in the log, at a fixed value): whether their motion would
change what a fit uses, for the fits to refuse them (:func:`rows_moved_by` for a whole-body
fit's rows, :func:`joints_coupled` for a chain's torques)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from inertia_id_ros.core.whole_body_model import WholeBodyModel, WholeBodySamples

if TYPE_CHECKING:
    import pinocchio as pin


def rows_moved_by(
    model: WholeBodyModel,
    samples: WholeBodySamples,
    joints: Sequence[str],
    with_efforts: bool = False,
) -> list[str]:
    """The channels (:meth:`~inertia_id_ros.core.whole_body_model.WholeBodyModel.channels`) whose
    rows change when ``joints`` move: their velocities and accelerations set to 1 on a few samples
    instead of 0. A held joint (not logged) must move none of the rows a fit uses."""
    index = [model.joint_names.index(j) for j in joints]
    if not index:
        return []
    probe = samples.subset(slice(0, min(3, len(samples))))
    moved = WholeBodySamples(
        probe.q, probe.dq.copy(), probe.ddq.copy(), probe.base, probe.wrenches, probe.efforts
    )
    moved.dq[:, index] += 1.0
    moved.ddq[:, index] += 1.0
    (Y0, b0, channels), (Y1, b1, _) = (model.rows(s, with_efforts) for s in (probe, moved))
    n, c = len(probe), len(channels)
    changed = (
        np.abs(Y1 - Y0).reshape(n, c, -1).max(axis=(0, 2))
        + np.abs(b1 - b0).reshape(n, c).max(axis=0)
    ) > 1e-9
    return [channel for channel, hit in zip(channels, changed) if hit]


def joints_coupled(
    model: pin.Model, positions: Mapping[str, float], fitted: Sequence[str], held: Sequence[str]
) -> list[str]:
    """The ``held`` joints whose motion enters the torques of the ``fitted`` joints: a nonzero
    block ``M[fitted, held]`` of the joint-space inertia matrix (``pin.crba``) at ``positions``
    (name -> rad or m; the others neutral). Joints on other branches (another arm) are not
    coupled."""
    import pinocchio as pin

    from inertia_id_ros.core.robots import configuration, joint_id

    data = model.createData()
    inertia = pin.crba(model, data, configuration(model, positions))
    rows = [model.joints[joint_id(model, j)].idx_v for j in fitted]
    scale = max(float(np.abs(np.diag(inertia)).max()), 1e-12)
    return [
        j
        for j in held
        if np.abs(inertia[rows, model.joints[joint_id(model, j)].idx_v]).max() > 1e-9 * scale
    ]
