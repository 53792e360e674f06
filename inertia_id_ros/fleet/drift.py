"""Drift of a fleet's parameters, judged with their standard errors (``inertia-id fleet drift``).

Each robot's history of each parameter (the payload's per tool carried, the others over all runs)
is pooled: the inverse-variance weighted mean of its runs, its standard error inflated by the
runs' scatter when they disagree more than their errors say (the Birge ratio); the pooled value
over all runs is stored (``pooled``), and over the first ``reference_runs`` runs it is the
reference that later runs are tested against. Parameters a run cannot identify alone (no
standard error) are pooled by their runs' scatter and not tested.

The test: each later run's standardized residual ``z = (x - x_ref) / sqrt(s² + s_ref²)`` (its
standard error ``s``, the reference's ``s_ref``, both inflated as above) feeds a two-sided CUSUM
(Page 1954) ``S⁺ = max(0, S⁺ + z - k)``, ``S⁻ = max(0, S⁻ - z - k)`` with slack ``k`` and
threshold ``h`` (in standard errors); an alarm when either passes ``h``. The change began at the
run after the CUSUM last left zero; its size is the mean of the runs since then minus the
reference. The false-alarm rate of a drift-free history whose errors are right is
:func:`false_alarm_rate` (Monte Carlo of the same test)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from inertia_id_ros.fleet.store import History, Store
from inertia_id_ros.fleet.tasks import PAYLOAD_PREFIX

if TYPE_CHECKING:
    import numpy as np

ALL_TOOLS = "*"
"""The ``tool`` of a parameter of the robot itself (pooled over every run)."""


@dataclass(frozen=True)
class DriftOptions:
    """The drift test's settings: the first ``reference_runs`` runs of a history are its
    reference; the CUSUM's ``slack`` ``k`` and ``threshold`` ``h`` (standard errors)."""

    reference_runs: int = 5
    slack: float = 2.0
    threshold: float = 4.0


@dataclass(frozen=True)
class Alarm:
    """A drift: ``robot``, ``parameter``, ``tool`` (:data:`ALL_TOOLS` for the robot's own), the
    run and time it ``began`` (``began_run``), the run and time it was ``detected``
    (``detected_run``), its ``size`` (SI units of the parameter) and ``z`` (size over the standard
    error of the difference), the ``reference`` value and its standard error ``reference_std``."""

    robot: str
    parameter: str
    tool: str
    began_run: str
    began: str
    detected_run: str
    detected: str
    size: float
    z: float
    reference: float
    reference_std: float


def pool(values: np.ndarray, stds: np.ndarray) -> tuple[float, float]:
    """``(value, standard error)`` pooled from runs' ``values`` with standard errors ``stds``:
    inverse-variance weighted, inflated by the Birge ratio when the runs scatter more than their
    errors; without finite positive errors, the mean and the scatter's standard error."""
    import numpy as np

    n = len(values)
    if n and np.all(np.isfinite(stds)) and np.all(stds > 0):
        w = 1.0 / stds**2
        mean = float(np.sum(w * values) / np.sum(w))
        std = float(1.0 / np.sqrt(np.sum(w)))
        if n > 1:
            birge = np.sqrt(np.sum(w * (values - mean) ** 2) / (n - 1))
            std *= max(1.0, float(birge))
        return mean, std
    mean = float(np.mean(values)) if n else float("nan")
    return mean, float(np.std(values, ddof=1) / np.sqrt(n)) if n > 1 else float("nan")


def segments(history: History) -> list[tuple[str, list[int]]]:
    """``(tool, run indices)`` of ``history`` compared together: per tool for the payload's
    parameters, all runs for the robot's own."""
    if not history.name.startswith(PAYLOAD_PREFIX):
        return [(ALL_TOOLS, list(range(len(history.values))))]
    tools: dict[str, list[int]] = {}
    for i, tool in enumerate(history.tools):
        tools.setdefault(tool, []).append(i)
    return list(tools.items())


