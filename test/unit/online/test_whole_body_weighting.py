"""Weighted least squares in the whole-body problem (Gautier's weighting by noise group): the
weights recover each group's noise level, the weighted fit beats the unweighted one when the
levels differ, ``none`` is the unweighted fit unchanged; online, the window keeps per-group
products and the node's whole_body mode takes the parameter."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.estimators import block_window_rows
from helpers.whole_body import ICUB_SENSORS, whole_body_rnea_samples
from inertia_id_ros import modes
from inertia_id_ros.chain.whole_body_fit import (
    fit_whole_body,
    group_normal_equations,
    noise_groups,
    normal_equations,
)
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.core.whole_body_model import WholeBodyModel, WholeBodySamples
from inertia_id_ros.errors import ProblemError
from inertia_id_ros.modes.parameters import build_session, settings_from_parameters
from inertia_id_ros.online.window import BlockWindow

NOISE = {  # (force N, torque N m) white noise of each sensor's wrench: levels 100 times apart
    "l_sole": (0.05, 0.005),
    "l_arm_ft_sensor": (0.5, 0.02),
    "r_arm_ft_sensor": (0.05, 0.05),
    "l_leg_ft_sensor": (0.05, 0.02),
    "r_leg_ft_sensor": (2.0, 0.04),
    "l_foot_ft_sensor": (0.05, 0.02),
    "r_foot_ft_sensor": (0.1, 0.025),
}
OWN_ROWS = ("l_arm_ft_sensor", "r_arm_ft_sensor", "r_leg_ft_sensor", "r_foot_ft_sensor")
"""Sensors with no contact beyond them: their rows carry their own noise only."""


@pytest.fixture(scope="module")
def icub():
    urdf = example_robot_urdf("icub")
    model = WholeBodyModel.from_urdf(urdf, ft_sensors=ICUB_SENSORS, imu_frame="imu_frame")

    def samples(n: int, seed: int) -> WholeBodySamples:
        _, q, dq, ddq, imu, wrenches, tau = whole_body_rnea_samples(
            urdf.read_text(), model.sensors, n, seed=seed, imu_frame=model.imu_frame
        )
        motion = model.base_motion_from_imu(q, dq, ddq, imu[0], imu[2], imu[1])
        return WholeBodySamples(q, dq, ddq, motion, wrenches, tau)

    train, test = samples(300, 0), samples(100, 1)
    std = np.array([np.repeat(NOISE[s.frame], 3) for s in model.sensors])  # (S, 6)
    noisy = WholeBodySamples(
        train.q,
        train.dq,
        train.ddq,
        train.base,
        train.wrenches + np.random.default_rng(2).normal(size=train.wrenches.shape) * std,
        train.efforts,
    )
    return model, noisy, test


def test_noise_groups_split_each_wrench_block_into_force_and_torque(icub):
    model = icub[0]
    names, rows = noise_groups(model)
    assert names[:4] == (
        "base.force",
        "base.torque",
        "l_arm_ft_sensor.force",
        "l_arm_ft_sensor.torque",
    )
    assert len(names) == 2 * len(ICUB_SENSORS) and all(r.size == 3 for r in rows)
    assert np.array_equal(np.concatenate(rows), np.arange(len(model.channels())))
    names, rows = noise_groups(model, with_efforts=True)
    assert names[-1] == f"tau.{model.joint_names[-1]}" and rows[-1].size == 1


def test_per_group_equations_sum_to_the_normal_equations(icub):
    model, train, _ = icub
    channels = group_normal_equations(model, train)
    plain = normal_equations(model, train)
    gram, moment, yty, n_rows = channels.total()
    assert np.allclose(gram, plain.gram, rtol=1e-12, atol=1e-9 * np.abs(plain.gram).max())
    assert np.allclose(moment, plain.moment, rtol=1e-12, atol=1e-9 * np.abs(plain.moment).max())
    assert np.isclose(yty, plain.yty) and n_rows == plain.n_rows
    Y, b, _ = model.rows(train)  # one group's products from the stacked rows
    Y, b = Y.reshape(len(train), -1, model.n_params), b.reshape(len(train), -1)
    rows = noise_groups(model)[1][3]
    assert np.allclose(channels.gram[3], np.einsum("nrp,nrq->pq", Y[:, rows], Y[:, rows]))


def test_none_is_the_unweighted_fit_unchanged(icub):
    model, train, _ = icub
    given = fit_whole_body(model, normal_equations(model, train))
    default = fit_whole_body(model, train, weighting="none")
    assert default.weights is None
    assert np.array_equal(default.x, given.x) and default.residual_rms == given.residual_rms
    with pytest.raises(ProblemError, match="per-group normal equations"):
        fit_whole_body(model, normal_equations(model, train), weighting="channel")
    with pytest.raises(ValueError, match="weighting must be one of"):
        fit_whole_body(model, train, weighting="joint")


def test_weights_recover_the_groups_noise_levels(icub):
    model, train, _ = icub
    fit = fit_whole_body(model, train, "lmi", weighting="channel")
    assert fit.fully_consistent and fit.weights.converged
    sigma = dict(zip(noise_groups(model)[0], fit.weights.sigma))
    for frame in OWN_ROWS:
        for kind, expected in zip(("force", "torque"), NOISE[frame]):
            assert sigma[f"{frame}.{kind}"] == pytest.approx(expected, rel=0.15), (frame, kind)
    weights = dict(zip(noise_groups(model)[0], fit.weights.weights))
    ratio = weights["r_leg_ft_sensor.torque"] / weights["r_leg_ft_sensor.force"]
    assert ratio == pytest.approx((2.0 / 0.04) ** 2, rel=0.3)
    assert np.isclose(np.mean(fit.weights.weights), 1.0)  # groups of 3 rows each: row mean


def test_weighted_beats_unweighted_when_noise_levels_differ(icub):
    """Held out, against the noise-free wrenches: the unweighted fit lets the noisiest rows
    (2 N on the right leg) pull the links every row shares; weighted, the clean rows decide."""
    model, train, test = icub
    Y, b, _ = model.rows(test)
    errors = {}
    for weighting in ("none", "channel"):
        fit = fit_whole_body(model, train, "lmi", weighting=weighting)
        residual = (Y @ fit.x - b).reshape(len(test), -1)
        errors[weighting] = np.array(
            [np.sqrt(np.mean(residual[:, rows] ** 2)) for rows in noise_groups(model)[1]]
        )
    ratio = errors["channel"] / errors["none"]
    assert np.all(ratio <= 1.05) and np.exp(np.mean(np.log(ratio))) < 0.5


def test_block_window_per_channel_equals_the_stacked_rows():
    t, rows, f, groups = block_window_rows()
    channels = [np.array([0]), np.array([1]), np.array([2])]
    window = BlockWindow(10.0, 5, 3, row_groups=groups, channels=channels)
    window.extend(t, rows, f)
    per_channel = window.channel_normal_equations(0.5)  # the newest 1 s block
    new = t >= 2.0 - 1e-9
    assert per_channel.n_samples == 10 and np.array_equal(per_channel.channel_rows, [1, 1, 1])
    for c in range(3):
        Y, y = rows[new, c], f[new, c]
        assert np.allclose(per_channel.gram[c], Y.T @ Y) and np.allclose(per_channel.yty[c], y @ y)
        assert np.allclose(per_channel.moment[c], Y.T @ y)
    gram, moment, yty, n_rows = window.normal_equations()
    Y, y = rows.reshape(-1, 5), f.reshape(-1)
    assert np.allclose(gram, Y.T @ Y) and np.allclose(moment, Y.T @ y) and n_rows == 90
    with pytest.raises(ValueError, match="cover each row"):
        BlockWindow(10.0, 5, 3, row_groups=groups, channels=channels[:2])
    with pytest.raises(ValueError, match="no per-channel products"):
        BlockWindow(10.0, 5, 3, row_groups=groups).channel_normal_equations()


def test_node_whole_body_mode_takes_the_weighting():
    values = {
        "mode": "whole_body",
        "urdf_path": str(example_robot_urdf("icub")),
        "imu_frame": "imu_frame",
        "imu_topic": "/imu",
        "ft_frames": ["l_sole"],
        "ft_topics": ["/l_sole"],
        "ft_types": ["contact"],
    }
    assert settings_from_parameters(values).weighting == modes.get("whole_body").default_weighting
    for weighting in ("none", "channel"):
        session = build_session(settings_from_parameters({**values, "weighting": weighting}))
        assert session.estimator.config.weighting == weighting
        assert session.diagnostics().values["weighting"] == weighting
