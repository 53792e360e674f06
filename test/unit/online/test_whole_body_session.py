"""The online whole-body session: sync by stamp, consistent links with identifiability, stopped
sensors reported and their rows dropped."""

import numpy as np
import pytest

from helpers.estimators import block_window_rows, rms_radius
from inertia_id_ros.core.inertia import check_consistency
from inertia_id_ros.core.whole_body_model import FTSensor, WholeBodyModel
from inertia_id_ros.online.whole_body_session import whole_body_session
from inertia_id_ros.online.window import BlockWindow
from inertia_id_ros.sim import whole_body_robots as wb

RATE = 200.0
SAMPLE_RATE = 100.0


@pytest.fixture(scope="module")
def icub():
    sim = wb.icub(seed=5)
    return sim, sim.record(3.0, RATE, with_effort=True)


def _session(sim, **kwargs):
    model = WholeBodyModel.from_urdf(
        wb.example_robot_urdf("icub"),
        "floating",
        [FTSensor(f, k) for f, k in sim.ft_sensors],
        sim.imu_frame,
    )
    return whole_body_session(
        model, window_sec=30.0, max_input_rate_hz=RATE, sample_rate_hz=SAMPLE_RATE, **kwargs
    )


def _feed(session, data, start=0, stop=None, silent=()):
    """Offer samples ``start:stop`` of a recording (every input, same stamps), except the
    wrenches of the ``silent`` sensors; returns the warnings."""
    warnings = []
    names = list(data["joint_names"])
    for i in range(start, stop or data["t"].size):
        t = data["t"][i]
        warnings.append(
            session.add_joint_state(t, names, data["q"][i], data["dq"][i], data["effort"][i])
        )
        warnings.append(
            session.add_imu(
                t, data["imu_angular_velocity"][i], data["imu_linear_acceleration"][i], "imu_frame"
            )
        )
        for k, frame in enumerate(map(str, data["ft_frames"])):
            if frame not in silent:
                warnings.append(session.add_wrench(frame, t, data["ft_wrench"][i, k], frame))
    return [w for w in warnings if w is not None]


def test_session_publishes_every_link_consistent_with_its_identifiability(icub):
    sim, data = icub
    session = _session(sim)
    assert _feed(session, data) == []
    update = session.update(now=3.0)
    assert update.ok, update.message
    estimate = update.estimate
    assert len(estimate.link_names) == 39
    assert all(check_consistency(theta).fully_consistent for theta in estimate.thetas)
    assert set(estimate.labels) <= {"identified", "partly identified", "prior only"}
    assert 0 < estimate.rank < estimate.n_params
    assert set(estimate.offsets) == set(wb.ICUB_INTERNAL_SENSORS)
    assert estimate.n_samples > 0.9 * data["t"].size * SAMPLE_RATE / RATE
    values = session.diagnostics().values
    assert values["stopped_sensors"] == ""
    assert int(values["received.wrench.l_sole"]) == data["t"].size
    assert isinstance(session.estimator.window, BlockWindow)
    refused = session.identify("ols", now=3.0)  # OLS leaves links inconsistent: never published
    assert refused.status == "inconsistent" and "mass" in refused.message
    assert session.last is update


def test_session_estimates_a_contact_sensors_offset_on_request(icub):
    """A contact sensor with ``estimate_offset=True`` (what the node needs to build for a
    contact-offset parameter): the online estimate carries its offset beside the internal
    sensors'."""
    sim, data = icub
    sensors = [
        FTSensor(f, k, estimate_offset=True if k == "contact" else None) for f, k in sim.ft_sensors
    ]
    model = WholeBodyModel.from_urdf(
        wb.example_robot_urdf("icub"), "floating", sensors, sim.imu_frame
    )
    session = whole_body_session(
        model, window_sec=30.0, max_input_rate_hz=RATE, sample_rate_hz=SAMPLE_RATE
    )
    assert _feed(session, data) == []
    update = session.update(now=3.0)
    assert update.ok, update.message
    contacts = {f for f, k in sim.ft_sensors if k == "contact"}
    assert contacts and set(update.estimate.offsets) == set(wb.ICUB_INTERNAL_SENSORS) | contacts


