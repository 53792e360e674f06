"""Sliding window: bounded memory, time-based eviction, correct normal equations."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_id_ros.core.covariance import ChannelNormalEquations
from inertia_id_ros.online.window import BlockWindow, SampleBuffer, SlidingWindow
from inertia_id_ros.online.window_products import FINE_BLOCK, PRODUCT_BLOCK


def rows(rng: np.random.Generator, t: np.ndarray, p: int = 16) -> tuple[np.ndarray, np.ndarray]:
    return rng.normal(size=(t.size, 6, p)), rng.normal(size=(t.size, 6))


def test_normal_equations_are_those_of_the_stacked_rows_of_the_window():
    rng = np.random.default_rng(0)
    window = SlidingWindow(window_sec=2.0)
    t = np.arange(0.0, 5.0, 0.01)
    Y, f = rows(rng, t)
    for chunk in np.array_split(np.arange(t.size), 7):
        window.extend(t[chunk], Y[chunk], f[chunk])
    kept = t >= t[-1] - 2.0
    assert len(window) == kept.sum() and window.t_first == t[kept][0] and window.t_last == t[-1]
    for duration, select in ((0.0, kept), (0.5, t >= t[-1] - 0.5)):
        Ys, ys = Y[select].reshape(-1, 16), f[select].reshape(-1)
        gram, moment, yty, n_rows = window.normal_equations(duration)
        assert np.allclose(gram, Ys.T @ Ys) and np.allclose(moment, Ys.T @ ys)
        assert yty == pytest.approx(ys @ ys) and n_rows == Ys.shape[0]
        assert window.count(duration) == select.sum()
    problem = window.problem(0.5)
    assert problem.n_rows == 6 * window.count(0.5) and problem.n_bodies == 1
    assert np.allclose(problem.gram, window.normal_equations(0.5)[0])


def test_kept_block_products_give_the_channels_normal_equations_of_the_selected_samples():
    """Updates between batches of odd sizes, samples leaving by time and by capacity, a resize:
    the per-channel normal equations from the kept block products are those of the samples
    selected (durations, an interval of the past, a known offset), and only the blocks still
    held are kept."""
    rng = np.random.default_rng(3)
    window = SlidingWindow(window_sec=3.0, capacity=700)
    t = np.arange(0.0, 12.0, 0.005)
    Y, f = rows(rng, t, p=5)
    offset = rng.normal(size=6)
    checked = 0
    for n, chunk in enumerate(np.array_split(np.arange(t.size), 37)):
        window.extend(t[chunk], Y[chunk], f[chunk])
        if n == 20:
            window.resize(2.0, 500)
        newest = t[chunk[-1]]
        for duration, until in ((0.0, None), (0.7, None), (1.0, newest - 0.8)):
            ts, Ys, fs = window.samples(duration, until=until)
            for known in (None, offset):
                got = window.channel_normal_equations(duration, until, offset=known)
                want = ChannelNormalEquations.from_samples(Ys, fs if known is None else fs - known)
                assert got.n_samples == want.n_samples == ts.size
                scale = np.abs(want.gram).max()
                assert np.allclose(got.gram, want.gram, rtol=0, atol=1e-12 * scale)
                assert np.allclose(got.moment, want.moment, rtol=0, atol=1e-12 * scale)
                assert np.allclose(got.yty, want.yty, rtol=1e-12)
                checked += 1
        assert len(window._block_products.coarse) <= window.capacity // PRODUCT_BLOCK + 2
    assert checked == 37 * 6


def test_memory_is_bounded_by_the_capacity():
    rng = np.random.default_rng(1)
    window = SlidingWindow(window_sec=100.0, capacity=50)
    stamps = np.arange(400) / 10
    window.extend(stamps[:10], *rows(rng, stamps[:10], p=10))
    arrays = dict(window._buffer._arrays)
    for chunk in np.split(stamps[10:], 39):
        window.extend(chunk, *rows(rng, chunk, p=10))
    assert len(window) == 50 and np.array_equal(window.samples()[0], stamps[-50:])
    assert all(window._buffer._arrays[name] is array for name, array in arrays.items())


def test_bad_samples_are_refused():
    window = SlidingWindow(window_sec=1.0)
    window.append(1.0, np.zeros((6, 16)), np.zeros(6))
    with pytest.raises(ValueError, match="non-decreasing"):
        window.append(0.5, np.zeros((6, 16)), np.zeros(6))
    with pytest.raises(ValueError, match="columns"):
        window.append(2.0, np.zeros((6, 10)), np.zeros(6))
    with pytest.raises(ValueError, match="positive"):
        SlidingWindow(window_sec=0.0)
    window.clear()
    assert len(window) == 0 and window.t_last is None


def test_sample_buffer_drops_the_oldest_beyond_capacity():
    buffer = SampleBuffer(4, t=(), x=(2,))
    assert buffer.extend(t=np.arange(3.0), x=np.zeros((3, 2))) == 0
    assert buffer.extend(t=np.arange(3.0, 6.0), x=np.ones((3, 2))) == 2
    assert list(buffer["t"]) == [2.0, 3.0, 4.0, 5.0]
    assert buffer.extend(t=np.arange(6.0, 16.0), x=np.ones((10, 2))) == 10
    assert list(buffer["t"]) == [12.0, 13.0, 14.0, 15.0]
    buffer.drop_front(3)
    assert list(buffer["t"]) == [15.0]


def test_resizing_keeps_the_newest_samples_that_fit():
    rng = np.random.default_rng(2)
    window = SlidingWindow(window_sec=10.0, capacity=2000)
    t = np.arange(0.0, 8.0, 0.01)
    Y, f = rows(rng, t)
    window.extend(t, Y, f)
    window.resize(window_sec=2.0, capacity=2000)  # shorter: the older samples leave
    kept = t >= t[-1] - 2.0
    assert np.array_equal(window.samples()[0], t[kept])
    assert np.array_equal(window.samples()[2], f[kept])
    window.resize(window_sec=30.0, capacity=100)  # longer, but fewer samples fit
    assert np.array_equal(window.samples()[0], t[-100:]) and window.capacity == 100
    more = np.arange(8.0, 20.0, 0.01)  # the longer window now keeps 30 s... of 100 samples
    window.extend(more, *rows(rng, more))
    assert len(window) == 100 and window.t_last == more[-1]
    window.resize(window_sec=30.0, capacity=5000)
    window.extend(more + 12.0, *rows(rng, more))
    assert window.t_first == pytest.approx(more[-100])  # nothing older came back; none left
    with pytest.raises(ValueError, match="positive"):
        window.resize(window_sec=float("nan"), capacity=10)
    empty = SlidingWindow(window_sec=1.0)
    empty.resize(window_sec=5.0, capacity=10)
    assert empty.window_sec == 5.0 and len(empty) == 0


def test_an_interval_of_the_past_selects_exactly_its_samples():
    rng = np.random.default_rng(1)
    window = SlidingWindow(window_sec=10.0)
    t = np.arange(0.0, 5.0, 0.01)
    Y, f = rows(rng, t)
    window.extend(t, Y, f)
    for duration, until in ((1.5, 3.0), (0.0, 2.0), (2.0, 0.5), (1.0, 9.0)):
        select = (t <= until + 1e-12) & (t >= until - duration - 1e-12 if duration else True)
        stamps, Ys, fs = window.samples(duration, until=until)
        assert np.array_equal(stamps, t[select]) and window.count(duration, until) == select.sum()
        gram, moment, _, _ = window.normal_equations(duration, until)
        stacked = Y[select].reshape(-1, 16)
        assert np.allclose(gram, stacked.T @ stacked)
        assert np.allclose(moment, stacked.T @ f[select].reshape(-1))
    assert window.count(1.0, until=-1.0) == 0


def direct_products(window: SlidingWindow, duration: float, until: float | None) -> np.ndarray:
    """(r, p + 2, p + 2) per-channel ``[Y f 1]^T [Y f 1]`` of the selected samples' rows."""
    _, Y, f = window.samples(duration, until=until)
    augmented = np.concatenate([Y, f[:, :, None], np.ones((*f.shape, 1))], axis=2)
    return np.einsum("nci,ncj->cij", augmented, augmented)


