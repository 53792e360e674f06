"""Joints that stay still: a joint whose motion is at the level of its encoder's noise.

Teleoperation and demo logs often move two or three joints while the others sit within encoder
noise (1e-4 to 1e-3 rad). Their positions still wiggle, and a rank computed on such data counts
that noise as excitation: parameters only those joints' motion would separate look identifiable.
:func:`joint_motions` judges every joint of a run against its own noise, from its positions
alone (recorded velocities may be quantised firmware estimates):

- the position noise ``noise`` (rad or m): the robust spread of the fourth differences of the
  positions (white noise of standard deviation ``s`` gives ``70 s²``; a smooth motion hardly
  any at the usual rates), and at least a quantised encoder's step over ``sqrt(12)``
  (``quantum``: the smallest step between samples, when nearly every step is a multiple of it);
- the span (0.5 to 99.5 percentiles of the positions);
- the velocity over :data:`VELOCITY_BASE` s (differences of positions that far apart), its RMS
  and the RMS the noise alone gives it, ``sqrt(2) noise / VELOCITY_BASE``.

A joint is **still** when its span is at most :data:`STILL_SPAN` times its noise (its motion
stays within a few encoder quanta), or when its velocity's RMS is at most
:data:`STILL_VELOCITY` times the noise's (the velocity is noise). The identifiability of the
others is then judged with the still joints held at their mean position
(:func:`held_still`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from inertia_id_ros.chain.links import JointTorqueData, as_runs

STILL_SPAN = 20.0
"""A joint whose positions span at most this many times their noise is still: white noise
spans about 5 standard deviations between its 0.5 and 99.5 percentiles, a quantised encoder
flipping between two or three steps 3.5 to 7 times ``step / sqrt(12)``."""
STILL_VELOCITY = 3.0
"""A joint whose velocity's RMS (over :data:`VELOCITY_BASE`) is at most this many times the RMS
its position noise gives it is still: its velocity is noise."""
VELOCITY_BASE = 0.1
"""Time (s) over which a joint's velocity is taken for the stillness check (position
differences that far apart): about the derivative filters' width."""
QUANTISED_SHARE = 0.9
"""A joint's positions count as quantised when at least this share of its nonzero steps are
within 5 % of a multiple of the smallest one."""
_FOURTH_DIFFERENCE_VARIANCE = 70.0  # sum of the squared binomial coefficients 1, 4, 6, 4, 1
_MAD_TO_STD = 1.4826  # standard deviation of a normal distribution per median absolute deviation


@dataclass(frozen=True)
class JointMotion:
    """How much one joint moved in a run, against its noise: ``span`` (rad or m, 0.5 to 99.5
    percentiles), ``noise`` (standard deviation of the position noise, rad or m), ``quantum``
    (the encoder's step; 0: not quantised), ``velocity_rms`` and ``velocity_noise`` (rad/s or m/s,
    over :data:`VELOCITY_BASE`), ``still`` and why (``reason``: ``"span"``, ``"velocity"`` or
    ``""``)."""

    name: str
    span: float
    noise: float
    quantum: float
    velocity_rms: float
    velocity_noise: float
    still: bool
    reason: str = ""

    def as_json(self) -> dict[str, float | bool | str]:
        """The figures, for a result JSON."""
        return {
            "span": self.span,
            "noise": self.noise,
            "quantum": self.quantum,
            "velocity_rms": self.velocity_rms,
            "velocity_noise": self.velocity_noise,
            "still": self.still,
            "reason": self.reason,
        }


def position_noise(q: np.ndarray) -> tuple[float, float]:
    """``(noise, quantum)`` of one joint's positions ``q`` (N,): the position noise's standard
    deviation (module docstring) and the encoder's step (0 when not quantised)."""
    q = np.asarray(q, dtype=float)
    if q.size < 6:
        return 0.0, 0.0
    fourth = np.diff(q, 4)
    noise = _MAD_TO_STD * float(np.median(np.abs(fourth))) / np.sqrt(_FOURTH_DIFFERENCE_VARIANCE)
    steps = np.abs(np.diff(q))
    steps = steps[steps > 0]
    quantum = 0.0
    if steps.size:
        smallest = float(steps.min())
        multiples = steps / smallest
        if np.mean(np.abs(multiples - np.round(multiples)) <= 0.05) >= QUANTISED_SHARE:
            quantum = smallest
    return float(max(noise, quantum / np.sqrt(12.0))), quantum


def joint_motions(t: np.ndarray, q: np.ndarray, names: Sequence[str]) -> tuple[JointMotion, ...]:
    """How much each joint of one run moved against its noise (module docstring): ``t`` (N,) s,
    ``q`` (N, n) positions (rad or m) in ``names`` (n,) order."""
    t = np.asarray(t, dtype=float)
    q = np.atleast_2d(np.asarray(q, dtype=float))
    if q.shape[0] != t.size or q.shape[1] != len(names):
        raise ValueError(f"need t (N,) and q (N, {len(names)}), got {t.shape} and {q.shape}")
    step = float(np.median(np.diff(t))) if t.size > 1 else 0.0
    lag = max(1, int(round(VELOCITY_BASE / step))) if step > 0 else 1
    motions = []
    for name, column in zip(names, q.T):
        noise, quantum = position_noise(column)
        span = float(np.subtract(*np.percentile(column, [99.5, 0.5]))) if column.size else 0.0
        velocity_rms = velocity_noise = float("nan")
        if column.size > 2 * lag and step > 0:
            elapsed = t[lag:] - t[:-lag]
            velocity = (column[lag:] - column[:-lag]) / np.where(elapsed > 0, elapsed, np.inf)
            velocity_rms = float(np.sqrt(np.mean(velocity**2)))
            velocity_noise = float(np.sqrt(2.0) * noise / (lag * step))
        reason = (
            "span"
            if span <= STILL_SPAN * noise
            else "velocity"
            if velocity_rms <= STILL_VELOCITY * velocity_noise
            else ""
        )
        motions.append(
            JointMotion(
                name, span, noise, quantum, velocity_rms, velocity_noise, bool(reason), reason
            )
        )
    return tuple(motions)


def still_names(motions: Iterable[JointMotion]) -> tuple[str, ...]:
    """The names of the still joints among ``motions``."""
    return tuple(m.name for m in motions if m.still)


def held_still(
    data: JointTorqueData | Iterable[JointTorqueData], still: Sequence[str]
) -> list[JointTorqueData]:
    """The runs of ``data`` with the ``still`` joints (names of its columns) held at each run's
    mean position, at rest (velocities and accelerations zero); the efforts as recorded."""
    runs = as_runs(data)
    if not still:
        return runs
    held = []
    for run in runs:
        if run.joint_names is None:
            raise ValueError("held_still needs data with joint names")
        columns = [run.joint_names.index(name) for name in still]
        positions, velocities, accelerations = (
            np.array(a) for a in (run.positions, run.velocities, run.accelerations)
        )
        positions[:, columns] = positions[:, columns].mean(axis=0)
        velocities[:, columns] = 0.0
        accelerations[:, columns] = 0.0
        held.append(
            JointTorqueData(positions, velocities, accelerations, run.efforts, run.joint_names)
        )
    return held


def planar_text(still: Sequence[str]) -> str:
    """``"effectively planar: joints a, b still"``: the joints whose motion is noise."""
    return f"effectively planar: joint{'s' if len(still) > 1 else ''} {', '.join(still)} still"
