"""Matching an unloaded run to a loaded one (:func:`~inertia_id_ros.chain.payload_from_torques.
difference_runs`): the time shift is searched as wide as the runs overlap, not within a fixed
second; of repeats of a periodic motion the nearest is taken."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_id_ros.chain.links import JointTorqueData
from inertia_id_ros.chain.payload_from_torques import difference_runs


def motion(t: np.ndarray, period: float | None = None) -> JointTorqueData:
    """Two joints' positions (rad) along a non-repeating chirp (or with ``period`` s)."""
    if period is None:
        q = np.column_stack([np.sin(0.3 * t + 0.02 * t**2), np.cos(0.5 * t + 0.01 * t**2)])
    else:
        w = 2.0 * np.pi / period
        q = np.column_stack([np.sin(w * t), np.cos(2.0 * w * t)])
    zeros = np.zeros_like(q)
    return JointTorqueData(q, zeros, zeros, q + 1.0, ("a", "b"))


@pytest.mark.parametrize(("loaded_start", "unloaded_start"), [(1.17, 0.0), (0.0, 1.17), (4.5, 0.0)])
def test_runs_started_seconds_apart_are_matched(loaded_start: float, unloaded_start: float) -> None:
    t = np.arange(0.0, 12.0, 0.01)
    loaded, unloaded = motion(t + loaded_start), motion(t + unloaded_start)
    difference, alignment = difference_runs(t + 50.0, loaded, t, unloaded)
    assert alignment.shift == pytest.approx(loaded_start - unloaded_start, abs=1e-9)
    assert alignment.position_rms < 1e-9
    assert np.allclose(difference.efforts, 0.0, atol=1e-9)


def test_of_repeats_of_a_periodic_motion_the_nearest_shift() -> None:
    t = np.arange(0.0, 20.0, 0.01)
    _, alignment = difference_runs(t[30:], motion(t[30:], 2.0), t, motion(t, 2.0))
    assert alignment.shift == pytest.approx(0.3, abs=1e-9)
