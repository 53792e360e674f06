"""Savitzky–Golay filtering: uniform (scipy) and at arbitrary query times (non-uniform stamps)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import savgol_filter

from inertia_id_ros.core import filtering
from inertia_id_ros.core.filtering import (
    check_coverage,
    joint_states_at,
    joint_states_at_mixed,
    local_polynomial_derivatives,
    savgol_derivatives,
)


def signal(t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two smooth joints (rad) with their first two derivatives, (N, 2) each."""
    x = np.stack([np.sin(2.0 * t), 0.5 * np.cos(3.0 * t + 0.2)], axis=1)
    dx = np.stack([2.0 * np.cos(2.0 * t), -1.5 * np.sin(3.0 * t + 0.2)], axis=1)
    ddx = np.stack([-4.0 * np.sin(2.0 * t), -4.5 * np.cos(3.0 * t + 0.2)], axis=1)
    return x, dx, ddx


def test_at_uniform_stamps_it_is_the_savitzky_golay_filter():
    dt, window = 0.01, 21
    t = np.arange(0.0, 3.0, dt)
    x = signal(t)[0] + np.random.default_rng(0).normal(scale=1e-3, size=(t.size, 2))
    interior = slice(window, -window)
    fit = local_polynomial_derivatives(t, x, t[interior], (window - 1) / 2 * dt, order=2)
    for k in range(3):
        reference = savgol_filter(x, window, 2, deriv=k, delta=dt, axis=0)[interior]
        assert np.allclose(fit[:, k], reference, rtol=0, atol=1e-9 * 10**k)


def test_a_polynomial_is_recovered_exactly_at_non_uniform_stamps():
    rng = np.random.default_rng(1)
    t = np.sort(rng.uniform(0.0, 2.0, 300))
    coefficients = np.array([0.3, -1.0, 0.7, 0.2])  # cubic in t
    x = np.polynomial.polynomial.polyval(t, coefficients)
    t_query = rng.uniform(0.2, 1.8, 50)
    fit = local_polynomial_derivatives(t, x, t_query, 0.1, order=3)
    for k in range(3):
        exact = np.polynomial.polynomial.polyval(
            t_query, np.polynomial.polynomial.polyder(coefficients, k)
        )
        assert np.allclose(fit[:, k], exact, atol=1e-9)


def test_noisy_joint_states_are_interpolated_and_differentiated_at_query_times():
    rng = np.random.default_rng(2)
    t = np.cumsum(rng.uniform(0.002, 0.008, 1000))  # ~200 Hz with jitter
    q, dq, _ = signal(t)
    q_meas = q + rng.normal(scale=1e-5, size=q.shape)
    dq_meas = dq + rng.normal(scale=5e-4, size=dq.shape)
    t_query = np.linspace(0.5, t[-1] - 0.5, 200) + 0.0013
    q_true, dq_true, ddq_true = signal(t_query)
    for velocity in (None, dq_meas):
        q_fit, dq_fit, ddq_fit = joint_states_at(t, q_meas, velocity, t_query, 0.05, order=2)
        assert np.abs(q_fit - q_true).max() < 2e-4
        assert np.abs(dq_fit - dq_true).max() < 5e-3  # bias ~ (w h)^2 / 6 of 1.5 rad/s
        assert np.abs(ddq_fit - ddq_true).max() < 0.1
        assert np.sqrt(np.mean((ddq_fit - ddq_true) ** 2)) < 0.03


def test_the_running_sums_fit_as_each_window_solved_apart(monkeypatch):
    """Dense queries (any order, epoch stamps, large offsets, orders 1-4) are fitted from running
    sums, as each window's own least squares of the offset-free signal (to 1e-9 of each
    derivative's range; order 4 on short windows 1e-8, as any solve); a NaN sample spoils only
    the fits whose windows hold it, the other column's too, and no other."""
    summed = []
    moment_fit = filtering._moment_fit
    monkeypatch.setattr(
        filtering, "_moment_fit", lambda *a: summed.append(a[2].size) or moment_fit(*a)
    )
    rng = np.random.default_rng(11)
    for case in range(16):
        t0 = 1.7e9 if case % 2 else 500.0 * rng.random()
        t = t0 + np.cumsum(rng.uniform(0.5e-3, 1.5e-3, 3000))  # 1 kHz with jitter
        n, h = int(rng.integers(1, 15)), float(rng.choice([0.03, 0.05, 0.2]))
        order = 1 + case % 4
        offset = rng.uniform(-300.0, 300.0, n)
        x = rng.standard_normal((t.size, n)) * 10 ** rng.uniform(-3, 3)
        t_query = rng.permutation(t[1000:1600] + rng.uniform(-4e-4, 4e-4))
        fit = local_polynomial_derivatives(t, x + offset, t_query, h, order, order)
        reference = np.empty_like(fit)
        for m, tq in enumerate(t_query):
            inside = np.abs(t - tq) <= h * (1 + 1e-9)
            basis = np.vander((t[inside] - tq) / h, order + 1, increasing=True)
            solution = np.linalg.lstsq(basis, x[inside], rcond=None)[0]
            reference[m] = solution * (factorial_scale(order, h))[:, None]
        scale = np.abs(reference).max(axis=0)
        reference[:, 0] += offset
        assert np.all(np.abs(fit - reference) <= (1e-8 if order == 4 else 1e-9) * scale)
    assert sum(summed) >= 0.9 * 16 * 600  # but the last few of a chunk cut short
    t = np.arange(0.0, 2.0, 1e-3)
    x = np.column_stack([np.sin(t), np.cos(t)])
    x[1000, 0] = np.nan
    t_query = t[100:1900] + 3e-4
    fit = local_polynomial_derivatives(t, x, t_query, 0.05)
    near = np.abs(t_query - t[1000]) <= 0.05
    assert np.isnan(fit[near, :, 0]).all() and np.isfinite(fit[~near]).all()
    assert np.isfinite(fit[near, :, 1]).all()
    assert np.allclose(fit[~near, 0, 0], np.sin(t_query[~near]), atol=1e-6)
    assert np.allclose(fit[:, 0, 1], np.cos(t_query), atol=1e-6)


