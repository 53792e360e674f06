"""The information already in a recording, as the prior of the next exciting-motion design
(``inertia-id excite --from``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pinocchio as pin

from inertia_id_ros.errors import DataError
from inertia_id_ros.formats.data import (
    JointStates,
    read_joint_file,
    read_payload_file,
    with_derivatives,
)
from inertia_id_ros.motion.objectives import ExcitationObjective, ObjectiveSettings


def _wrench_samples(path: str | Path) -> tuple[JointStates, float]:
    """The joint states of an F/T recording, each counted once per wrench sample."""
    recording = read_payload_file(path)
    states = recording.joint_states
    return states, recording.wrenches.t.size / states.t.size


def _effort_samples(path: str | Path) -> tuple[JointStates, float]:
    """The joint states of a joint-torque recording, each counted once."""
    return read_joint_file(path), 1.0


RECORDED_SAMPLES: dict[str, Callable[[str | Path], tuple[JointStates, float]]] = {
    "wrench": _wrench_samples,
    "effort": _effort_samples,
}
"""By the signal an objective's rows predict (:attr:`ExcitationObjective.measured`): the joint
states of a recording of it and how many times each counts."""


def recording_information(
    path: str | Path,
    model: pin.Model,
    joint_names: Sequence[str],
    objective: type[ExcitationObjective],
    settings: ObjectiveSettings = ObjectiveSettings(),
    *,
    half_width: float = 0.05,
) -> np.ndarray:
    """:meth:`~inertia_id_ros.motion.objectives.ExcitationObjective.sample_information` of the
    ``objective`` of a recording (NPZ or CSV, :mod:`inertia_id_ros.formats.data`) of the signal it
    predicts (its ``measured``: the wrench samples, each joint sample counted
    ``n_wrenches / n_joint_samples`` times, or the joint torques), columns picked by
    ``joint_names``; missing ``dq``/``ddq`` are differentiated over ``half_width`` s. Raises
    :class:`~inertia_id_ros.errors.DataError` when the file lacks a joint."""
    states, weight = RECORDED_SAMPLES[objective.measured](path)
    missing = [name for name in joint_names if name not in states.joint_names]
    if missing:
        raise DataError(f"{path}: no samples of joint(s) {', '.join(missing)}")
    states = with_derivatives(states, half_width)
    assert states.dq is not None and states.ddq is not None  # with_derivatives fills them
    columns = [states.joint_names.index(name) for name in joint_names]
    samples = (states.q[:, columns], states.dq[:, columns], states.ddq[:, columns])
    return objective.sample_information(model, tuple(joint_names), samples, settings, weight)