def pool_robot(store: Store, robot: str) -> None:
    """Store ``robot``'s pooled estimates (each parameter, per segment, over all its runs)."""
    import numpy as np

    rows = []
    for history in store.histories(robot):
        values, stds = np.array(history.values), np.array(history.stds)
        for tool, index in segments(history):
            value, std = pool(values[index], stds[index])
            rows.append((tool, history.name, value, std, len(index)))
    store.record_pooled(robot, rows)


def cusum(z: Sequence[float], slack: float, threshold: float) -> tuple[int, int] | None:
    """``(began, detected)`` indices of the first alarm of the two-sided CUSUM of ``z``, or
    ``None``."""
    high = low = 0.0
    high_start = low_start = 0
    for i, value in enumerate(z):
        if high == 0.0:
            high_start = i
        if low == 0.0:
            low_start = i
        high = max(0.0, high + value - slack)
        low = max(0.0, low - value - slack)
        if high > threshold:
            return high_start, i
        if low > threshold:
            return low_start, i
    return None


def history_alarm(history: History, options: DriftOptions = DriftOptions()) -> list[Alarm]:
    """The alarms of one parameter's ``history`` (at most one per segment)."""
    import numpy as np

    values, stds = np.array(history.values), np.array(history.stds)
    alarms = []
    for tool, index in segments(history):
        reference, rest = index[: options.reference_runs], index[options.reference_runs :]
        ref_stds = stds[reference]
        if not rest or not np.all(np.isfinite(stds[index])) or not np.all(stds[index] > 0):
            continue
        ref, ref_std = pool(values[reference], ref_stds)
        inflation = ref_std * np.sqrt(np.sum(1.0 / ref_stds**2))  # the Birge ratio, >= 1
        z = (values[rest] - ref) / np.sqrt((stds[rest] * inflation) ** 2 + ref_std**2)
        found = cusum(z.tolist(), options.slack, options.threshold)
        if found is None:
            continue
        began, detected = found
        since = [rest[i] for i in range(began, detected + 1)]
        size = float(np.mean(values[since]) - ref)
        alarms.append(
            Alarm(
                history.robot,
                history.name,
                tool,
                history.runs[rest[began]],
                history.times[rest[began]],
                history.runs[rest[detected]],
                history.times[rest[detected]],
                size,
                float(np.mean(z[began : detected + 1])),
                ref,
                ref_std,
            )
        )
    return alarms


def detect_drift(store: Store, options: DriftOptions = DriftOptions()) -> list[Alarm]:
    """Every alarm of the fleet in ``store``, by robot and parameter."""
    alarms = []
    for robot in store.robots():
        for history in store.histories(robot):
            alarms += history_alarm(history, options)
    return alarms


def false_alarm_rate(
    options: DriftOptions = DriftOptions(), runs: int = 20, trials: int = 200_000, seed: int = 0
) -> float:
    """The probability that a drift-free history of ``runs`` runs with right standard errors
    raises an alarm (Monte Carlo over ``trials`` histories of unit-normal values, the same
    reference and test as :func:`history_alarm`)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n_ref = options.reference_runs
    x = rng.standard_normal((trials, runs))
    ref = x[:, :n_ref].mean(axis=1)
    birge = np.maximum(1.0, np.sqrt(np.sum((x[:, :n_ref] - ref[:, None]) ** 2, 1) / (n_ref - 1)))
    ref_std = birge / np.sqrt(n_ref)
    z = (x[:, n_ref:] - ref[:, None]) / np.sqrt(birge[:, None] ** 2 + ref_std[:, None] ** 2)
    high = np.zeros(trials)
    low = np.zeros(trials)
    alarmed = np.zeros(trials, dtype=bool)
    for column in z.T:
        high = np.maximum(0.0, high + column - options.slack)
        low = np.maximum(0.0, low - column - options.slack)
        alarmed |= (high > options.threshold) | (low > options.threshold)
    return float(alarmed.mean())
