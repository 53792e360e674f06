"""The derivative filter chosen by cross-validation of the torques, and fit-links' data-chosen
settings (filter, prior weight) as reported and as validate reuses them."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_id_ros.chain.differentiation import (
    MAX_HALF_WIDTH,
    SOURCE_POSITIONS,
    SOURCE_RECORDED,
    SOURCE_VELOCITIES,
    derive_torque_data,
    filter_candidates,
    filter_for,
    payload_half_width,
    sample_period,
    samples_each_side,
    select_differentiation,
)
from inertia_id_ros.chain.identify import identify_links
from inertia_id_ros.chain.links import torque_error
from inertia_id_ros.core.filtering import derivatives_at_samples
from inertia_id_ros.offline.validation import DEFAULT_HALF_WIDTH, differentiation_of
from inertia_id_ros.sim.torques import panda_arm_recording


@pytest.fixture(scope="module")
def recording():
    """8 s of the simulated Panda arm at 1 kHz: noisy positions, velocities, torques."""
    return panda_arm_recording(duration=8.0, seed=4, max_frequency=1.5)


def test_candidates_by_source_within_the_longest_half_width():
    t = np.arange(0.0, 60.0, 1e-3)
    velocities = filter_candidates(t, velocities=True)
    positions = filter_candidates(t, velocities=False)
    assert {c.order for c in velocities} == {2, 3} and {c.order for c in positions} == {2, 4}
    assert all(c.source == SOURCE_VELOCITIES for c in velocities)
    assert all(c.source == SOURCE_POSITIONS for c in positions)
    assert max(c.half_width for c in velocities) <= MAX_HALF_WIDTH
    narrowest = min(velocities, key=lambda c: c.half_width)
    assert narrowest.window_samples == 5 and narrowest.half_width == pytest.approx(2.5e-3)
    assert narrowest.online_lag == narrowest.half_width
    slow = filter_candidates(np.arange(0.0, 60.0, 5e-3), velocities=True)  # 200 Hz
    assert max(c.window_samples for c in slow) < 2 * MAX_HALF_WIDTH / 5e-3 + 1


@pytest.mark.parametrize(
    "rate, half_width",
    [(1000.0, 0.03), (500.0, 0.03), (180.0, 0.031), (125.0, 0.044), (50.0, 0.11)],
)
def test_a_payloads_filter_spans_five_samples_each_side_at_low_rates(rate, half_width) -> None:
    t = 3.0 + np.arange(0.0, 10.0, 1.0 / rate)
    period = sample_period(t)
    assert payload_half_width(period) == pytest.approx(half_width)
    assert samples_each_side(half_width, period) >= 5
    assert (
        filter_for(t, True, half_width).window_samples
        == 2 * samples_each_side(half_width, period) + 1
    )
    assert samples_each_side(0.03, 1 / 125) == 3


def test_the_node_parameter_quotes_the_default_at_125_hz() -> None:
    from inertia_id_ros.modes.payload_torques import PayloadTorquesMode

    spec = next(p for p in PayloadTorquesMode().parameters if p.name == "torques_filter_half_width")
    assert f"({payload_half_width(1 / 125):g} at 125 Hz)" in spec.description


def test_cross_validation_picks_a_filter_near_the_most_accurate(recording):
    """Noisy velocities at 1 kHz: the narrowest filter's accelerations are mostly noise, the
    widest flatten the motion; the chosen one's acceleration error (against the truth) is
    within 1.5 x the best candidate's, and the velocities are differentiated once."""
    rec, model = recording, recording.simulator.links
    candidates = filter_candidates(rec.t, True, half_width_samples=(2, 8, 32, 125, 200))
    selection = select_differentiation(
        model,
        rec.t,
        rec.q,
        rec.dq,
        rec.effort,
        candidates=candidates,
        max_samples=3000,
        search="grid",
    )
    assert selection.chosen.source == SOURCE_VELOCITIES
    errors = []
    for candidate in candidates:
        keep, _, _, ddq = derivatives_at_samples(
            rec.t, rec.q, rec.dq, candidate.half_width, candidate.order, trim=0.21
        )  # same samples
        errors.append(np.sqrt(np.mean((ddq - rec.truth.accelerations[keep]) ** 2)))
    chosen = candidates.index(selection.chosen)
    assert errors[chosen] <= 1.5 * min(errors)
    assert selection.chosen.half_width > candidates[0].half_width
    assert errors[0] > 5 * min(errors)  # the narrowest is far off: the choice matters
    report = selection.as_json()
    assert report["source"] == SOURCE_VELOCITIES and report["window_samples"] % 2 == 1
    assert len(report["selection"]["candidates"]) == len(candidates)
    assert min(c["cv_rms"] for c in report["selection"]["candidates"]) == pytest.approx(
        float(np.min(selection.cv_rms))
    )


