"""The information already in a recording, as the prior of the next exciting-motion design
(``inertia-id excite --from``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pinocchio as pin

from inertia_id_ros.errors import DataError
from inertia_id_ros.formats.data import read_joint_file, read_payload_file, with_derivatives
from inertia_id_ros.motion.design import DEFAULT_WRENCH_NOISE_STD, sample_information


def recording_information(
    path: str,
    model: pin.Model,
    joint_names: Sequence[str],
    target: str,
    *,
    sensor_frame: str | None = None,
    noise_std: Sequence[float] = DEFAULT_WRENCH_NOISE_STD,
    half_width: float = 0.05,
) -> np.ndarray:
    """:func:`~inertia_id_ros.motion.design.sample_information` of a recording (NPZ or CSV,
    :mod:`inertia_id_ros.formats.data`) of the ``target``'s kind: the payload's wrench samples (each
    joint sample counted ``n_wrenches / n_joint_samples`` times) or the links' joint samples,
    columns picked by ``joint_names``; missing ``dq``/``ddq`` are differentiated over ``half_width``
    s. Raises :class:`~inertia_id_ros.errors.DataError` when the file lacks a joint."""
    if target == "payload":
        recording = read_payload_file(path)
        states = recording.joint_states
        weight = recording.wrenches.t.size / states.t.size
    else:
        states = read_joint_file(path)
        weight = 1.0
    missing = [name for name in joint_names if name not in states.joint_names]
    if missing:
        raise DataError(f"{path}: no samples of joint(s) {', '.join(missing)}")
    states = with_derivatives(states, half_width)
    columns = [states.joint_names.index(name) for name in joint_names]
    return sample_information(
        model,
        joint_names,
        target,
        states.q[:, columns],
        states.dq[:, columns],
        states.ddq[:, columns],
        sensor_frame=sensor_frame,
        noise_std=noise_std,
        weight=weight,
    )