def factorial_scale(order: int, h: float) -> np.ndarray:
    """(order + 1,) ``k! / h^k``: polynomial coefficients in ``(t - tq) / h`` to derivatives."""
    return np.array([np.prod(np.arange(1, k + 1)) / h**k for k in range(order + 1)])


def test_too_few_samples_in_a_window_is_an_error():
    t = np.array([0.0, 0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="fewer than 3 samples"):
        local_polynomial_derivatives(t, t[:, None], np.array([0.15]), 0.06, order=2)
    with pytest.raises(ValueError, match="order >= 2"):
        joint_states_at(t, t[:, None], None, np.array([0.15]), 0.2, order=1)


def test_coverage_says_which_queries_are_ready_pending_or_in_a_gap():
    t = np.r_[np.arange(0.0, 1.0, 0.01), np.arange(1.5, 3.0, 0.01)]  # a 0.5 s hole
    queries = [0.03, 0.5, 0.97, 1.2, 1.53, 1.6, 2.96, 3.5]
    expected = ["no_joint_state", "", "gap", "gap", "gap", "", "pending", "pending"]
    assert list(check_coverage(t, queries, 0.05, max_gap=0.1)) == expected
    sparse = np.arange(0.0, 1.0, 0.04)
    assert list(check_coverage(sparse, [0.5], 0.05, max_gap=0.1)) == ["sparse"]
    assert list(check_coverage(np.zeros(0), [0.5], 0.05, max_gap=0.1)) == ["pending"]


def test_uniform_savgol_helper_differentiates_offline_data():
    dt = 0.001
    t = np.arange(0.0, 20.0, dt)
    x = np.stack([np.sin(0.5 * t), np.cos(0.4 * t)], axis=1)
    dx = np.stack([0.5 * np.cos(0.5 * t), -0.4 * np.sin(0.4 * t)], axis=1)
    ddx = np.stack([-0.25 * np.sin(0.5 * t), -0.16 * np.cos(0.4 * t)], axis=1)
    noisy = x + np.random.default_rng(3).normal(scale=1e-6, size=x.shape)
    for window in (499, 41, 21, 9, 7):  # the windows of the Traversaro 2016 reproduction
        smooth, first, second = savgol_derivatives(noisy, dt, window, polyorder=2)
        assert np.array_equal(second, savgol_filter(noisy, window, 2, deriv=2, delta=dt, axis=0))
        inner = slice(window, -window)
        assert np.abs(smooth - x)[inner].max() < 1e-4
        assert np.abs(first - dx)[inner].max() < 2e-3
        if window >= 41:  # short windows amplify the encoder noise in second derivatives
            assert np.abs(second - ddx)[inner].max() < 5e-2
    with pytest.raises(ValueError, match="odd"):
        savgol_derivatives(x, dt, 20)


def test_mixed_velocities_fit_as_each_kind_alone_on_a_long_history():
    """Queries at the end of a long history (an online batch): where the whole fit window has
    measured velocities, the fit of positions and velocities; elsewhere the positions
    differentiated twice; read from the samples the windows reach only (all to rounding: the
    running sums start where the samples read start)."""
    rng = np.random.default_rng(5)
    t = np.cumsum(rng.uniform(0.8e-3, 1.2e-3, 20000))
    q = np.column_stack([np.sin(3 * t), np.cos(2 * t)]) + 1e-4 * rng.normal(size=(t.size, 2))
    dq = np.column_stack([3 * np.cos(3 * t), -2 * np.sin(2 * t)])
    has_dq = np.ones(t.size, dtype=bool)
    has_dq[-60] = False  # one joint state without velocities near the end
    t_query = t[-150:-40]
    mixed = joint_states_at_mixed(t, q, dq, has_dq, t_query, 0.02)
    with_dq = joint_states_at(t, q, dq, t_query, 0.02)
    from_q = joint_states_at(t, q, None, t_query, 0.02)
    reached = np.abs(t_query - t[-60]) <= 0.02
    assert 0 < reached.sum() < t_query.size
    for got, velocity_fit, position_fit in zip(mixed, with_dq, from_q):
        assert np.allclose(got[~reached], velocity_fit[~reached], rtol=1e-12, atol=1e-12)
        assert np.allclose(got[reached], position_fit[reached], rtol=1e-12, atol=1e-9)
    assert not np.allclose(mixed[2][reached], with_dq[2][reached], rtol=1e-3)  # two kinds