def test_identify_links_reports_its_choices(recording):
    rec, model = recording, recording.simulator.links
    half = rec.t.size // 2
    part = slice(0, half, 4)  # 250 Hz
    identification = identify_links(
        model, rec.t[part], rec.q[part], rec.dq[part], None, rec.effort[part]
    )
    assert max(abs(identification.tilt.roll), abs(identification.tilt.pitch)) < 0.005  # level
    assert identification.tilt.rms <= identification.tilt.level_rms
    assert identification.coulomb_selection.best in identification.coulomb_selection.widths
    assert identification.differentiation.source == SOURCE_VELOCITIES
    assert identification.fit.fully_consistent
    report = identification.as_json()
    assert report["prior_weight"] == identification.fit.prior_weight
    candidates = report["prior_weight_selection"]["candidates"]
    best = min(candidates, key=lambda c: c["cv_rms"])
    assert best["weight"] == identification.fit.prior_weight
    assert report["weighting"] == {"kind": "none"}
    lines = "\n".join(identification.summary_lines())
    assert "velocities differentiated once" in lines and "chosen by 5-fold" in lines
    assert f"delays every signal by {identification.differentiation.half_width:.3f} s" in lines
    # recorded accelerations are used as they are; given settings are not chosen
    given = identify_links(
        model,
        rec.t[part],
        rec.truth.positions[part],
        rec.truth.velocities[part],
        rec.truth.accelerations[part],
        rec.effort[part],
        prior_weight=1e-4,
        weighting="channel",
        estimate_tilt=False,
        select_coulomb=False,
    )
    assert given.differentiation.source == SOURCE_RECORDED and given.prior_selection is None
    assert given.as_json()["prior_weight_selection"] is None and given.tilt is None
    assert given.as_json()["coulomb_velocity_selection"] is None
    assert given.fit.channel_weights is not None
    # the held-out half, differentiated by the chosen filter, is predicted about as well
    rest = slice(half, None, 4)
    held_out = derive_torque_data(
        rec.t[rest], rec.q[rest], rec.dq[rest], rec.effort[rest], identification.differentiation
    )
    fitted = identification.model
    training = torque_error(fitted, identification.fit.x, identification.data).overall
    assert torque_error(fitted, identification.fit.x, held_out).overall < 1.5 * training


def test_validate_differentiates_with_the_results_filter():
    result = {"differentiation": {"source": "velocities", "half_width_s": 0.0325, "order": 3}}
    assert differentiation_of(result, None) == {"half_width": 0.0325, "order": 3, "delay": 0.0}
    assert differentiation_of(result, 0.01) == {"half_width": 0.01, "delay": 0.0}
    assert differentiation_of(
        {"differentiation": {"source": "recorded", "half_width_s": 0.0}}, None
    ) == {"half_width": DEFAULT_HALF_WIDTH, "delay": 0.0}
    assert differentiation_of({}, None) == {"half_width": DEFAULT_HALF_WIDTH, "delay": 0.0}
    assert differentiation_of({"torque_delay": {"delay_s": 0.012}}, None)["delay"] == 0.012


