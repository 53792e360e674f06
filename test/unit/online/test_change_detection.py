"""Payload change detection: the CUSUM itself, then the detector on the estimator's rows of
simulated data with a payload that switches (detected, then re-identified) or stays (no alarm)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from inertia_id_ros.core.inertia import inertia_from_theta, theta_from_inertia
from inertia_id_ros.online.change_detection import (
    ChangeDetectorConfig,
    ChangeEvent,
    PayloadChangeDetector,
    residual_sigma,
)
from inertia_id_ros.online.payload_estimator import EstimatorConfig, PayloadEstimator
from inertia_id_ros.online.payload_session import PayloadSession
from inertia_id_ros.sim.payload import DEFAULT_WRENCH_NOISE_STD, PayloadSimulator, box_inertia

T0 = 1000.0  # s, first stamp


# ---- the CUSUM on synthetic rows ----------------------------------------------------------------


def synthetic_rows(
    n: int,
    seed: int = 0,
    bias: np.ndarray | None = None,
    sigma: np.ndarray = DEFAULT_WRENCH_NOISE_STD,
):
    """Random rows ``Y`` (n, 6, 16) and wrenches ``f = Y [theta, offset] + noise (+ bias)``."""
    rng = np.random.default_rng(seed)
    theta = PayloadSimulator.panda().true_theta
    offset = np.array([4.0, -3.0, 6.0, 0.2, -0.15, 0.1])
    Y = np.concatenate([rng.normal(size=(n, 6, 10)), np.broadcast_to(np.eye(6), (n, 6, 6))], 2)
    f = Y[:, :, :10] @ theta + offset + rng.normal(size=(n, 6)) * sigma
    if bias is not None:
        f = f + bias
    return theta, offset, Y, f


def armed_detector(theta, offset, **config) -> PayloadChangeDetector:
    detector = PayloadChangeDetector(ChangeDetectorConfig(**config))
    assert detector.set_reference(theta, offset, DEFAULT_WRENCH_NOISE_STD, span=10.0)
    return detector


def test_batches_give_the_statistic_and_alarm_of_the_sample_by_sample_recursion():
    n, change = 3000, 2000
    bias = np.where(np.arange(n)[:, None] >= change, [0.5, 0, 0, 0, 0, 0], 0.0)  # 5 sigma on fx
    theta, offset, Y, f = synthetic_rows(n, bias=bias)
    t = T0 + np.arange(n) * 1e-3
    config = ChangeDetectorConfig()
    statistic, expected_alarm = 0.0, None
    z = armed_detector(theta, offset).scores(Y, f)
    for i, zi in enumerate(z):
        statistic = max(0.0, statistic + min(zi, config.max_score) - 1.0 - config.drift)
        if statistic >= config.threshold:
            expected_alarm = i
            break
    assert expected_alarm is not None and change < expected_alarm < change + 40
    for bounds in ([0, n], [0, 500, 1999, 2001, 2050, n], list(range(0, n + 1, 7)) + [n]):
        detector = armed_detector(theta, offset)
        events = [detector.update(t[a:b], Y[a:b], f[a:b]) for a, b in zip(bounds, bounds[1:])]
        events = [event for event in events if event is not None]
        assert len(events) == 1
        event = events[0]
        assert event.t_detected == t[expected_alarm]
        assert event.statistic == pytest.approx(statistic)
        assert change - 3 <= round((event.t_onset - T0) * 1e3) <= change  # the excursion's start
        assert event.n_samples == round((event.t_detected - event.t_onset) * 1e3) + 1
        assert event.residual_mean[0] == pytest.approx(0.5, abs=0.1)
        assert not detector.armed and detector.statistic == 0.0
        assert "payload change detected" in str(event)


def test_fewer_than_min_samples_glitches_cannot_raise_an_alarm():
    theta, offset, Y, f = synthetic_rows(400)
    t = T0 + np.arange(400) * 1e-3
    spikes = f.copy()
    spikes[100:109] += 1e3  # 9 samples far off
    detector = armed_detector(theta, offset, min_samples=10)
    assert detector.update(t, Y, spikes) is None
    assert 0 < detector.statistic < detector.config.threshold
    spikes[109] += 1e3  # the 10th
    event = armed_detector(theta, offset, min_samples=10).update(t, Y, spikes)
    assert isinstance(event, ChangeEvent) and event.t_detected == t[109]


def test_disarmed_short_references_and_re_arming():
    theta, offset, Y, f = synthetic_rows(2000, bias=np.array([5.0, 0, 0, 0, 0, 0]))
    t = T0 + np.arange(2000) * 1e-3
    detector = PayloadChangeDetector(ChangeDetectorConfig(min_reference_sec=1.0))
    assert not detector.armed and detector.update(t, Y, f) is None  # no reference yet
    with pytest.raises(RuntimeError, match="set_reference"):
        detector.scores(Y, f)
    assert not detector.set_reference(theta, offset, np.full(6, 0.1), span=0.9)  # too short
    assert not detector.armed and detector.update(t, Y, f) is None
    assert detector.set_reference(theta, offset, np.full(6, 0.1), span=1.0)
    event = detector.update(t[500:], Y[500:], f[500:])
    assert event.t_onset == t[500] and event.n_samples == 10
    assert not detector.armed
    detector.set_reference(theta, offset + [5.0, 0, 0, 0, 0, 0], np.full(6, 0.1), span=1.0)
    assert detector.update(t, Y, f) is None  # the new reference fits
    detector.reset()
    assert not detector.armed


def test_invalid_configuration_and_inputs_are_rejected():
    for bad in (
        {"drift": -1.0},
        {"threshold": 0.0},
        {"min_samples": 0},
        {"min_samples": 2.5},
        {"min_reference_sec": -1.0},
        {"sigma_floor": [0.1, 0.1, 0.1, 0.0, 0.01, 0.01]},
    ):
        with pytest.raises(ValueError, match="ChangeDetectorConfig"):
            ChangeDetectorConfig(**bad)
    theta, offset, Y, f = synthetic_rows(10)
    detector = PayloadChangeDetector()
    with pytest.raises(ValueError, match="theta"):
        detector.set_reference(theta[:9], offset, np.ones(6), span=10.0)
    with pytest.raises(ValueError, match="sigma"):
        detector.set_reference(theta, offset, [np.nan] * 6, span=10.0)
    detector.set_reference(theta, offset, np.ones(6), span=10.0)
    with pytest.raises(ValueError, match="need Y"):
        detector.update(np.arange(10.0), Y[:, :3], f)
    with pytest.raises(ValueError, match="at least one sample"):
        residual_sigma(Y[:0], f[:0], theta, offset)


def test_residual_sigma_is_the_worst_part_of_the_window():
    theta, offset, Y, f = synthetic_rows(1000)
    f[900:, 3] += np.random.default_rng(5).normal(size=100) * 0.05  # a noisier tenth
    sigma = residual_sigma(Y, f, theta, offset)
    assert np.allclose(sigma[:3], 0.1, rtol=0.3)
    assert sigma[3] == pytest.approx(0.05, rel=0.2)
    assert residual_sigma(Y, f, theta, offset, n_segments=1)[3] == pytest.approx(0.017, rel=0.3)


# ---- on the estimator's rows of simulated data ---------------------------------------------------


class OnlineLoop:
    """The node's loop on simulated data: buffer ``chunk_sec`` of samples into a
    :class:`~inertia_id_ros.online.payload_session.PayloadSession` and update it (process, change
    detection, solve, new reference), as the node's worker does at 1 / ``chunk_sec`` Hz."""

    def __init__(
        self,
        sim: PayloadSimulator,
        rate: float,
        window_sec: float = 30.0,
        filter_half_width: float = 0.05,
        chunk_sec: float = 0.1,
        seed: int = 0,
        weighting: str = "channel",
    ) -> None:
        self.sim, self.rate, self.chunk_sec = sim, rate, chunk_sec
        self.session = PayloadSession(
            PayloadEstimator(
                sim.kinematics,
                EstimatorConfig(
                    window_sec=window_sec,
                    filter_half_width=filter_half_width,
                    window_capacity=int(1.1 * window_sec * rate),
                    weighting=weighting,
                ),
            )
        )
        self.estimator, self.detector = self.session.estimator, self.session.detector
        self.events = self.session.changes
        self.rng = np.random.default_rng(seed)
        self.k = 0
        self.max_statistic = 0.0

    def run(self, seconds: float, payload: PayloadSimulator | None = None) -> None:
        """``seconds`` more of the motion; the wrenches of ``payload`` (default the first)."""
        payload = payload or self.sim
        n_chunk = int(round(self.chunk_sec * self.rate))
        for start in range(self.k, self.k + int(round(seconds * self.rate)), n_chunk):
            t = np.arange(start, start + n_chunk) / self.rate
            q, dq = self.sim.measure_joints(t, self.rng)
            wrench = payload.measure_wrench(t, self.rng)
            for i in range(t.size):
                assert (
                    self.session.add_joint_state(T0 + t[i], self.sim.joint_names, q[i], dq[i])
                    is None
                )
                assert self.session.add_wrench(T0 + t[i], wrench[i], self.sim.sensor_frame) is None
            self.k = start + n_chunk
            self.session.update(T0 + t[-1])
            self.max_statistic = max(self.max_statistic, self.detector.statistic)