def test_session_weights_the_noise_groups_online(icub):
    """``weighting="channel"``: the window keeps per-group products (summed: the unweighted
    window's), every link stays consistent, the groups' residual std are reported and follow
    the simulator's noise (internal sensors: 0.2 N against 0.01 N m)."""
    sim, data = icub
    sessions = {w: _session(sim, weighting=w) for w in ("none", "channel")}
    for session in sessions.values():
        assert _feed(session, data) == []
        session.estimator.process()
    plain = sessions["none"].estimator.window.normal_equations()
    grouped = sessions["channel"].estimator.window.normal_equations()
    for a, b in zip(plain, grouped):
        assert np.allclose(a, b, rtol=1e-9, atol=1e-9 * np.abs(plain[0]).max())
    update = sessions["channel"].update(now=3.0)
    assert update.ok, update.message
    estimate = update.estimate
    assert all(check_consistency(theta).fully_consistent for theta in estimate.thetas)
    sigma = estimate.noise_sigma
    assert len(sigma) == 14 and sessions["none"].update(now=3.0).estimate.noise_sigma == {}
    assert sigma["r_arm_ft_sensor.force"] > 5 * sigma["r_arm_ft_sensor.torque"]
    values = sessions["channel"].diagnostics().values
    assert values["weighting"] == "channel" and "noise_sigma.base.force" in values


def test_joint_torques_add_their_rows(icub):
    sim, data = icub
    session = _session(sim, with_efforts=True)
    _feed(session, data)
    update = session.update(now=3.0)
    assert update.ok, update.message
    assert session.estimator.window.rows_per_sample == 6 + 6 * 6 + 32
    assert all(check_consistency(theta).fully_consistent for theta in update.estimate.thetas)


def test_rows_needing_a_sensor_are_those_its_wrench_enters(icub):
    sim, _ = icub
    estimator = _session(sim).estimator
    channels = estimator.model.channels()
    rows = {
        frame: {channels[c].split(".")[0] for c in np.flatnonzero(estimator._depends[k])}
        for k, frame in enumerate(estimator.sensor_frames)
    }
    assert rows["r_arm_ft_sensor"] == {"r_arm_ft_sensor"}
    assert rows["l_sole"] == {"base", "l_leg_ft_sensor", "l_foot_ft_sensor"}


def test_a_stopped_or_silent_sensor_is_reported_and_its_rows_dropped(icub):
    sim, data = icub
    session = _session(sim)
    _feed(session, data, 0, 200)
    _feed(session, data, 200, silent=("r_arm_ft_sensor",))
    update = session.update(now=3.0)
    assert update.ok, update.message
    stopped = [message for kind, message in update.warnings if kind == "sensor_stopped"]
    assert len(stopped) == 1 and "r_arm_ft_sensor" in stopped[0]
    assert update.estimate.stopped_sensors == ("r_arm_ft_sensor",)
    assert session.diagnostics().values["stopped_sensors"] == "r_arm_ft_sensor"
    assert "rows" in update.advice
    # samples since the stop do not wait for it; those before the timeout lack its wrench
    assert update.estimate.n_samples > 0.8 * data["t"].size * SAMPLE_RATE / RATE
    assert session.estimator.dropped["missing_wrench"] > 0
    # a sensor that never publishes (a topic nobody publishes on) stops as well
    silent = _session(sim)
    _feed(silent, data, silent=("l_sole",))
    update = silent.update(now=3.0)
    assert update.ok and update.estimate.stopped_sensors == ("l_sole",)


def test_bad_inputs_are_dropped_with_the_reason(icub):
    sim, data = icub
    session = _session(sim)
    kind, message = session.add_wrench("no_such_frame", 0.0, np.zeros(6))
    assert kind == "unknown_sensor" and "no_such_frame" in message
    kind, message = session.add_wrench("l_sole", 0.0, np.zeros(6), "r_sole")
    assert kind == "wrong_frame" and "r_sole" in message
    kind, _ = session.add_imu(0.0, np.zeros(3), np.array([0.0, np.nan, 9.81]))
    assert kind == "non_finite"
    kind, message = session.add_imu(0.0, np.zeros(2), np.zeros(3))
    assert kind == "length_mismatch"


