"""A humanoid on one foot, rooted at its stance sole: a fixed base at any URDF frame.

iCub balancing on its left sole on a tilted floor (``icub_stance``): only its leg F/T sensors,
the ground's wrench not measured, the pelvis moving with the stance leg. Rooted at ``l_sole``,
the base motion comes from the leg's kinematics (no IMU), the stance leg's sensors balance the
rest of the robot; an IMU, when given, corrects or checks the floor's tilt, offline and online
alike."""

import json

import numpy as np
import pinocchio as pin
import pytest

from inertia_id_ros.chain.whole_body_fit import fit_whole_body, prediction_errors
from inertia_id_ros.cli import main
from inertia_id_ros.core.base_motion import BaseMotion, tilt_difference, tilt_from_up, up_from_tilt
from inertia_id_ros.core.inertia import check_consistency
from inertia_id_ros.core.robots import STANDARD_GRAVITY, example_robot_urdf
from inertia_id_ros.core.whole_body_model import FTSensor, WholeBodyModel, WholeBodySamples
from inertia_id_ros.errors import ConfigError, DataError
from inertia_id_ros.formats.data import with_derivatives
from inertia_id_ros.formats.whole_body_log import read_whole_body_file, whole_body_inputs
from inertia_id_ros.online.whole_body_session import whole_body_session
from inertia_id_ros.sim import whole_body_robots as wb
from inertia_id_ros.sim.whole_body_simulator import NoiseModel

RATE = 200.0
SOLE = wb.ICUB_STANCE_FRAME
TILT = wb.ICUB_STANCE_TILT
URDF = example_robot_urdf("icub")
IMU_KEYS = ("imu_frame", "imu_orientation", "imu_angular_velocity", "imu_linear_acceleration")


def _model(sim, base="fixed", fixed_frame=SOLE, tilt=TILT, imu=False):
    return WholeBodyModel.from_urdf(
        URDF,
        base,
        [FTSensor(f, k) for f, k in sim.ft_sensors],
        sim.imu_frame if imu else None,
        fixed_frame=fixed_frame,
        fixed_tilt=tilt,
    )


@pytest.fixture(scope="module")
def exact():
    """Noise-free motion of 2 s and its joints and efforts in a rooted model's order."""
    sim = wb.icub_stance(seed=1, noise=NoiseModel.none())
    motion = sim.simulate(2.0 + np.arange(200) / RATE)
    model = _model(sim, imu=True)
    order = [sim.joint_names.index(j) for j in model.joint_names]
    return (
        sim,
        motion,
        model,
        (motion.q[:, order], motion.dq[:, order], motion.ddq[:, order], motion.effort[:, order]),
    )


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """20 s of the noisy simulation: the NPZ with the IMU, one without, and the truth."""
    sim = wb.icub_stance(seed=0)
    t = np.arange(int(20.0 * RATE)) / RATE
    motion = sim.simulate(t)
    data = sim.measure(motion, False, False, np.random.default_rng(1))
    folder = tmp_path_factory.mktemp("stance")
    with_imu, without = folder / "stance.npz", folder / "stance_no_imu.npz"
    np.savez(with_imu, **data)
    np.savez(without, **{k: v for k, v in data.items() if k not in IMU_KEYS})
    return sim, motion, with_imu, without


def _first_seconds(path, seconds: float, folder):
    """A copy of the recording ``path`` (NPZ) with its first ``seconds`` s only."""
    data = dict(np.load(path))
    n = len(data["t"])
    keep = int(seconds * RATE)
    short = folder / f"first_{seconds:g}_s.npz"
    np.savez(short, **{k: v[:keep] if v.ndim and len(v) == n else v for k, v in data.items()})
    return short


def test_tilt_and_up_direction_are_inverse():
    for tilt in [(0.0, 0.0), TILT, (-0.4, 0.3)]:
        up = up_from_tilt(tilt)
        assert np.isclose(np.linalg.norm(up), 1.0)
        assert np.allclose(tilt_from_up(3.0 * up), tilt)
    assert np.isclose(tilt_difference((0.0, 0.0), (0.1, 0.0)), 0.1)