def errors(estimate, theta: np.ndarray, offset: np.ndarray) -> dict[str, float]:
    mass, com, inertia = inertia_from_theta(theta)
    return {
        "mass": abs(estimate.mass - mass) / mass,
        "com": float(np.linalg.norm(estimate.com - com)),
        "inertia": float(np.linalg.norm(estimate.inertia_com - inertia) / np.linalg.norm(inertia)),
        "force_offset": float(np.linalg.norm(estimate.sensor_offset[:3] - offset[:3])),
    }


def heavier_payload() -> np.ndarray:
    """2.3 kg, a 15 x 10 x 20 cm box tilted 17 deg about y, COM at (-2, 4, 11) cm."""
    rotation = pin.utils.rotate("y", 0.3)
    inertia = rotation @ box_inertia(2.3, (0.15, 0.10, 0.20)) @ rotation.T
    return theta_from_inertia(2.3, np.array([-0.02, 0.04, 0.11]), inertia)


def light_payload() -> np.ndarray:
    """What stays after releasing the part: 0.4 kg, 10 x 6 x 8 cm, COM at (0, 1, 4) cm."""
    return theta_from_inertia(
        0.4, np.array([0.0, 0.01, 0.04]), box_inertia(0.4, (0.10, 0.06, 0.08))
    )