@pytest.mark.parametrize("with_velocities", [True, False])
def test_candidate_derivatives_equal_those_of_joint_states_at(with_velocities: bool) -> None:
    """The filter search fits only what it uses; its velocities and accelerations are
    joint_states_at's (jittered stamps, so the windows are not all alike)."""
    from inertia_id_ros.chain.differentiation import DifferentiationFilter, _derivatives_at
    from inertia_id_ros.core.filtering import joint_states_at

    rng = np.random.default_rng(3)
    t = np.cumsum(0.005 + 4e-5 * rng.standard_normal(400))
    q = np.column_stack([np.sin(3 * t), np.cos(2 * t)]) + 1e-4 * rng.standard_normal((400, 2))
    dq = np.column_stack([3 * np.cos(3 * t), -2 * np.sin(2 * t)]) if with_velocities else None
    candidate = DifferentiationFilter(
        SOURCE_VELOCITIES if with_velocities else SOURCE_POSITIONS,
        0.0425,
        3 if with_velocities else 4,
        0.005,
    )
    times = t[50:350]
    _, velocities, accelerations = joint_states_at(
        t, q, dq, times, candidate.half_width, candidate.order
    )
    fast = _derivatives_at(t, q, dq, times, candidate)
    np.testing.assert_allclose(fast[0], velocities, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(fast[1], accelerations, rtol=1e-9, atol=1e-7)
    assert np.abs(accelerations).max() > 1.0  # a real signal, not zeros


def grid_and_coarse_selections(recording) -> tuple:
    """(candidates, the grid's selection, the coarse-to-fine search's) on 2000 samples."""
    rec, model = recording, recording.simulator.links
    candidates = filter_candidates(rec.t, True, half_width_samples=(2, 5, 8, 12, 20, 32, 50, 80))
    grid = select_differentiation(
        model,
        rec.t,
        rec.q,
        rec.dq,
        rec.effort,
        candidates=candidates,
        max_samples=2000,
        search="grid",
    )
    coarse = select_differentiation(
        model, rec.t, rec.q, rec.dq, rec.effort, candidates=candidates, max_samples=2000
    )
    return candidates, grid, coarse


def test_coarse_search_chooses_as_the_grid_with_its_scores(recording):
    """The coarse-to-fine search over the half-widths scores fewer candidates, each exactly as
    the grid does, and chooses the grid's best (smoothly varying scores)."""
    candidates, grid, coarse = grid_and_coarse_selections(recording)
    assert coarse.chosen == grid.chosen
    scored = ~np.isnan(coarse.cv_rms)
    assert 0 < scored.sum() < len(candidates) and not np.isnan(grid.cv_rms).any()
    np.testing.assert_allclose(coarse.cv_rms[scored], grid.cv_rms[scored], rtol=1e-12)
    listed = coarse.as_json()["selection"]
    assert len(listed["candidates"]) == scored.sum() and "coarse-to-fine" in listed["criterion"]
    assert coarse.ranking_rms is None  # 2000 samples: ranked on all of them


def test_coarse_search_ranks_on_every_stride_th_sample_then_scores_the_finalists_on_all(
    recording, monkeypatch
):
    """Above RANKING_STRIDE * RANKING_MIN_SAMPLES samples the candidates are ranked on every
    RANKING_STRIDE-th sample; each order's best is scored on all, exactly as the grid scores
    it."""
    import inertia_id_ros.chain.differentiation as differentiation

    monkeypatch.setattr(differentiation, "RANKING_MIN_SAMPLES", 250)
    candidates, grid, coarse = grid_and_coarse_selections(recording)
    stride = differentiation.RANKING_STRIDE
    assert grid.ranking_rms is None
    assert coarse.n_ranking_samples == (coarse.n_samples + stride - 1) // stride
    assert coarse.chosen == grid.chosen
    finalists = ~np.isnan(coarse.cv_rms)
    assert finalists.sum() == 2  # one per order
    np.testing.assert_allclose(coarse.cv_rms[finalists], grid.cv_rms[finalists], rtol=1e-12)
    assert np.isnan(coarse.ranking_rms).sum() > 0
    report = coarse.as_json()["selection"]
    assert "ranked on" in report["criterion"] and len(report["candidates"]) == 2
    assert len(report["ranking"]["candidates"]) == (~np.isnan(coarse.ranking_rms)).sum()


def test_unknown_filter_search_is_refused(recording):
    rec, model = recording, recording.simulator.links
    candidates = filter_candidates(rec.t, True, half_width_samples=(2, 5, 8))
    with pytest.raises(ValueError, match="unknown search"):
        select_differentiation(
            model,
            rec.t,
            rec.q,
            rec.dq,
            rec.effort,
            candidates=candidates,
            max_samples=2000,
            search="bisect",
        )
