"""Weighted least squares by channel (Gautier): the iteration recovers each channel's noise level,
beats unweighted least squares when the levels differ, and the covariance follows the weights;
online, the estimators take the same weighting."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_id_ros.core.covariance import ChannelNormalEquations, parameter_covariance
from inertia_id_ros.core.weighting import (
    check_weighting,
    iterate_channel_weights,
    weighted_normal_equations,
    weights_from_residuals,
)
from inertia_id_ros.errors import StartupError
from inertia_id_ros.modes.parameters import settings_from_parameters
from inertia_id_ros.online.link_estimator import LinkEstimator, LinkEstimatorConfig
from inertia_id_ros.online.payload_session import payload_session
from inertia_id_ros.sim.payload import PayloadSimulator
from inertia_id_ros.sim.torques import panda_arm_recording

NOISE = np.array([1.0, 1.0, 0.02, 0.02])
"""Standard deviation of each channel's noise: two noisy channels, two clean ones."""


def samples(seed: int, n: int = 2000, p: int = 6):
    rng = np.random.default_rng(seed)
    Y = rng.normal(size=(n, NOISE.size, p))
    x = rng.normal(size=p)
    return Y, Y @ x + rng.normal(size=(n, NOISE.size)) * NOISE, x


def solver(channels: ChannelNormalEquations):
    """``fit(weights) -> x``: weighted least squares of ``channels``."""

    def fit(weights):
        gram, moment, _, _ = weighted_normal_equations(channels, weights)
        return np.linalg.solve(gram, moment)

    return fit


def test_weighted_normal_equations_weight_each_channels_rows():
    Y, f, _ = samples(0, n=50)
    channels = ChannelNormalEquations.from_samples(Y, f)
    w = np.array([0.5, 1.0, 2.0, 4.0])
    gram, moment, yty, rows = weighted_normal_equations(channels, w)
    stacked, scale = Y.reshape(-1, Y.shape[2]), np.tile(w, Y.shape[0])
    assert np.allclose(gram, stacked.T @ (scale[:, None] * stacked))
    assert np.allclose(moment, stacked.T @ (scale * f.ravel()))
    assert np.isclose(yty, f.ravel() @ (scale * f.ravel())) and rows == f.size
    assert all(
        np.allclose(a, b)
        for a, b in zip(weighted_normal_equations(channels, None), channels.total())
    )
    with pytest.raises(ValueError, match="weights must have shape"):
        weighted_normal_equations(channels, np.ones(3))
    with pytest.raises(ValueError, match="weighting must be one of"):
        check_weighting("joint")


def test_iteration_recovers_noise_levels_and_beats_unweighted_least_squares():
    errors = {"none": [], "channel": []}
    for seed in range(10):
        Y, f, x = samples(seed)
        channels = ChannelNormalEquations.from_samples(Y, f)
        plain = solver(channels)(None)
        weighted, weights = iterate_channel_weights(channels, solver(channels))
        errors["none"].append(np.linalg.norm(plain - x))
        errors["channel"].append(np.linalg.norm(weighted - x))
        assert weights.converged and weights.iterations <= 4
        np.testing.assert_allclose(weights.sigma, NOISE, rtol=0.1)
        assert np.isclose(weights.weights.mean(), 1.0)
        np.testing.assert_allclose(
            weights.weights[0] / weights.weights[2], (NOISE[2] / NOISE[0]) ** 2, rtol=0.2
        )
    # the clean channels alone determine x 50 times better than the noisy ones
    assert np.mean(errors["channel"]) < 0.1 * np.mean(errors["none"])


def test_groups_pool_the_variance_of_their_channels():
    Y, f, x = samples(3)
    channels = ChannelNormalEquations.from_samples(Y, f)
    weights, sigma = weights_from_residuals(channels, x, groups=[0, 0, 1, 1])
    assert sigma[0] == sigma[1] and sigma[2] == sigma[3]
    assert weights[0] == weights[1] and sigma[0] > 10 * sigma[2]


def test_covariance_follows_the_weights_and_matches_monte_carlo():
    """With weights 1/sigma², the sandwich is the weighted least-squares covariance
    (sum_c G_c / sigma_c²)^-1, and it predicts the spread of the weighted estimates."""
    estimates, predicted = [], []
    for seed in range(60):
        Y, f, x = samples(100 + seed, n=400)
        channels = ChannelNormalEquations.from_samples(Y, f)
        estimate, weights = iterate_channel_weights(channels, solver(channels))
        estimates.append(estimate - x)
        predicted.append(
            parameter_covariance(
                channels, estimate, constrained=False, weights=weights.weights
            ).matrix
        )
    Y, f, x = samples(100, n=400)
    channels = ChannelNormalEquations.from_samples(Y, f)
    estimate, weights = iterate_channel_weights(channels, solver(channels))
    covariance = parameter_covariance(
        channels, estimate, constrained=False, weights=weights.weights
    )
    variance = covariance.channel_variance
    expected = np.linalg.inv(np.tensordot(1.0 / variance, channels.gram, axes=1))
    np.testing.assert_allclose(covariance.matrix, expected, rtol=0.05)
    empirical = np.std(estimates, axis=0)
    mean_predicted = np.sqrt(np.mean([np.diag(c) for c in predicted], axis=0))
    np.testing.assert_allclose(mean_predicted / empirical, 1.0, atol=0.3)
    unweighted = parameter_covariance(channels, solver(channels)(None), constrained=False)
    assert np.all(np.diag(covariance.matrix) < 0.1 * np.diag(unweighted.matrix))


def test_link_estimator_weights_the_joints_online():
    """The online links estimator with weighting="channel": every link consistent, and the
    fit of the window's torques as good as unweighted (the weights only move the noise)."""
    rec = panda_arm_recording(duration=6.0, rate=250.0, seed=2)
    model = rec.simulator.links
    fits = {}
    for weighting in ("none", "channel"):
        estimator = LinkEstimator(
            model, LinkEstimatorConfig(window_sec=10.0, weighting=weighting, prior_weight=1e-4)
        )
        estimator.add_joint_states(rec.t, model.joint_names, rec.q, rec.dq, rec.effort)
        estimator.process()
        fits[weighting] = estimator.solve()
        assert np.all(fits[weighting].min_pseudo_inertia_eigs > 0)
        _, Y, f = estimator.window.samples()
        assert fits[weighting].residual_rms == pytest.approx(  # N m, unweighted either way
            np.sqrt(np.mean((Y @ fits[weighting].x - f) ** 2)), rel=1e-6
        )
    assert fits["channel"].residual_rms < 1.1 * fits["none"].residual_rms
    assert not np.allclose(fits["channel"].x, fits["none"].x)


def test_node_weighting_by_mode_and_diagnostics_state_weighting_and_lag():
    """The node's ``weighting`` parameter: empty means the mode's default (payload channel,
    links none), a bad value is refused at start-up; the session's diagnostics say which
    weighting runs and how long the derivative filter delays every signal."""
    assert settings_from_parameters({"sensor_frame": "panda_link8"}).weighting == "channel"
    assert settings_from_parameters({"mode": "links", "joints": ["j1"]}).weighting == "none"
    assert settings_from_parameters({"sensor_frame": "f", "weighting": "none"}).weighting == "none"
    with pytest.raises(StartupError, match="parameter 'weighting'"):
        settings_from_parameters({"sensor_frame": "f", "weighting": "joint"})
    session = payload_session(PayloadSimulator.panda().kinematics)
    values = session.diagnostics().values
    assert values["weighting"] == "channel" and values["filter_lag_sec"] == "0.05"