def test_block_window_by_row_groups_equals_the_dense_normal_equations():
    t, rows, f, groups = block_window_rows()
    dense, grouped = BlockWindow(10.0, 5, 3), BlockWindow(10.0, 5, 3, row_groups=groups)
    dense.extend(t, rows, f)
    grouped.extend(t, rows, f)
    for a, b in zip(dense.normal_equations(), grouped.normal_equations()):
        assert np.allclose(a, b)
    assert dense.count() == 30 and dense.count(0.5) == 10  # the newest 1 s block
    gram, moment, yty, n_rows = grouped.normal_equations(0.5)
    Y, y = rows[t >= 2.0 - 1e-9].reshape(-1, 5), f[t >= 2.0 - 1e-9].reshape(-1)
    assert np.allclose(gram, Y.T @ Y) and np.allclose(moment, Y.T @ y) and n_rows == 30
    dense.resize(0.5)  # blocks whose newest sample is older than 0.5 s leave
    assert dense.count() == 10


def test_session_keeps_a_bounded_link_inside_its_ellipsoid(icub):
    """``bounding_ellipsoids`` (what the node's ``bounding_ellipsoid`` builds): a sphere about a
    forearm's frame origin, 0.8 x the unconstrained estimate's RMS radius of its mass, holds the
    constrained estimate's mass on average (``tr(S) / m <= r²``)."""
    from inertia_id_ros.solvers import ellipsoid_matrix

    sim, data = icub
    free = _session(sim)
    _feed(free, data)
    estimate = free.update(now=3.0).estimate
    k = list(estimate.link_names).index("r_forearm")
    radius = 0.8 * rms_radius(estimate.thetas[k])
    ellipsoids = [None] * len(estimate.link_names)
    ellipsoids[k] = ellipsoid_matrix(np.zeros(3), np.full(3, radius))
    bounded = _session(sim, bounding_ellipsoids=ellipsoids)
    _feed(bounded, data)
    update = bounded.update(now=3.0)
    assert update.ok, update.message
    assert rms_radius(update.estimate.thetas[k]) <= radius * (1 + 1e-3)
    assert all(check_consistency(theta).fully_consistent for theta in update.estimate.thetas)


def test_identifiability_is_kept_for_a_few_seconds_of_samples_on_the_same_window(icub, monkeypatch):
    """The links' identifiability (as costly as a solve) is recomputed at most every
    ``IDENTIFIABILITY_PERIOD_SEC`` of sample time, and for another window (a duration)."""
    from inertia_id_ros.chain import whole_body_fit

    sim, data = icub
    computed = []
    original = whole_body_fit.identifiability

    def counted(*args, **kwargs):
        computed.append(original(*args, **kwargs))
        return computed[-1]

    monkeypatch.setattr(whole_body_fit, "identifiability", counted)
    session = _session(sim)
    most = int(0.8 * data["t"].size)
    _feed(session, data, 0, most)
    first = session.update(now=2.4)
    _feed(session, data, most)
    second = session.update(now=3.0)
    assert first.ok and second.ok and len(computed) == 1
    assert second.estimate.n_samples > first.estimate.n_samples
    assert second.estimate.labels == computed[0].labels == first.estimate.labels
    shorter = session.identify(duration=2.5, now=3.0)
    assert shorter.ok and len(computed) == 2


def test_a_kept_value_is_recomputed_after_its_period_or_for_another_key():
    from inertia_id_ros.online.solving import KeptForPeriod

    kept = KeptForPeriod[int](10.0)
    values = iter(range(10))
    assert kept.get("a", 0.0, lambda: next(values)) == 0
    assert kept.get("a", 9.9, lambda: next(values)) == 0  # within the period
    assert kept.get("b", 9.9, lambda: next(values)) == 1  # another window
    assert kept.get("b", 19.8, lambda: next(values)) == 1
    assert kept.get("b", 20.0, lambda: next(values)) == 2  # the period is over
    assert kept.get("b", 5.0, lambda: next(values)) == 3  # the clock went back
