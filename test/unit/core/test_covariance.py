"""Covariance of estimates: the formula, derived quantities, and Monte-Carlo agreement on simulated
data, for an interior optimum (the estimator end to end) and for estimates on the boundary of the
consistent set (a thin plate)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from inertia_id_ros.core.covariance import (
    ChannelNormalEquations,
    active_constraint_rows,
    com_covariance,
    com_jacobian,
    confidence_ellipsoid,
    inertia_com_covariance,
    inertia_com_jacobian,
    parameter_covariance,
)
from inertia_id_ros.core.inertia import (
    inertia_from_theta,
    inertia_to_msg_order,
    pseudo_inertia,
    theta_from_inertia,
)
from inertia_id_ros.online.payload_estimator import EstimatorConfig, PayloadEstimator
from inertia_id_ros.sim.payload import PayloadSimulator, box_inertia, default_payload_theta
from inertia_id_ros.solvers import Problem, solve

T0 = 1.7e9  # s, first stamp
MC_RATE, MC_DURATION, MC_SEEDS = 150.0, 12.0, 50
AGREEMENT = 0.30
"""Predicted and Monte-Carlo standard deviations agree within this fraction."""


def random_samples(
    rng: np.random.Generator,
    n: int = 400,
    p: int = 16,
    noise: tuple[float, ...] = (0.1, 0.1, 0.1, 0.005, 0.005, 0.005),
):
    Y = rng.normal(size=(n, 6, p))
    x = rng.normal(size=p)
    f = Y @ x + rng.normal(size=(n, 6)) * np.array(noise)
    return Y, f, x


def test_channel_normal_equations_sum_to_the_stacked_ones_and_give_channel_residuals():
    rng = np.random.default_rng(0)
    Y, f, x = random_samples(rng)
    channels = ChannelNormalEquations.from_samples(Y, f)
    gram, moment, yty, rows = channels.total()
    stacked = Y.reshape(-1, Y.shape[2])
    assert np.allclose(gram, stacked.T @ stacked) and np.allclose(moment, stacked.T @ f.ravel())
    assert np.isclose(yty, f.ravel() @ f.ravel()) and rows == 6 * Y.shape[0]
    assert np.allclose(channels.squared_residuals(x), ((Y @ x - f) ** 2).sum(axis=0))


def test_unconstrained_covariance_is_the_sandwich_with_channel_variances():
    rng = np.random.default_rng(1)
    Y, f, _ = random_samples(rng)
    channels = ChannelNormalEquations.from_samples(Y, f)
    gram, moment, _, _ = channels.total()
    x = np.linalg.solve(gram, moment)
    result = parameter_covariance(channels, x, constrained=False)
    residual = Y @ x - f
    variance = (residual**2).sum(axis=0) / (Y.shape[0] - Y.shape[2] / 6)
    meat = sum(v * Y[:, c].T @ Y[:, c] for c, v in enumerate(variance))
    inverse = np.linalg.inv(gram)
    assert np.allclose(result.channel_variance, variance)
    assert np.allclose(result.matrix, inverse @ meat @ inverse, rtol=1e-8, atol=0)
    assert result.rank == 16 and result.active_constraints == 0
    assert 1.0 < result.condition_number < 10.0
    # equal noise on every channel: the classical sigma^2 (Y^T Y)^-1
    Y, f, _ = random_samples(rng, noise=(0.1,) * 6)
    channels = ChannelNormalEquations.from_samples(Y, f)
    x = np.linalg.solve(*channels.total()[:2])
    pooled = channels.squared_residuals(x).sum() / (f.size - 16)
    assert np.allclose(
        parameter_covariance(channels, x, constrained=False).matrix,
        pooled * np.linalg.inv(channels.total()[0]),
        rtol=0.15,
    )


def test_unidentifiable_directions_carry_no_variance():
    rng = np.random.default_rng(2)
    Y, f, _ = random_samples(rng, p=12)
    Y[:, :, 11] = Y[:, :, 10]  # two columns the data cannot tell apart
    channels = ChannelNormalEquations.from_samples(Y, f)
    x = np.linalg.lstsq(Y.reshape(-1, 12), f.ravel(), rcond=None)[0]
    result = parameter_covariance(channels, x, n_bodies=1, constrained=False)
    assert result.rank == 11 and np.isinf(result.condition_number)
    assert np.all(np.isfinite(result.matrix))
    direction = np.zeros(12)
    direction[10], direction[11] = 1.0, -1.0
    assert direction @ result.matrix @ direction < 1e-12 * np.trace(result.matrix)
    assert np.linalg.eigvalsh(result.matrix)[0] > -1e-15


def test_active_constraints_are_the_null_directions_of_the_pseudo_inertia():
    plate = theta_from_inertia(
        1.0, np.array([0.02, 0.01, 0.05]), box_inertia(1.0, (0.15, 0.10, 0.0))
    )  # flat: J has one 0 eigenvalue
    rows = active_constraint_rows(plate)
    assert rows.shape == (1, 10)
    u = np.linalg.eigh(pseudo_inertia(plate))[1][:, 0]
    delta = np.random.default_rng(3).normal(size=10)
    assert np.isclose(rows[0] @ delta, u @ pseudo_inertia(delta) @ u)
    point = theta_from_inertia(1.0, np.zeros(3), np.zeros((3, 3)))  # J of rank 1: 3 x 3 block
    assert active_constraint_rows(point).shape == (6, 10)
    assert active_constraint_rows(default_payload_theta()).shape == (0, 10)


def test_com_and_inertia_jacobians_match_finite_differences():
    theta = default_payload_theta()
    step = 1e-7

    def numeric(function):
        return np.column_stack(
            [
                (function(theta + step * e) - function(theta - step * e)) / (2 * step)
                for e in np.eye(10)
            ]
        )

    assert np.allclose(com_jacobian(theta), numeric(lambda t: inertia_from_theta(t)[1]), atol=1e-6)
    assert np.allclose(
        inertia_com_jacobian(theta),
        numeric(lambda t: inertia_to_msg_order(inertia_from_theta(t)[2])),
        atol=1e-6,
    )
    covariance = np.diag(np.linspace(1.0, 2.0, 10)) * 1e-8
    jacobian = com_jacobian(theta)
    assert np.allclose(com_covariance(theta, covariance), jacobian @ covariance @ jacobian.T)
    assert inertia_com_covariance(theta, covariance).shape == (6, 6)


def test_confidence_ellipsoid_spans_n_sigma_along_the_covariance_axes():
    rng = np.random.default_rng(4)
    a = rng.normal(size=(3, 3))
    covariance = a @ a.T
    ellipsoid = confidence_ellipsoid(np.ones(3), covariance, n_sigma=3.0)
    r, s = ellipsoid.rotation, ellipsoid.semi_axes
    assert np.isclose(np.linalg.det(r), 1.0)
    assert np.allclose(r @ np.diag(s**2) @ r.T, 9.0 * covariance)


def test_ellipsoid_quaternion_is_its_rotation_and_allocates_nothing_per_call():
    """The markers' quaternion, once a second for hours: a version through pinocchio's
    ``Quaternion(R)`` kept 80 bytes of heap per call."""
    rng = np.random.default_rng(5)
    a = rng.normal(size=(3, 3))
    ellipsoid = confidence_ellipsoid(np.zeros(3), a @ a.T)
    x, y, z, w = ellipsoid.quaternion_xyzw
    assert np.isclose(x * x + y * y + z * z + w * w, 1.0)
    rotation = np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )
    assert np.allclose(rotation, ellipsoid.rotation)
    try:
        mallinfo2 = ctypes.CDLL(None).mallinfo2
    except (OSError, AttributeError, TypeError):
        pytest.skip("glibc's mallinfo2 is not available here")

    class MallInfo2(ctypes.Structure):
        _fields_ = [
            (name, ctypes.c_size_t)
            for name in (
                "arena",
                "ordblks",
                "smblks",
                "hblks",
                "hblkhd",
                "usmblks",
                "fsmblks",
                "uordblks",
                "fordblks",
                "keepcost",
            )
        ]

    mallinfo2.restype = MallInfo2
    for _ in range(100):
        ellipsoid.quaternion_xyzw
    before = mallinfo2().uordblks
    for _ in range(20000):
        ellipsoid.quaternion_xyzw
    assert mallinfo2().uordblks - before < 100_000  # 1.6 MB through pinocchio


# ---- Monte-Carlo -----------------------------------------------------------------------------


def monte_carlo_ratios(estimates: list, true_covariances: list) -> np.ndarray:
    """Mean predicted std / empirical std of theta (10) and of the COM (3)."""
    theta = np.array([e for e in estimates])
    empirical = np.concatenate(
        [
            theta.std(axis=0, ddof=1),
            np.array([inertia_from_theta(t)[1] for t in theta]).std(axis=0, ddof=1),
        ]
    )
    predicted = np.mean(
        [
            np.concatenate([np.sqrt(np.diag(c)), np.sqrt(np.diag(com_covariance(t, c)))])
            for t, c in zip(theta, true_covariances)
        ],
        axis=0,
    )
    return predicted / empirical


def test_predicted_std_matches_monte_carlo_of_the_estimator():
    """50 noise seeds (F/T noise 0.1 N / 0.005 N m, encoder noise) on one 12 s trajectory at
    150 Hz, the estimator end to end (filter, LMI, offset): predicted vs empirical std."""
    sim = PayloadSimulator.panda()
    t = np.arange(0.0, MC_DURATION, 1.0 / MC_RATE)
    t_wrench = t + 0.0013
    true_wrench = sim.true_wrench(t_wrench) + sim.true_offset
    thetas, covariances = [], []
    for seed in range(MC_SEEDS):
        rng = np.random.default_rng(100 + seed)
        q, dq = sim.measure_joints(t, rng)
        wrench = true_wrench + rng.normal(size=true_wrench.shape) * sim.wrench_noise_std
        estimator = PayloadEstimator(sim.kinematics, EstimatorConfig(window_sec=MC_DURATION + 5))
        for i in range(t.size):
            estimator.add_joint_state(T0 + t[i], sim.joint_names, q[i], dq[i])
            estimator.add_wrench(T0 + t_wrench[i], wrench[i], sim.sensor_frame)
        estimator.process()
        estimate = estimator.solve()
        thetas.append(estimate.theta)
        covariances.append(estimate.covariance)
    ratios = monte_carlo_ratios(thetas, covariances)
    print(
        "predicted / Monte-Carlo std: theta",
        np.round(ratios[:10], 3),
        "COM",
        np.round(ratios[10:], 3),
    )
    assert np.all(np.abs(ratios - 1.0) < AGREEMENT), ratios


@pytest.fixture(scope="module")
def plate_regressor() -> tuple[PayloadSimulator, np.ndarray]:
    """A flat payload (a 15 x 10 cm plate: J singular) and 12 s of its regressor at 150 Hz."""
    plate = theta_from_inertia(
        1.0, np.array([0.02, 0.01, 0.05]), box_inertia(1.0, (0.15, 0.10, 0.0))
    )
    sim = PayloadSimulator.panda(payload_theta=plate)
    t = np.arange(0.0, MC_DURATION, 1.0 / MC_RATE)
    q, dq = sim.measure_joints(t, np.random.default_rng(0))
    estimator = PayloadEstimator(sim.kinematics, EstimatorConfig(window_sec=MC_DURATION + 5))
    for i in range(t.size):
        estimator.add_joint_state(T0 + t[i], sim.joint_names, q[i], dq[i])
        estimator.add_wrench(T0 + t[i] + 0.0013, np.zeros(6), sim.sensor_frame)
    estimator.process()
    return sim, estimator.window.samples()[1]


def test_boundary_estimates_tangent_projection_matches_monte_carlo(plate_regressor):
    """On a plate the LMI estimate lies on the boundary of the cone for about half the seeds;
    the tangent-projected covariance predicts the spread of all ten parameters, the unconstrained
    one overstates some inertia entries more."""
    sim, Y = plate_regressor
    clean = Y @ np.concatenate([sim.true_theta, sim.true_offset])
    thetas, projected, unconstrained, on_boundary = [], [], [], 0
    for seed in range(200):
        f = clean + np.random.default_rng(seed).normal(size=clean.shape) * sim.wrench_noise_std
        channels = ChannelNormalEquations.from_samples(Y, f)
        gram, moment, yty, rows = channels.total()
        x = np.asarray(
            solve(Problem(gram=gram, moment=moment, yty=yty, n_rows=rows, n_bodies=1), "lmi").x
        )
        covariance = parameter_covariance(channels, x)
        on_boundary += covariance.active_constraints > 0
        thetas.append(x[:10])
        projected.append(covariance.theta())
        unconstrained.append(parameter_covariance(channels, x, constrained=False).theta())
    ratios = monte_carlo_ratios(thetas, projected)
    print(
        "boundary fraction", on_boundary / 200, "projected / Monte-Carlo std", np.round(ratios, 3)
    )
    assert 0.3 < on_boundary / 200 < 0.8
    assert np.all(np.abs(ratios - 1.0) < AGREEMENT), ratios
    unconstrained_ratios = monte_carlo_ratios(thetas, unconstrained)
    assert np.max(np.abs(ratios - 1.0)) < np.max(np.abs(unconstrained_ratios - 1.0))


@pytest.mark.parametrize("n_samples", [10, 300])
def test_channel_grams_equal_the_dense_products(n_samples: int) -> None:
    """Skipping each channel's zero columns (in runs, as a chain's joints: the links before a
    joint and the other joints' drives) changes nothing but round-off; NaN columns are kept."""
    from inertia_id_ros.core.covariance import channel_grams

    rng = np.random.default_rng(5)
    r, p = 4, 26
    Y = rng.standard_normal((n_samples, r, p))
    for c in range(r):
        Y[:, c, : 5 * c] = 0.0
        Y[:, c, 20:] = 0.0
        Y[:, c, 20 + c] = rng.standard_normal(n_samples)
    Y[:, 3] = 0.0  # a channel with no columns at all
    Y[:, 2, 2] = 0.0
    dense = np.einsum("ncp,ncq->cpq", Y, Y)
    np.testing.assert_allclose(channel_grams(Y), dense, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(channel_grams(Y[::2]), dense_of(Y[::2]), rtol=1e-12, atol=1e-10)
    Y[0, 1, 3] = np.nan
    assert np.isnan(channel_grams(Y)[1, 3, 3])


def dense_of(Y: np.ndarray) -> np.ndarray:
    return np.einsum("ncp,ncq->cpq", Y, Y)
