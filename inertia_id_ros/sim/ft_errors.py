"""Simulated F/T calibration errors: a factory calibration drifted after years in a robot.

A sensor's logged wrench is ``G (w + o_s + n) + o_c`` with ``w`` the true wrench, ``o_s`` and
``n`` the simulator's offset and noise (:class:`~inertia_id_ros.sim.whole_body_simulator.
NoiseModel`), ``G`` (6, 6) gains on the diagonal and cross-coupling off it, ``o_c`` (6,) a large
offset (N, N m). The calibration that undoes it maps the logged wrench ``r`` to ``w``:
``w = G⁻¹ r − G⁻¹ o_c − o_s`` (the truth a calibration is checked against).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DRIFT_GAINS = (0.6, 0.9)
"""Range of the drifted gains of every axis (real humanoid leg sensors: 0.6–0.9)."""
DRIFT_FIRST_FX_GAIN = 2.65
"""The first drifted sensor's fx gain (one real leg sensor's fx read 2.65 × the model's)."""
DRIFT_COUPLING = 0.03
"""Cross-coupling terms drawn within ± this share of the coupled axes' gains' mean."""
DRIFT_OFFSET = (300.0, 300.0, 300.0, 10.0, 10.0, 10.0)
"""Offsets drawn within ± these (N, N m; raw offsets of real leg sensors reach about 300 N)."""


@dataclass(frozen=True)
class SensorDrift:
    """One sensor's error: ``gain`` (6, 6) ``G`` and ``offset`` (6,) ``o_c`` (module docstring)."""

    frame: str
    gain: np.ndarray
    offset: np.ndarray


def draw_drift(frames: Sequence[str], rng: np.random.Generator) -> list[SensorDrift]:
    """A drift per sensor of ``frames``: gains within :data:`DRIFT_GAINS` (the first sensor's fx
    :data:`DRIFT_FIRST_FX_GAIN`), cross-coupling within :data:`DRIFT_COUPLING`, offsets within
    :data:`DRIFT_OFFSET`."""
    drifts = []
    for i, frame in enumerate(frames):
        gains = rng.uniform(*DRIFT_GAINS, size=6)
        if i == 0:
            gains[0] = DRIFT_FIRST_FX_GAIN
        gain = np.diag(gains)
        coupling = rng.uniform(-DRIFT_COUPLING, DRIFT_COUPLING, size=(6, 6)) * np.mean(gains)
        gain += coupling * (1.0 - np.eye(6))
        offset = rng.uniform(-1.0, 1.0, size=6) * np.array(DRIFT_OFFSET)
        drifts.append(SensorDrift(frame, gain, offset))
    return drifts


def apply_drift(data: dict[str, np.ndarray], drifts: Sequence[SensorDrift]) -> None:
    """Drift the logged ``ft_wrench`` of a whole-body recording ``data`` (its NPZ keys) in place,
    and add the truth: ``true_ft_calibration`` (S, 6, 6) and ``true_ft_calibration_offset``
    (S, 6) that map the logged wrench back to the true one (identity and the simulator's offset
    undone for sensors without drift)."""
    frames = [str(f) for f in data["ft_frames"]]
    n_sensors = len(frames)
    matrices = np.tile(np.eye(6), (n_sensors, 1, 1))
    offsets = -np.asarray(data["true_ft_offset"], dtype=float).copy()
    wrench = np.array(data["ft_wrench"], dtype=float)
    for drift in drifts:
        k = frames.index(drift.frame)
        wrench[:, k] = wrench[:, k] @ drift.gain.T + drift.offset
        inverse = np.linalg.inv(drift.gain)
        matrices[k] = inverse
        offsets[k] = -inverse @ drift.offset - data["true_ft_offset"][k]
    data["ft_wrench"] = wrench
    data["true_ft_calibration"] = matrices
    data["true_ft_calibration_offset"] = offsets