def test_rooted_rows_match_the_simulation_without_the_ground_wrench(exact):
    """The pelvis state from the stance leg's kinematics is the simulator's, the rows with the
    true links are exact (the stance leg's sensors balance the rest of the robot), and the IMU's
    specific force gives the floor's tilt; rooted at the URDF root (the pelvis on a stand) the
    stance leg's sensor rows miss the ground's wrench. The joint-torque rows too (the stance
    leg's joints balance the rest of the robot)."""
    sim, motion, model, (q, dq, ddq, effort) = exact
    assert model.channels() == tuple(
        f"{frame}.{c}"
        for frame in wb.ICUB_LEG_SENSORS
        for c in ("fx", "fy", "fz", "tx", "ty", "tz")
    )
    base = model.fixed_base_motion(q, dq, ddq)
    twist, acceleration = motion.v_full[:, :6], motion.a_full[:, :6]
    np.testing.assert_allclose(base.angular_velocity, twist[:, 3:], atol=1e-10)
    np.testing.assert_allclose(base.angular_acceleration, acceleration[:, 3:], atol=1e-9)
    rotation = np.array([pin.Quaternion(x).toRotationMatrix() for x in motion.q_full[:, 3:7]])
    proper = (
        acceleration[:, :3]
        + np.cross(twist[:, 3:], twist[:, :3])
        + STANDARD_GRAVITY * rotation[:, 2, :]
    )
    np.testing.assert_allclose(base.proper_acceleration, proper, atol=1e-9)
    assert np.degrees(np.abs(twist[:, 3:]).max()) > 5.0  # the pelvis really moves

    Y, b, channels = model.rows(
        WholeBodySamples(q, dq, ddq, base, motion.ft_wrench, effort), with_efforts=True
    )
    assert "tau.l_knee" in channels
    x = _truth(sim, model)
    assert np.abs(Y @ x - b).max() < 1e-8 * np.abs(b).max()
    measured = model.fixed_frame_acceleration_from_imu(q, dq, ddq, motion.imu_linear_acceleration)
    floor = np.tile(STANDARD_GRAVITY * up_from_tilt(TILT), (len(q), 1))
    np.testing.assert_allclose(measured, floor, atol=1e-9)

    stand = _model(sim, fixed_frame=None, tilt=(0.0, 0.0))
    at_rest = BaseMotion.at_rest(len(q), motion.q_full[:, 3:7])
    Y, b, _ = stand.rows(WholeBodySamples(q, dq, ddq, at_rest, motion.ft_wrench))
    stance_leg = [k for k, c in enumerate(stand.channels()) if c.startswith("l_leg")]
    residual = (Y @ _truth(sim, stand) - b).reshape(len(q), -1)[:, stance_leg]
    assert np.abs(residual).max() > 100.0  # the robot's weight


def test_the_rooted_base_motion_is_kept_only_for_the_same_joints(exact):
    """A batch's base motion and IMU tilt share one computation of the base's motion; joints
    changed in place (the same array, other values) are computed afresh."""
    sim, _, model, (q, dq, ddq, _) = exact
    joints = q.copy()
    first = model.fixed_base_motion(joints, dq, ddq)
    joints[:, 0] += 0.2
    moved = model.fixed_base_motion(joints, dq, ddq)
    fresh = _model(sim).fixed_base_motion(joints, dq, ddq)
    assert not np.allclose(moved.proper_acceleration, first.proper_acceleration)
    np.testing.assert_array_equal(moved.proper_acceleration, fresh.proper_acceleration)
    np.testing.assert_array_equal(moved.angular_velocity, fresh.angular_velocity)


def _truth(sim, model):
    """The true parameters (zero offsets: the simulation's are not applied here)."""
    names, theta = sim.true_theta
    return np.concatenate(
        [theta[names.index(b)] for b in model.bodies] + [np.zeros(6 * len(model.offset_sensors))]
    )


