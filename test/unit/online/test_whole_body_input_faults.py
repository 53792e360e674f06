"""The whole-body session's input faults (the simulated Go1: a floating base, its IMU, four foot
contact sensors): each bad IMU reading or wrench is dropped with a warning naming its reason;
an IMU too sparse for the gyro's derivative, a sensor that stops and restarts, an IMU at 10 x
its rate, a contact reading zero (a foot in the air) and an IMU stamp from the future are
reported, and the estimate stays consistent with the robot's mass."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_id_ros.core.inertia import check_consistency
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.core.whole_body_model import FTSensor, WholeBodyModel
from inertia_id_ros.online.whole_body_session import whole_body_session
from inertia_id_ros.sim import whole_body_robots as wb
from inertia_id_ros.sim.whole_body_simulator import WholeBodySimulator

RATE = 200.0
DURATION = 12.0
"""Seconds of recording (s), at :data:`RATE`."""
WARM = 1000
"""Samples before the faults (5 s: the window's 200 samples at 50 Hz, and more)."""


@pytest.fixture(scope="module")
def go1():
    """The simulator and its recording of :data:`DURATION` s; the same motion with the first
    foot in the air (its sensor reads zero, the other three carry the robot)."""
    sim = wb.go1(seed=0)
    t = np.arange(int(DURATION * RATE)) / RATE
    data = sim.measure(sim.simulate(t), False, False, np.random.default_rng(1))
    in_air = WholeBodySimulator(
        sim.cad_xml,
        [(foot, "contact") for foot in wb.GO1_FEET[1:]],
        sim.imu_frame,
        sim.joint_trajectory,
        base_trajectory=sim.base_trajectory,
        base_height=0.3,
        point_contacts=True,
        true_xml=sim.true_xml,
        seed=0,
    )
    air = in_air.measure(in_air.simulate(t), False, False, np.random.default_rng(1))
    air["ft_wrench"] = np.concatenate([np.zeros((t.size, 1, 6)), air["ft_wrench"]], axis=1)
    return sim, data, air


def _session():
    model = WholeBodyModel.from_urdf(
        example_robot_urdf("go1"),
        "floating",
        [FTSensor(foot, "contact") for foot in wb.GO1_FEET],
        wb.GO1_IMU_FRAME,
    )
    return whole_body_session(model, window_sec=20.0, max_input_rate_hz=RATE, sample_rate_hz=50.0)


def _feed(
    session, data, start: int, stop: int, t0: float = 0.0, silent=(), imu_every: int = 1
) -> list:
    """Offer samples ``start:stop`` of a recording, stamped ``t0 + t``, except the wrenches of
    the ``silent`` feet and all but every ``imu_every``-th IMU reading; the warnings."""
    warnings = []
    names = list(data["joint_names"])
    for i in range(start, stop):
        t = t0 + data["t"][i]
        warnings.append(session.add_joint_state(t, names, data["q"][i], data["dq"][i]))
        if i % imu_every == 0:
            warnings.append(
                session.add_imu(
                    t,
                    data["imu_angular_velocity"][i],
                    data["imu_linear_acceleration"][i],
                    wb.GO1_IMU_FRAME,
                )
            )
        for k, foot in enumerate(wb.GO1_FEET):
            if foot not in silent:
                warnings.append(session.add_wrench(foot, t, data["ft_wrench"][i, k], foot))
    return [w for w in warnings if w is not None]


def _total_mass(update) -> float:
    assert update.ok, update.message
    assert all(check_consistency(theta).fully_consistent for theta in update.estimate.thetas)
    return float(update.estimate.thetas[:, 0].sum())


def _true_mass(sim) -> float:
    return sum(theta[0] for theta in sim.true_links.values())


G = np.array([0.0, 0.0, 9.81])
BAD_IMU = {
    "nan_angular_velocity": ((np.array([np.nan, 0.0, 0.0]), G, "imu_link", 0.0025), "non_finite"),
    "inf_linear_acceleration": (
        (np.zeros(3), np.array([0.0, np.inf, 9.81]), "imu_link", 0.0025),
        "non_finite",
    ),
    "two_values": ((np.zeros(2), G, "imu_link", 0.0025), "length_mismatch"),
    "four_values": ((np.zeros(3), np.r_[G, 0.0], "imu_link", 0.0025), "length_mismatch"),
    "frame_not_in_urdf": ((np.zeros(3), G, "imu_not_in_urdf", 0.0025), "wrong_frame"),
    "duplicate_stamp": ((np.zeros(3), G, "imu_link", 0.0), "duplicate_stamp"),
    "out_of_order": ((np.zeros(3), G, "imu_link", -0.3), "out_of_order"),
}
"""IMU faults: (angular velocity, specific force, frame_id, stamp after the newest (s)),
reason."""
BAD_WRENCH = {
    "nan_force": (("FL_foot", np.array([np.nan, 0, 0, 0, 0, 0]), "FL_foot", 0.0025), "non_finite"),
    "inf_torque": (
        ("RR_foot", np.array([0, 0, 0, 0, 0, -np.inf]), "RR_foot", 0.0025),
        "non_finite",
    ),
    "five_values": (("FL_foot", np.zeros(5), "FL_foot", 0.0025), "length_mismatch"),
    "frame_not_in_urdf": (("FR_foot", np.zeros(6), "FR_not_in_urdf", 0.0025), "wrong_frame"),
    "not_a_sensor": (("FR_calf", np.zeros(6), "FR_calf", 0.0025), "unknown_sensor"),
    "duplicate_stamp": (("RL_foot", np.zeros(6), "RL_foot", 0.0), "duplicate_stamp"),
    "out_of_order": (("RL_foot", np.zeros(6), "RL_foot", -0.3), "out_of_order"),
}
"""Wrench faults: (sensor frame, wrench, frame_id, stamp after the newest (s)), reason."""


@pytest.mark.parametrize("case", sorted(BAD_IMU))
def test_a_bad_imu_reading_is_dropped_with_its_reason(go1, case):
    _, data, _ = go1
    session = _session()
    assert not _feed(session, data, 0, 200)
    (w, f, frame_id, after), reason = BAD_IMU[case]
    kind, message = session.add_imu(data["t"][199] + after, w, f, frame_id)
    assert kind == reason and "IMU" in message, message
    assert session.estimator.dropped[reason] == 1
    assert session.diagnostics().values[f"dropped.{reason}"] == "1"
    if reason == "wrong_frame":
        assert "imu_not_in_urdf" in message


@pytest.mark.parametrize("case", sorted(BAD_WRENCH))
def test_a_bad_wrench_is_dropped_with_its_reason(go1, case):
    _, data, _ = go1
    session = _session()
    assert not _feed(session, data, 0, 200)
    (sensor, wrench, frame_id, after), reason = BAD_WRENCH[case]
    kind, message = session.add_wrench(sensor, data["t"][199] + after, wrench, frame_id)
    assert kind == reason and sensor in message, message
    assert session.estimator.dropped[reason] == 1
    assert session.diagnostics().values[f"dropped.{reason}"] == "1"


def test_samples_with_too_few_imu_readings_lose_their_rows_not_the_session(go1):
    """An IMU reading one time in eight for 1 s (the others lost or rejected): the gyro's
    derivative cannot be fitted there; those samples' rows are dropped (``sparse_imu``) and the
    updates go on (they used to fail, every one, from then on)."""
    sim, data, _ = go1
    session = _session()
    _feed(session, data, 0, WARM)
    reference = _total_mass(session.update(now=0.0))
    _feed(session, data, WARM, WARM + 200, imu_every=8)
    _feed(session, data, WARM + 200, WARM + 600)
    update = session.update(now=1.0)
    assert "sparse_imu" in [kind for kind, _ in update.warnings], update.warnings
    assert session.estimator.dropped["sparse_imu"] > 0
    assert abs(_total_mass(update) - reference) < 0.01 * reference
    assert abs(reference - _true_mass(sim)) < 0.02 * _true_mass(sim)


def test_a_sensor_that_stops_and_restarts_is_reported_both_ways(go1):
    _, data, _ = go1
    session = _session()
    _feed(session, data, 0, WARM)
    reference = _total_mass(session.update(now=0.0))
    _feed(session, data, WARM, WARM + 200, silent=("FR_foot",))
    stopped = session.update(now=1.0)
    assert stopped.estimate.stopped_sensors == ("FR_foot",)
    assert [m for k, m in stopped.warnings if k == "sensor_stopped" and "FR_foot" in m]
    assert session.diagnostics().values["stopped_sensors"] == "FR_foot"
    _feed(session, data, WARM + 200, WARM + 400)
    resumed = session.update(now=2.0)
    assert resumed.estimate.stopped_sensors == ()
    assert [m for k, m in resumed.warnings if k == "sensor_resumed" and "FR_foot" in m]
    assert session.diagnostics().values["stopped_sensors"] == ""
    assert abs(_total_mass(resumed) - reference) < 0.01 * reference


def test_a_contact_reading_zero_is_used_and_reported(go1):
    """A foot in the air: its sensor's zero wrench is the contact's (none), not a missing one;
    the session warns once, and ``/diagnostics`` lists the foot while it reads zero."""
    sim, data, air = go1
    session = _session()
    _feed(session, data, 0, WARM)
    reference = _total_mass(session.update(now=0.0))
    _feed(session, air, WARM, WARM + 600)
    update = session.update(now=1.0)
    assert [m for k, m in update.warnings if k == "contact_zero" and "['FL_foot']" in m]
    values = session.diagnostics().values
    assert values["contacts_reading_zero"] == "FL_foot"
    assert values["zero_wrenches.FL_foot"] == "600"
    assert "missing_wrench" not in session.estimator.dropped
    assert abs(_total_mass(update) - reference) < 0.01 * reference
    _feed(session, data, WARM + 600, WARM + 800)
    update = session.update(now=2.0)
    assert not [k for k, _ in update.warnings if k == "contact_zero"]
    assert session.diagnostics().values["contacts_reading_zero"] == ""
    # the same zeros while the foot carries its share: the base rows lose a quarter of the load
    wrong = _session()
    zeroed = dict(data, ft_wrench=air["ft_wrench"].copy())
    zeroed["ft_wrench"][:, 1:] = data["ft_wrench"][:, 1:]
    _feed(wrong, zeroed, 0, WARM + 600)
    assert abs(_total_mass(wrong.update(now=0.0)) - reference) > 0.1 * reference


def test_an_imu_at_ten_times_its_rate_is_reported_and_the_estimate_stays(go1):
    sim, data, _ = go1
    session = _session()
    _feed(session, data, 0, WARM)
    reference = _total_mass(session.update(now=0.0))
    session.diagnostics(now=0.0)  # the rates' interval starts
    fast = sim.measure(
        sim.simulate(data["t"][WARM] + np.arange(4000) / (10 * RATE)),
        False,
        False,
        np.random.default_rng(2),
    )
    for j in range(4000):
        assert (
            session.add_imu(
                fast["t"][j],
                fast["imu_angular_velocity"][j],
                fast["imu_linear_acceleration"][j],
                wb.GO1_IMU_FRAME,
            )
            is None
        )
        if j % 10 == 0:
            i = WARM + j // 10
            _feed_wrenches_and_joints(session, data, i)
    update = session.update(now=1.0)
    diagnostics = session.diagnostics(now=5.0)
    assert float(diagnostics.values["rate_hz.imu"]) > 1.2 * RATE
    assert [m for k, m in diagnostics.warnings if k == "input_rate" and "imu" in m]
    assert abs(_total_mass(update) - reference) < 0.01 * reference


def _feed_wrenches_and_joints(session, data, i: int) -> None:
    t = data["t"][i]
    assert (
        session.add_joint_state(t, list(data["joint_names"]), data["q"][i], data["dq"][i]) is None
    )
    for k, foot in enumerate(wb.GO1_FEET):
        assert session.add_wrench(foot, t, data["ft_wrench"][i, k], foot) is None


def test_an_imu_stamp_from_the_future_restarts_the_window_instead_of_silencing_the_imu(go1):
    """One IMU reading stamped 1000 s ahead: the readings after it are older, dropped as
    ``out_of_order`` until they have gone on for ``clock_jump_sec``; then the estimator starts
    afresh (``clock_jump``) and estimates again (before, the IMU stayed silenced for good)."""
    _, data, _ = go1
    session = _session()
    _feed(session, data, 0, WARM)
    reference = _total_mass(session.update(now=0.0))
    assert session.add_imu(data["t"][WARM] + 1000.0, np.zeros(3), G, wb.GO1_IMU_FRAME) is None
    warnings = _feed(session, data, WARM, WARM + 300)
    assert "out_of_order" in [kind for kind, _ in warnings]
    update = session.update(now=1.0)
    assert "clock_jump" in [kind for kind, _ in update.warnings]
    _feed(session, data, WARM + 300, WARM + 1300)
    assert abs(_total_mass(session.update(now=2.0)) - reference) < 0.01 * reference


def test_batches_are_taken_as_the_same_readings_one_by_one(go1):
    """IMU readings and wrenches offered in batches (the node's serialized path): the same
    counters, drops, contacts reading zero and window as offered one by one, with faults in some
    batches (a NaN wrench, a repeated IMU stamp, a wrong frame) and a foot in the air."""
    _, data, air = go1
    names = list(data["joint_names"])
    one_by_one, batched = _session(), _session()
    t, gyro, accel, wrench = (
        air[key].copy()
        for key in ("t", "imu_angular_velocity", "imu_linear_acceleration", "ft_wrench")
    )
    wrench[310, 2, 4] = np.nan
    t_imu = t.copy()
    t_imu[420] = t_imu[419]  # a repeated stamp
    imu_frames = [wb.GO1_IMU_FRAME] * t.size
    imu_frames[530] = "trunk_wrong"
    for start in range(0, 800, 100):
        rows = slice(start, start + 100)
        for session in (one_by_one, batched):
            session.add_joint_states(t[rows], names, air["q"][rows], air["dq"][rows])
        for i in range(start, start + 100):
            one_by_one.add_imu(t_imu[i], gyro[i], accel[i], imu_frames[i])
            for k, foot in enumerate(wb.GO1_FEET):
                one_by_one.add_wrench(foot, t[i], wrench[i, k], foot)
        batched.add_imus(t_imu[rows], gyro[rows], accel[rows], imu_frames[rows])
        for k, foot in enumerate(wb.GO1_FEET):
            batched.add_wrenches(foot, t[rows], wrench[rows, k], [foot] * 100)
        for session in (one_by_one, batched):
            session.estimator.process()
    a, b = one_by_one.estimator, batched.estimator
    assert a.received == b.received and a.dropped == b.dropped
    assert {"non_finite", "duplicate_stamp", "wrong_frame"} <= set(b.dropped)
    assert a.zero_wrenches == b.zero_wrenches and b.zero_wrenches[wb.GO1_FEET[0]] == 800
    assert a.contacts_reading_zero == b.contacts_reading_zero == (wb.GO1_FEET[0],)
    for x, y in zip(a.window.normal_equations(), b.window.normal_equations()):
        assert np.array_equal(x, y)
