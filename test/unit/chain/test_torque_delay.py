"""The torques' delay behind the motion: estimated on the training data by fit-links, applied to
the held-out data by validate."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_id_ros.chain.differentiation import SOURCE_VELOCITIES, DifferentiationFilter
from inertia_id_ros.chain.identify import identify_links
from inertia_id_ros.chain.torque_delay import estimate_torque_delay
from inertia_id_ros.formats.data import JointStates, with_derivatives
from inertia_id_ros.sim.torques import panda_arm_recording

FILTER = DifferentiationFilter(SOURCE_VELOCITIES, 0.05, 2, 1e-3)


@pytest.fixture(scope="module")
def recording():
    """6 s of the simulated Panda arm at 1 kHz: noisy positions, velocities, torques."""
    return panda_arm_recording(duration=6.0, seed=5, max_frequency=1.5)


@pytest.mark.parametrize("lag_samples", [0, 8])
def test_estimated_delay_recovers_the_lag_of_the_torques(recording, lag_samples: int):
    """Torques recorded ``lag_samples`` ms after the motion that caused them: the estimate is
    within a millisecond of it, and explains the data better than no delay when there is one."""
    rec, n = recording, recording.t.size
    rows = slice(lag_samples, n)
    effort = rec.effort[: n - lag_samples]  # effort at row k belongs to the motion at k - lag
    delay = estimate_torque_delay(
        rec.simulator.links,
        rec.t[rows],
        rec.q[rows],
        rec.dq[rows],
        None,
        effort,
        FILTER,
        max_samples=1500,
    )
    assert delay.delay == pytest.approx(lag_samples * 1e-3, abs=1e-3)
    assert delay.rms <= delay.zero_rms
    if lag_samples:
        assert delay.rms < 0.95 * delay.zero_rms
    assert delay.as_json()["delay_s"] == delay.delay


def test_with_derivatives_pairs_each_effort_with_the_earlier_motion():
    """Recorded signals and a delay of two sample periods: effort k with the motion of k - 2."""
    t = np.arange(20) * 0.01
    q = np.column_stack([np.sin(t), t])
    states = JointStates(t, ("a", "b"), q, np.cos(q), -q, np.arange(40.0).reshape(20, 2))
    delayed = with_derivatives(states, 0.05, delay=0.02)
    np.testing.assert_allclose(delayed.t, t[2:])
    np.testing.assert_allclose(delayed.q, q[:-2], atol=1e-12)
    np.testing.assert_allclose(delayed.ddq, -q[:-2], atol=1e-12)
    np.testing.assert_allclose(delayed.effort, states.effort[2:])
    assert with_derivatives(states, 0.05) is states


def test_a_given_delay_is_applied_and_reported(recording):
    """``torque_delay`` given: not estimated, the data pair each effort with the motion that long
    before, and the JSON says it was given."""
    rec = recording
    rows = slice(0, 3000, 2)
    options = {
        "prior_weight": 1e-4,
        "differentiation": FILTER,
        "estimate_tilt": False,
        "select_coulomb": False,
    }
    none = identify_links(
        rec.simulator.links,
        rec.t[rows],
        rec.q[rows],
        rec.dq[rows],
        None,
        rec.effort[rows],
        torque_delay=0.0,
        **options,
    )
    given = identify_links(
        rec.simulator.links,
        rec.t[rows],
        rec.q[rows],
        rec.dq[rows],
        None,
        rec.effort[rows],
        torque_delay=0.01,
        **options,
    )
    assert none.delay.as_json() == {
        "delay_s": 0.0,
        "rms": None,
        "zero_rms": None,
        "criterion": "given",
    }
    assert given.as_json()["torque_delay"]["delay_s"] == 0.01
    t, effort, truth = rec.t[rows], rec.effort[rows], rec.truth.positions[rows]
    kept = np.flatnonzero(t - 0.01 >= t[0] + FILTER.half_width)  # each effort's stamp
    n = given.data.n_samples
    np.testing.assert_array_equal(given.data.efforts, effort[kept[:n]])
    earlier = np.column_stack([np.interp(t[kept[:n]] - 0.01, t, c) for c in truth.T])
    np.testing.assert_allclose(given.data.positions, earlier, atol=2e-3)  # the motion before
    assert given.data.n_samples == pytest.approx(none.data.n_samples, abs=1)


def test_too_short_a_recording_is_refused(recording):
    rec, rows = recording, slice(0, 150)  # 0.15 s: no sample 0.08 s from both ends
    with pytest.raises(ValueError, match="too short to estimate the torque delay"):
        estimate_torque_delay(
            rec.simulator.links,
            rec.t[rows],
            rec.q[rows],
            rec.dq[rows],
            None,
            rec.effort[rows],
            FILTER,
        )


@pytest.mark.parametrize("step, n_rows, max_shift", [(1, 40, 3), (2, 30, 5), (3, 25, 4), (1, 4, 3)])
def test_shifted_pairs_match_the_normal_equations_built_directly(step, n_rows, max_shift):
    """Every whole shift's normal equations from the shared sums equal those of the regressor
    rows ``rows - k`` against ``measured - known[rows - k]`` computed directly (known torques
    nonzero, so the right-hand side shifts too)."""
    from inertia_id_ros.chain.torque_delay import ShiftedTorquePairs

    rng = np.random.default_rng(step)
    first, n, p = 3, 2, 5
    rows = first + max_shift + step * np.arange(n_rows)
    M = rows[-1] + max_shift + 1 - first
    Y, known = rng.normal(size=(M, n, p)), rng.normal(size=(M, n))
    measured = rng.normal(size=(n_rows, n))
    pairs = ShiftedTorquePairs(Y, known, measured, first, rows, max_shift)
    for k in range(-max_shift, max_shift + 1):
        Yk = Y[rows - k - first].reshape(-1, p)
        yk = (measured - known[rows - k - first]).reshape(-1)
        gram, moment, yty, n_rows_k = pairs.normal_equations(k)
        np.testing.assert_allclose(gram, Yk.T @ Yk, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(moment, Yk.T @ yk, rtol=1e-12, atol=1e-12)
        assert yty == pytest.approx(yk @ yk) and n_rows_k == yk.size
    with pytest.raises(ValueError, match="beyond"):
        pairs.normal_equations(max_shift + 1)
    with pytest.raises(ValueError, match="cover"):
        ShiftedTorquePairs(Y, known, measured, first + 1, rows, max_shift)


def test_whole_shift_search_agrees_with_the_exact_search(recording):
    """The search over whole shifts (one regressor pass) finds the delay the exact search
    (every candidate's regressor evaluated) finds, to within half a sample, with a training RMS
    within 0.1 % of it; its reported scores are exact ones."""
    from inertia_id_ros.chain import torque_delay

    rec, lag, n = recording, 6, recording.t.size
    rows = slice(lag, n, 2)  # 500 Hz
    t, q, dq = rec.t[rows], rec.q[rows], rec.dq[rows]
    effort = rec.effort[: n - lag : 2]
    filt = DifferentiationFilter(SOURCE_VELOCITIES, 0.05, 2, 2e-3)
    fast = estimate_torque_delay(
        rec.simulator.links, t, q, dq, None, effort, filt, max_samples=1500
    )
    reach = torque_delay.MAX_TORQUE_DELAY + filt.half_width
    inner = np.flatnonzero((t >= t[0] + reach) & (t <= t[-1] - reach))
    scored = inner[np.arange(0, inner.size, int(np.ceil(inner.size / 1500)))]

    def scorer():
        return torque_delay._DelayScorer(
            rec.simulator.links,
            t,
            q,
            dq,
            None,
            effort,
            filt,
            None,
            scored,
            "lmi",
            torque_delay.DEFAULT_PRIOR_WEIGHT,
            {},
        )

    exact = torque_delay._torque_delay_exact(scorer(), torque_delay.MAX_TORQUE_DELAY, 2e-3)
    assert fast.delay == pytest.approx(exact.delay, abs=1e-3)
    assert fast.delay == pytest.approx(6e-3, abs=1e-3)
    assert fast.rms == pytest.approx(exact.rms, rel=1e-3)
    assert fast.rms == pytest.approx(scorer().exact(fast.delay), rel=1e-9)
    assert fast.zero_rms == pytest.approx(exact.zero_rms, rel=1e-6)


def test_the_coarse_shift_grid_finds_the_delay_of_every_shift_scored(recording, monkeypatch):
    """The whole-shift search's coarse grid (SHIFT_GRID_STEPS) and descent find the delay a grid
    over every whole shift finds."""
    from inertia_id_ros.chain import torque_delay

    rec, lag, n = recording, 6, recording.t.size
    rows = slice(lag, n, 2)  # 500 Hz: 15 whole shifts each side
    t, q, dq = rec.t[rows], rec.q[rows], rec.dq[rows]
    effort = rec.effort[: n - lag : 2]
    filt = DifferentiationFilter(SOURCE_VELOCITIES, 0.05, 2, 2e-3)
    coarse = estimate_torque_delay(
        rec.simulator.links, t, q, dq, None, effort, filt, max_samples=1500
    )
    monkeypatch.setattr(torque_delay, "SHIFT_GRID_STEPS", 1000)  # every whole shift
    every = estimate_torque_delay(
        rec.simulator.links, t, q, dq, None, effort, filt, max_samples=1500
    )
    assert coarse.delay == pytest.approx(every.delay, abs=1e-9)
    assert coarse.rms == pytest.approx(every.rms, rel=1e-9)