@pytest.mark.parametrize(
    "new_payload", [heavier_payload, light_payload], ids=["grasp_2.3kg", "release_to_0.4kg"]
)
def test_a_payload_switch_is_detected_at_once_and_the_new_payload_identified(new_payload):
    rate, t_switch = 1000.0, 12.0
    before = PayloadSimulator.panda()
    after = PayloadSimulator.panda(payload_theta=new_payload())  # same motion, offset, noise
    loop = OnlineLoop(before, rate)
    loop.run(t_switch)
    assert not loop.events and loop.detector.armed
    loop.run(1.0, after)
    assert len(loop.events) == 1, loop.events
    event = loop.events[0]
    assert 0.0 <= event.t_detected - (T0 + t_switch) < 1.0
    assert abs(event.t_onset - (T0 + t_switch)) <= 2.0 / rate
    loop.run(19.0, after)  # 20 s after the switch
    assert len(loop.events) == 1, loop.events[1:]
    estimate = loop.estimator.solve()
    assert estimate.t_first >= event.t_onset  # only the new payload's samples
    error = errors(estimate, after.true_theta, after.true_offset)
    assert error["mass"] < 0.005 and error["com"] < 0.002, error
    assert error["inertia"] < 0.10 and error["force_offset"] < 0.1, error


def test_ten_minutes_of_the_same_payload_raise_no_alarm():
    """200 Hz (for speed), window 10 s, an update (and a new reference) every 0.5 s; simulator
    noise."""
    loop = OnlineLoop(PayloadSimulator.panda(seed=3), 200.0, window_sec=10.0, chunk_sec=0.5, seed=3)
    loop.run(600.0)
    assert not loop.events, loop.events
    assert loop.detector.armed
    assert loop.max_statistic < 0.2 * loop.detector.config.threshold


def test_the_window_residuals_absorb_the_estimates_own_model_error():
    """Residuals of a distorted fit raise no alarm against the window, but do against the sensor.

    A 0.2 s derivative filter distorts the accelerations (torque residuals 2-3 times the sensor
    noise, varying along the motion): tested against the window's residuals, no alarm; against
    the sensor's nominal noise, alarms. (Unweighted: weighted by channel, the fit follows the
    torque rows closely enough that their residuals stay near the noise.)"""
    sim = PayloadSimulator.panda(seed=2)
    loop = OnlineLoop(
        sim, 200.0, window_sec=10.0, filter_half_width=0.2, chunk_sec=0.5, seed=2, weighting="none"
    )
    loop.run(60.0)
    assert not loop.events, loop.events
    _, Y, f = loop.estimator.window.samples(copy=False)
    estimate = loop.estimator.solve()
    sigma = residual_sigma(Y, f, estimate.theta, estimate.sensor_offset)
    assert np.all(sigma[3:] > 1.5 * sim.wrench_noise_std[3:])
    nominal = PayloadChangeDetector()  # the same reference, scaled by the sensor's noise
    assert nominal.set_reference(
        estimate.theta,
        estimate.sensor_offset,
        sim.wrench_noise_std,
        span=estimate.t_last - estimate.t_first,
    )
    t, Y, f = loop.estimator.window.samples(copy=False)
    assert nominal.update(t, Y, f) is not None