def test_rooted_at_the_sole_without_imu_predicts_at_least_as_well_as_a_pelvis_orientation(
    recording,
):
    """The issue's acceptance: rooted at the stance sole with no IMU, the held-out F/T error is
    at most that with the true pelvis orientation fed as the base state (the same rows), and
    every link is consistent."""
    sim, motion, _, without = recording
    rec = read_whole_body_file(without)
    model, samples = whole_body_inputs(rec, URDF, "fixed", fixed_frame=SOLE, fixed_tilt=TILT)
    keep = np.searchsorted(rec.states.t, with_derivatives(rec.states, 0.05).t)
    pelvis = WholeBodySamples(
        samples.q,
        samples.dq,
        samples.ddq,
        BaseMotion.at_rest(keep.size, motion.q_full[keep, 3:7]),
        samples.wrenches,
    )
    split = int(0.7 * len(samples))
    errors = {}
    for name, data in (("rooted", samples), ("pelvis", pelvis)):
        fit = fit_whole_body(model, data.subset(slice(0, split)), "lmi")
        assert fit.fully_consistent, name
        held_out = prediction_errors(model, fit.x, data.subset(slice(split, None)))
        errors[name] = (
            np.mean(list(held_out.force.values())),
            np.mean(list(held_out.torque.values())),
        )
    assert errors["rooted"][0] <= errors["pelvis"][0]
    assert errors["rooted"][1] <= errors["pelvis"][1]
    assert errors["rooted"][0] < 2.0 * sim.ft_noise_std[0, 0]  # near the sensors' noise


