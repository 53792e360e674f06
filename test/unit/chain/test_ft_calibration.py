"""In-situ F/T calibration from arrays (:mod:`inertia_id_ros.chain.ft_calibration`): gains,
cross-coupling and offsets of simulated sensors recovered within their standard errors; a bad
current calibration refused."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_id_ros.chain.ft_calibration import (
    fit_ft_calibration,
    held_out_errors,
    smooth_readings,
)
from inertia_id_ros.errors import ProblemError
from inertia_id_ros.sim.ft_errors import draw_drift

N = 3000


def _sensor(
    seed: int = 0, coupled: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(readings, reference, true matrix, true offset)``: a drifted sensor (gains, 3 %
    cross-coupling unless not ``coupled``, offsets of hundreds of N) reading an exciting wrench,
    the reference with white noise (N, N m)."""
    rng = np.random.default_rng(seed)
    t = np.arange(N) / 100.0
    phases = rng.uniform(0, 2 * np.pi, size=(6, 3))
    freqs = np.array([0.11, 0.23, 0.37])
    scale = np.array([40.0, 40.0, 80.0, 5.0, 5.0, 2.0])
    wrench = scale * np.stack(
        [np.sin(2 * np.pi * freqs * t[:, None] + p).sum(axis=1) for p in phases], axis=1
    )
    drift = draw_drift(["s"], rng)[0]
    gain = drift.gain if coupled else np.diag(np.diag(drift.gain))
    readings = wrench @ gain.T + drift.offset
    noise = np.array([0.5, 0.5, 0.5, 0.05, 0.05, 0.05])
    reference = wrench + rng.normal(size=wrench.shape) * noise
    inverse = np.linalg.inv(gain)
    return readings, reference, inverse, -inverse @ drift.offset


def test_full_matrix_and_offset_recovered_within_standard_errors():
    readings, reference, matrix, offset = _sensor()
    cal = fit_ft_calibration(readings, reference)
    assert cal.matrix[0, 0] == pytest.approx(1 / 2.65, rel=0.05)  # the 2.65x fx undone
    assert np.all(np.abs(cal.matrix - matrix) < 4.5 * cal.matrix_std + 1e-9)
    assert np.all(np.abs(cal.offset - offset) < 4.5 * cal.offset_std + 1e-9)
    assert np.all(cal.matrix_std < 0.05)  # the errors are informative, not huge
    assert np.allclose(cal.apply(readings[:5]), readings[:5] @ cal.matrix.T + cal.offset)


def test_gains_only_recover_the_diagonal_and_regularise_toward_the_current():
    readings, reference, matrix, _ = _sensor(1, coupled=False)
    cal = fit_ft_calibration(readings, reference, kind="gains")
    assert np.allclose(cal.matrix, np.diag(np.diag(cal.matrix)))
    assert np.all(np.abs(np.diag(cal.matrix - matrix)) < 4.5 * np.diag(cal.matrix_std))
    readings[:, 5], reference[:, 5] = 3.0, 0.0  # tz not excited: its gain is not calibrated
    still = fit_ft_calibration(readings, reference, kind="gains")
    assert still.matrix[5, 5] == 1.0 and still.offset[5] == pytest.approx(-3.0)


def test_held_out_errors_beat_the_current_calibration_with_fitted_offsets():
    readings, reference, _, _ = _sensor(2)
    half = N // 2
    readings = smooth_readings(readings, 0.01, 0.05)
    cal = fit_ft_calibration(readings[:half], reference[:half])
    errors = held_out_errors(
        cal, (readings[:half], reference[:half]), (readings[half:], reference[half:])
    )
    assert np.all(errors.ratio < 0.5)


@pytest.mark.parametrize(
    "matrix, message",
    [
        (np.eye(5), "must be 6x6"),
        (np.zeros((6, 6)), "singular"),
        (np.full((6, 6), np.nan), "non-finite"),
    ],
)
def test_a_bad_current_calibration_is_refused(matrix, message):
    readings, reference, _, _ = _sensor()
    with pytest.raises(ProblemError, match=message):
        fit_ft_calibration(readings, reference, current=matrix)