def test_normal_equations_match_the_rows_whatever_the_calls_before():
    """Appends of every size (across fine and coarse blocks), drops, a clear and resizes, with
    calls over the whole window, its newest seconds and intervals of the past: the normal
    equations are those of the selected rows, and a call repeated after others gives the same
    numbers."""
    rng = np.random.default_rng(7)
    window = SlidingWindow(window_sec=4.0, capacity=3000, rows_per_sample=3)
    used = np.array([[1, 1, 1, 1, 1], [0, 1, 1, 1, 1], [0, 0, 0, 1, 1]], dtype=bool)
    t_next, checked = 0.0, 0
    for step in range(60):
        n = int(rng.choice([1, FINE_BLOCK - 1, FINE_BLOCK, 100, PRODUCT_BLOCK + 3, 1500]))
        t = t_next + np.arange(n) * 1e-3
        t_next = t[-1] + 1e-3
        window.extend(t, rng.normal(size=(n, 3, 5)) * used, rng.normal(size=(n, 3)))
        if step % 9 == 4:
            window.drop_before(t_next - rng.uniform(0.5, 3.0))
        if step == 30:
            window.clear()
        if step in (20, 45):
            window.resize(float(rng.uniform(1.0, 5.0)), int(rng.integers(800, 4000)))
        calls = [(0.0, None), (float(rng.uniform(0.01, 3.0)), None)]
        calls.append((float(rng.uniform(0.0, 2.0)), t_next - float(rng.uniform(0.0, 2.0))))
        first = None
        for duration, until in [*calls, calls[0]]:
            want = direct_products(window, duration, until)
            got = window.channel_normal_equations(duration, until)
            scale = max(np.abs(want).max(), 1.0)
            assert got.n_samples == window.count(duration, until) == round(want[0, 6, 6])
            assert np.allclose(got.gram, want[:, :5, :5], rtol=1e-10, atol=1e-12 * scale)
            assert np.allclose(got.moment, want[:, :5, 5], rtol=1e-10, atol=1e-12 * scale)
            assert np.allclose(got.yty, want[:, 5, 5], rtol=1e-10)
            gram, moment, yty, rows = window.normal_equations(duration, until)
            total = want.sum(axis=0)
            assert np.allclose(gram, total[:5, :5], rtol=1e-10, atol=1e-12 * scale)
            assert np.allclose(moment, total[:5, 5], rtol=1e-10, atol=1e-12 * scale)
            assert yty == pytest.approx(total[5, 5], rel=1e-10) and rows == 3 * got.n_samples
            first = got.gram if first is None else first
            checked += 1
        assert np.allclose(got.gram, first, rtol=0, atol=1e-14 * scale)  # the first call again
    assert checked == 60 * 4