def test_cli_rooted_at_the_sole(tmp_path, recording, capsys):
    """``--base fixed --fixed-frame l_sole``: no IMU needed; with the IMU, ``--imu-tilt
    check`` keeps the given tilt and warns that the floor is tilted, ``correct`` takes the
    IMU's."""
    _, _, with_imu, without = recording
    out = tmp_path / "rooted.json"
    common = ["fit-whole-body", "--urdf", str(URDF), "--base", "fixed", "--fixed-frame", SOLE]
    common += ["--filter-half-width", "0.05"]  # the base, not the filter's choice, is tested
    assert (
        main(
            [
                *common,
                "--data",
                str(without),
                "--fixed-tilt",
                "0.03,-0.05",
                "--holdout",
                "0.3",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "fixed at l_sole, tilt roll 1.72° pitch -2.86° (given)" in printed
    result = json.loads(out.read_text())
    assert result["base"] == "fixed" and all(b["fully_consistent"] for b in result["bodies"])
    assert result["fixed_frame"] == SOLE and np.allclose(result["fixed_tilt"], TILT)
    assert set(result["holdout"]["rms"]) == set(wb.ICUB_LEG_SENSORS)

    # the IMU (its accelerometer biased) measures the floor's tilt within 0.3° (on 8 s)
    with_imu = _first_seconds(with_imu, 8.0, tmp_path)
    assert main([*common, "--data", str(with_imu), "--imu-tilt", "check"]) == 0
    captured = capsys.readouterr()
    assert "tilt roll 0.00° pitch 0.00° (given; the IMU measures roll 1." in captured.out
    assert "warning: the IMU tilts l_sole by roll 1." in captured.err
    assert "from --fixed-tilt (roll 0.00° pitch 0.00°)" in captured.err
    assert (
        main(
            [*common, "--data", str(with_imu), "--fixed-tilt", "0.03,-0.05", "--imu-tilt", "check"]
        )
        == 0
    )
    assert "warning" not in capsys.readouterr().err
    assert main([*common, "--data", str(with_imu)]) == 0
    captured = capsys.readouterr()
    line = next(x for x in captured.out.splitlines() if x.startswith("fixed at l_sole"))
    roll, pitch = (float(part.split("°")[0]) for part in line.split(" roll ")[1].split(" pitch "))
    assert abs(roll - 1.72) < 0.3 and abs(pitch + 2.86) < 0.3 and line.endswith("(from the IMU)")
    assert "warning" not in captured.err


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--base", "floating", "--fixed-frame", SOLE], "apply to --base fixed"),
        (["--base", "fixed", "--fixed-frame", "l_heel"], "fixed frame 'l_heel' is not in the URDF"),
        (["--base", "fixed", "--fixed-tilt", "0.1"], "argument --fixed-tilt: expected ROLL,PITCH"),
    ],
)
def test_cli_bad_fixed_frame_or_tilt_exits_2(recording, capsys, extra, message):
    _, _, with_imu, _ = recording
    assert main(["fit-whole-body", "--urdf", str(URDF), "--data", str(with_imu), *extra]) == 2
    assert message in capsys.readouterr().err


def test_a_fixed_frame_needs_a_fixed_base(exact, recording):
    sim = exact[0]
    with pytest.raises(ConfigError, match="apply to a fixed base"):
        _model(sim, base="floating")
    with pytest.raises(ConfigError, match="fixed_tilt must be two finite angles"):
        _model(sim, tilt=(0.1, np.nan))
    rec = read_whole_body_file(recording[3])
    with pytest.raises(DataError, match="imu_tilt 'always' is not one of"):
        whole_body_inputs(rec, URDF, "fixed", fixed_frame=SOLE, imu_tilt="always")


def _feed(session, data, imu):
    names = list(data["joint_names"])
    for i, t in enumerate(data["t"]):
        assert session.add_joint_state(t, names, data["q"][i], data["dq"][i]) is None
        if imu:
            assert (
                session.add_imu(
                    t, data["imu_angular_velocity"][i], data["imu_linear_acceleration"][i]
                )
                is None
            )
        for k, frame in enumerate(map(str, data["ft_frames"])):
            assert session.add_wrench(frame, t, data["ft_wrench"][i, k], frame) is None


def test_online_rooted_at_the_sole_as_offline(recording):
    """The session rooted at the sole without an IMU gives a consistent estimate close to the
    offline fit of the same data; with the IMU checking a level tilt, the IMU's tilt (the
    floor's) is in the estimate and the diagnostics advise correcting it."""
    sim, _, with_imu, _ = recording
    data = dict(np.load(with_imu))
    data = {
        k: (v[: int(8 * RATE)] if v.ndim and v.shape[0] == len(data["t"]) else v)
        for k, v in data.items()
    }
    session = whole_body_session(_model(sim), window_sec=30.0, max_input_rate_hz=RATE)
    _feed(session, data, imu=False)
    update = session.update(now=8.0)
    assert update.ok, update.message
    estimate = update.estimate
    assert estimate.imu_fixed_tilt is None
    assert all(check_consistency(theta).fully_consistent for theta in estimate.thetas)
    # the stance leg's sensors weigh the rest of the robot (the foot's sensor never turns: its
    # offset and the weight share the direction of gravity; the hip's turns)
    names, theta = sim.true_theta
    rest = [k for k, b in enumerate(estimate.link_names) if b != "l_foot"]
    true_rest = sum(theta[names.index(estimate.link_names[k]), 0] for k in rest)
    assert abs(estimate.thetas[rest, 0].sum() - true_rest) < 0.03 * true_rest

    checking = whole_body_session(
        _model(sim, tilt=(0.0, 0.0), imu=True),
        window_sec=30.0,
        max_input_rate_hz=RATE,
        imu_tilt="check",
    )
    _feed(checking, data, imu=True)
    update = checking.update(now=8.0)
    assert update.ok, update.message
    assert np.allclose(update.estimate.imu_fixed_tilt, TILT, atol=np.radians(0.3))
    roll, pitch = map(float, update.diagnostics["fixed_tilt.imu_deg"].split())
    assert abs(roll - 1.72) < 0.3 and abs(pitch + 2.86) < 0.3
    assert "the IMU tilts the fixed frame 3." in update.advice
