"""The online session: the update rules the node, replay and tests share (no ROS)."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.estimators import T0
from inertia_id_ros.core.inertia import check_consistency
from inertia_id_ros.online.payload_session import PayloadSession, payload_session
from inertia_id_ros.online.session import ERROR, OK, WARN
from inertia_id_ros.sim.payload import PayloadSimulator, grasped_payload_theta

RATE = 200.0


def feed(
    session: PayloadSession, sim: PayloadSimulator, start: float, seconds: float, seed: int = 0
) -> None:
    rng = np.random.default_rng(seed)
    t = start + np.arange(int(round(seconds * RATE))) / RATE
    q, dq, wrench = sim.measure(t, rng)
    for i in range(t.size):
        assert session.add_joint_state(T0 + t[i], sim.joint_names, q[i], dq[i]) is None
        assert session.add_wrench(T0 + t[i], wrench[i], sim.sensor_frame) is None


@pytest.fixture
def sim() -> PayloadSimulator:
    return PayloadSimulator.panda()


@pytest.fixture
def session(sim) -> PayloadSession:
    return payload_session(sim.kinematics, window_sec=10.0, max_input_rate_hz=RATE)


def test_an_update_waits_for_data_then_gives_a_consistent_estimate(session, sim):
    first = session.update(0.0)
    assert first.status == "too_few_samples" and first.estimate is None and not first.failed
    assert session.diagnostics(0.0).level == WARN
    feed(session, sim, 0.0, 12.0)
    update = session.update(12.0)
    assert update.ok and check_consistency(update.estimate.theta).fully_consistent
    assert update.message.startswith("lmi: m = ") and session.last is update
    assert session.estimates == 1 and not session.failed_solves
    diagnostics = session.diagnostics(12.0)
    assert diagnostics.level in (OK, WARN)  # WARN: advice to excite more
    assert diagnostics.values["published"] == "1"
    assert abs(update.estimate.mass - sim.true_theta[0]) < 0.01 * sim.true_theta[0]


def test_a_failing_solver_is_counted_reported_and_keeps_the_last_estimate(session, sim):
    feed(session, sim, 0.0, 12.0)
    good = session.update(12.0)
    assert good.ok
    session.configure_solver("lmi", {"backend": "cvxpy", "solver": "NO_SUCH_SOLVER"})
    bad = session.update(12.5)
    assert bad.status == "solver_failed" and bad.failed and bad.estimate is None
    assert any(kind == "solver_failed" for kind, _ in bad.warnings)
    assert session.failed_solves == {"solver_failed": 1} and session.last is good
    diagnostics = session.diagnostics(13.0)
    assert diagnostics.level == ERROR and "last estimate stays" in diagnostics.message
    identify = session.identify(method="ols")  # another method: its own defaults
    assert identify.status in ("ok", "inconsistent") and session.failed_solves["solver_failed"] == 1


def test_a_grasp_restarts_the_window_at_its_onset_and_the_new_payload_is_identified(session, sim):
    feed(session, sim, 0.0, 12.0)
    assert session.update(12.0).ok and session.detector.armed
    grasped = sim.with_payload(grasped_payload_theta())
    feed(session, grasped, 12.0, 1.0, seed=1)
    update = session.update(13.0)
    assert update.change is not None and session.changes == [update.change]
    assert abs(update.change.t_onset - (T0 + 12.0)) < 2.0 / RATE
    assert any(kind == "payload_change" for kind, _ in update.warnings)
    t, _, _ = session.estimator.window.samples(copy=False)
    assert t[0] >= update.change.t_onset  # only the new payload's samples stay
    feed(session, grasped, 13.0, 11.0, seed=2)
    final = session.update(24.0)
    assert final.ok and final.change is None
    assert abs(final.estimate.mass - 2.3) < 0.01 * 2.3


def test_a_paused_detector_keeps_the_window_and_resumes_afresh(session, sim):
    feed(session, sim, 0.0, 12.0)
    assert session.update(12.0).ok and session.detector.armed
    session.pause_change_detection(True)
    grasped = sim.with_payload(grasped_payload_theta())
    feed(session, grasped, 12.0, 1.0, seed=1)
    update = session.update(13.0)
    assert update.change is None and not session.changes  # no alarm while paused
    assert session.estimator.window.t_first < T0 + 12.0 - 5.0
    session.pause_change_detection(False)
    assert not session.detector.armed  # a new reference first


def test_an_interval_of_the_past_is_identified_on_exactly_its_samples(session, sim):
    feed(session, sim, 0.0, 12.0)
    update = session.identify(duration=4.0, now=12.0, until=T0 + 9.0)
    assert update.ok and update.estimate.n_samples == 4 * RATE + 1
    assert update.estimate.t_first == pytest.approx(T0 + 5.0)
    assert update.estimate.t_last == pytest.approx(T0 + 9.0)


def test_processing_drops_and_input_rates_are_reported_once(session, sim):
    rng = np.random.default_rng(0)
    t = np.arange(0, int(3 * RATE)) / RATE
    wrench = sim.measure_wrench(t, rng)
    for i in range(t.size):  # wrenches with no joint state at all
        session.add_wrench(T0 + t[i], wrench[i], sim.sensor_frame)
    q, dq = sim.measure_joints(t + 10.0, rng)
    for i in range(t.size):  # joint states that start later: earlier wrenches never covered
        session.add_joint_state(T0 + 10.0 + t[i], sim.joint_names, q[i], dq[i])
    update = session.update(13.0)
    kinds = [kind for kind, _ in update.warnings]
    assert "no_joint_state" in kinds
    assert "no_joint_state" not in [kind for kind, _ in session.update(13.5).warnings]
    session.diagnostics(now=100.0)
    rates = session.diagnostics(now=101.0 + 5.0).values
    assert "rate_hz.wrench" in rates


def test_a_rejected_sample_gives_the_warning_and_is_counted(session, sim):
    warning = session.add_wrench(T0, np.full(6, np.nan), sim.sensor_frame)
    assert warning is not None and warning[0] == "non_finite" and "1 so far" in warning[1]
    assert session.estimator.stats().dropped == {"non_finite": 1}


def test_tare_without_payload_restarts_the_window_and_disarms_the_detector(session, sim):
    feed(session, sim, 0.0, 12.0)
    assert session.update(12.0).ok and session.detector.armed
    tare = session.tare(1.0)
    assert tare.n_samples > 0 and len(session.estimator.window) == 0
    assert not session.detector.armed
