"""Which parameters an estimate determines, judged by their standard errors.

A parameter the data separate from the others (not in the null space of the regressor) is still
not *identified* unless its standard error allows it: ``|t| = |x_i| / std_i`` at least
:data:`IDENTIFIED_T` (three standard errors from zero). Each parameter gets one label:

- ``identified``: individually determined, ``|t| >= IDENTIFIED_T``;
- ``poorly determined``: individually determined by the data's rank, but ``|t| <
  IDENTIFIED_T``: the value is within three standard errors of zero (noise, or a constraint or
  prior, decided it as much as the data);
- ``prior only``: the data do not fix it individually (it moves only in combinations, or not at
  all): the prior or the constraints decide it;
- ``no effect``: it acts on no measurement at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

IDENTIFIED_T = 3.0
"""A parameter is identified when its value is at least this many standard errors from zero."""
IDENTIFIED, POORLY_DETERMINED, PRIOR_ONLY, NO_EFFECT = (
    "identified",
    "poorly determined",
    "prior only",
    "no effect",
)
PARAMETER_LABELS = (IDENTIFIED, POORLY_DETERMINED, PRIOR_ONLY, NO_EFFECT)
"""The labels of :class:`Determination`, from best to worst."""


@dataclass(frozen=True)
class Determination:
    """Per parameter ``names`` (p,): the ``values`` (p,), standard errors ``std`` (p,; NaN
    where the data do not fix the parameter) and ``labels`` (p,) of :data:`PARAMETER_LABELS`."""

    names: tuple[str, ...]
    values: np.ndarray
    std: np.ndarray
    labels: tuple[str, ...]

    @property
    def t(self) -> np.ndarray:
        """(p,) ``|value| / std`` (NaN where ``std`` is)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.abs(self.values) / self.std

    def named(self, label: str) -> tuple[str, ...]:
        """The parameters labelled ``label``."""
        return tuple(name for name, own in zip(self.names, self.labels) if own == label)

    def counts(self) -> dict[str, int]:
        """``{label: number of parameters}`` over :data:`PARAMETER_LABELS`."""
        return {label: len(self.named(label)) for label in PARAMETER_LABELS}

    def as_json(self) -> dict[str, object]:
        """``{"t_threshold", "identified", "poorly_determined", "t"}``: the parameters
        identified and poorly determined by name, and the ``|t|`` of each of them."""
        t = self.t
        return {
            "t_threshold": IDENTIFIED_T,
            "identified": list(self.named(IDENTIFIED)),
            "poorly_determined": list(self.named(POORLY_DETERMINED)),
            "t": {
                name: float(value)
                for name, value, label in zip(self.names, t, self.labels)
                if label in (IDENTIFIED, POORLY_DETERMINED)
            },
        }


def determination(
    names: Sequence[str],
    values: np.ndarray,
    covariance: np.ndarray,
    unidentifiable: Iterable[str] = (),
    no_effect: Iterable[str] = (),
) -> Determination:
    """The :class:`Determination` of ``values`` (p,) named ``names`` with ``covariance`` (p, p)
    (SI units squared): ``unidentifiable`` the parameters the data cannot fix individually
    (``prior only``), ``no_effect`` those that act on nothing."""
    values = np.asarray(values, dtype=float)
    std = np.sqrt(np.clip(np.diag(np.asarray(covariance, dtype=float)), 0.0, None))
    free, idle = set(unidentifiable), set(no_effect)
    labels, stds = [], []
    for name, value, s in zip(names, values, std):
        if name in idle:
            labels.append(NO_EFFECT)
            stds.append(np.nan)
        elif name in free:
            labels.append(PRIOR_ONLY)
            stds.append(np.nan)
        else:
            identified = abs(value) > 0 and abs(value) >= IDENTIFIED_T * s
            labels.append(IDENTIFIED if identified else POORLY_DETERMINED)
            stds.append(s)
    return Determination(tuple(names), values, np.array(stds), tuple(labels))
