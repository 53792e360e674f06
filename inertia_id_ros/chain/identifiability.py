"""What a recording determines of a chain's links and drives, judged against its noise.

Two steps, each against the recording's own noise:

1. the joints whose motion is noise (:mod:`inertia_id_ros.chain.stillness`) are held still: the
   base parameters (:func:`~inertia_id_ros.chain.base_parameters.base_parameters`) are those of
   the data with them at rest, so their noise does not count as excitation;
2. every parameter the data then fix individually is labelled by its standard error
   (:mod:`inertia_id_ros.core.significance`): the sandwich covariance of the fit from each
   joint's residual variance (:func:`~inertia_id_ros.core.covariance.parameter_covariance`,
   unconstrained: what the data say, not the consistency constraint).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from inertia_id_ros.chain.base_parameters import (
    BaseParameters,
    base_parameters,
    base_parameters_and_channels,
)
from inertia_id_ros.chain.links import JointTorqueData, LinkModel, as_runs
from inertia_id_ros.chain.stillness import JointMotion, held_still, still_names
from inertia_id_ros.core.covariance import parameter_covariance
from inertia_id_ros.core.significance import Determination, determination


@dataclass(frozen=True)
class LinkIdentifiability:
    """What the data determine of a link model's parameters: ``base`` the base parameters with
    the still joints held (:func:`link_identifiability`), the ``motions`` of the joints (empty:
    not judged), each parameter's ``determination`` and, when joints are still,
    ``rank_with_still`` the rank counting their noise as motion (``None`` otherwise)."""

    base: BaseParameters
    motions: tuple[JointMotion, ...]
    determination: Determination
    rank_with_still: int | None = None

    @property
    def still(self) -> tuple[str, ...]:
        """The joints whose motion is noise, held still."""
        return still_names(self.motions)


def link_identifiability(
    model: LinkModel,
    data: JointTorqueData | Iterable[JointTorqueData],
    x: np.ndarray,
    motions: Sequence[JointMotion] = (),
) -> LinkIdentifiability:
    """What ``data`` (one run or several) determine of ``model``'s parameters, and how well the
    estimate ``x`` (p,) is determined (module docstring); ``motions``: the joints' motions
    (:func:`~inertia_id_ros.chain.stillness.joint_motions`), the still ones held."""
    still = still_names(motions)
    runs = [
        run if run.joint_names is not None else replace(run, joint_names=model.joint_names)
        for run in as_runs(data)
    ]
    bp, channels = base_parameters_and_channels(model, held_still(runs, still))
    covariance = parameter_covariance(channels, x, n_bodies=model.n_joints, constrained=False)
    return LinkIdentifiability(
        bp,
        tuple(motions),
        determination(model.parameter_names, x, covariance.matrix, bp.unidentifiable, bp.no_effect),
        base_parameters(model, runs).rank if still else None,
    )