def test_fine_products_are_kept_for_the_selections_two_ends_only():
    """A 30 s window at 1 kHz, 100 samples per call: fine products are kept for at most the two
    coarse blocks the last selection holds part of, coarse ones for the blocks held."""
    rng = np.random.default_rng(8)
    window = SlidingWindow(window_sec=30.0, capacity=40000, rows_per_sample=2)
    t = np.arange(0, 40000) * 1e-3
    most = 0
    for k, start in enumerate(range(0, t.size, 100)):
        chunk = slice(start, start + 100)
        window.extend(t[chunk], rng.normal(size=(100, 2, 3)), rng.normal(size=(100, 2)))
        duration = 0.0 if k % 3 else 7.3
        window.channel_normal_equations(duration)
        kept = window._block_products
        first = window._buffer.first_index
        start_index = first + window.count() - window.count(duration)
        stop_index = first + window.count()
        ends = {start_index // PRODUCT_BLOCK, (stop_index - 1) // PRODUCT_BLOCK}
        assert set(kept.fine) <= ends
        assert all(len(made) == PRODUCT_BLOCK // FINE_BLOCK for _, made in kept.fine.values())
        assert len(kept.coarse) <= len(window) // PRODUCT_BLOCK + 1
        most = max(most, len(kept.fine))
    assert len(window) > 29000 and most == 2


@pytest.mark.parametrize("per_channel", [False, True])
def test_a_window_of_blocks_sums_the_products_of_the_samples_it_keeps(per_channel):
    """Over a long stream fed in uneven batches, with blocks leaving (the window's length, a
    resize, ``drop_before``), every sum equals that of the kept samples' rows recomputed."""
    rng = np.random.default_rng(5)
    t = 100.0 + np.arange(600) * 0.1  # 60 s at 10 Hz, 1 s blocks, a 5 s window
    rows, f = rng.normal(size=(600, 3, 5)), rng.normal(size=(600, 3))
    rows[:, 1:, :3] = 0.0
    groups = [(np.array([0]), np.arange(5)), (np.array([1, 2]), np.array([3, 4]))]
    channels = [np.array([0]), np.array([1, 2])] if per_channel else None
    window = BlockWindow(5.0, 5, 3, row_groups=groups, channels=channels)

    def check(duration: float) -> None:
        kept = np.isin(t, window.stamps(duration))
        Y, y = rows[kept].reshape(-1, 5), f[kept].reshape(-1)
        gram, moment, yty, n_rows = window.normal_equations(duration)
        np.testing.assert_allclose(gram, Y.T @ Y, rtol=1e-12, atol=1e-10)
        np.testing.assert_allclose(moment, Y.T @ y, rtol=1e-12, atol=1e-10)
        assert yty == pytest.approx(y @ y, rel=1e-12) and n_rows == Y.shape[0]
        if per_channel:
            products = window.channel_normal_equations(duration)
            np.testing.assert_allclose(products.gram.sum(axis=0), gram, rtol=1e-12, atol=1e-10)

    start, calls = 0, 0
    while start < t.size:
        stop = min(t.size, start + int(rng.integers(1, 25)))
        window.extend(t[start:stop], rows[start:stop], f[start:stop])
        start, calls = stop, calls + 1
        for duration in (0.0, 2.5, 4.5):
            check(duration)
        if calls == 10:
            window.resize(3.0)
        elif calls == 25:
            window.drop_before(float(window.stamps()[0]) + 1.5)
        elif calls == 30:
            window.resize(8.0)
        check(0.0)
    assert 50 <= window.count() <= 90  # an 8 s window of 1 s blocks at 10 Hz
    window.clear()
    assert window.count() == 0 and window.normal_equations()[3] == 0
