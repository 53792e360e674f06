"""Real logs through an input description (:mod:`inertia_id_ros.formats.description`): import round
trips against the canonical formats (other column names, degrees, per-stream clocks, motor
currents, a bag with F/T on its own topic), the KUKA recording through YAML alone, the F/T sign
from the URDF, and the loader's errors naming units and streams."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from helpers.paths import shared_data
from helpers.recordings import write_bag
from inertia_id_ros import cli
from inertia_id_ros.core.robots import example_robot_urdf, load_model
from inertia_id_ros.errors import DataError
from inertia_id_ros.formats.data import read_joint_file, read_payload_bag
from inertia_id_ros.formats.description import InputDescription
from inertia_id_ros.formats.ft_conventions import read_ft_conventions
from inertia_id_ros.formats.recording import load_recording, split_recording
from inertia_id_ros.sim.payload import PayloadSimulator

PANDA_ARM = tuple(f"panda_joint{i}" for i in range(1, 8))
SENSOR = "panda_link8"
KUKA_JOINTS = tuple(f"lwr_{i}_joint" for i in range(7))
WRENCH_COLUMNS = ("fx", "fy", "fz", "tx", "ty", "tz")
T0 = 1_700_000_000.0
"""s: UNIX time of the first joint sample."""


@pytest.fixture(scope="module")
def panda_urdf() -> str:
    return str(example_robot_urdf("panda"))


@pytest.fixture(scope="module")
def panda_joint_names(panda_urdf: str) -> list[str]:
    return list(load_model(panda_urdf).names)[1:]


@pytest.fixture(scope="module")
def sim() -> PayloadSimulator:
    return PayloadSimulator.panda(seed=3)


def write_table(path: Path, columns: dict[str, np.ndarray], delimiter: str = ",") -> Path:
    """A CSV file with a header row of ``columns``' names."""
    names = list(columns)
    rows = np.column_stack([columns[n] for n in names])
    lines = [delimiter.join(names)] + [delimiter.join(repr(float(v)) for v in row) for row in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def describe(tmp_path: Path, description: dict) -> Path:
    path = tmp_path / "input.yaml"
    path.write_text(yaml.safe_dump(description, allow_unicode=True, sort_keys=False))
    return path


def load(path: Path, joint_names: list[str], urdf: str | None = None):
    return load_recording(InputDescription.from_yaml(path), joint_names, urdf)


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ---- round trips -----------------------------------------------------------------------------


def test_csv_other_columns_degrees_and_per_stream_clocks(
    tmp_path: Path, sim: PayloadSimulator, panda_joint_names
) -> None:
    """Joints in one CSV (ms stamps, degrees, its own column names, an extra gripper column not
    in the URDF) at 200 Hz, the wrist F/T in another (ns stamps, 500 Hz, 3 ms clock offset):
    the same arrays as the canonical data, each stream on its own stamps."""
    rng = np.random.default_rng(0)
    joint_t, wrench_t = np.arange(600) / 200.0, 0.001 + np.arange(1500) / 500.0
    q, dq = sim.measure_joints(joint_t, rng)
    wrench = sim.measure_wrench(wrench_t, rng)
    offset = 0.003  # s: the F/T clock runs 3 ms behind the joints' clock
    joints = {"stamp_ms": 1e3 * (T0 + joint_t)}
    joints.update({f"pos{i}": np.degrees(q[:, i]) for i in range(7)})
    joints.update({f"vel{i}": np.degrees(dq[:, i]) for i in range(7)})
    joints["gripper"] = np.full(joint_t.size, 0.04)
    write_table(tmp_path / "joints.csv", joints)
    ft = {"time_ns": np.round(1e9 * (T0 + wrench_t - offset))}
    ft.update({name: wrench[:, k] for k, name in enumerate(["Fx", "Fy", "Fz", "Mx", "My", "Mz"])})
    write_table(tmp_path / "ft.csv", ft, delimiter=";")
    path = describe(
        tmp_path,
        {
            "streams": {
                "arm": {"file": "joints.csv", "time": "stamp_ms", "time_unit": "ms"},
                "wrist": {
                    "file": "ft.csv",
                    "time": "time_ns",
                    "time_unit": "ns",
                    "offset": offset,
                    "delimiter": ";",
                },
            },
            "joints": {
                "names": {
                    **{str(i): PANDA_ARM[i] for i in range(7)},
                    "gripper": "panda_finger_joint9",
                },
                "position": {"columns": "pos{joint}", "unit": "deg"},
                "velocity": {"columns": "vel{joint}", "unit": "deg"},
            },
            "ft_sensors": [
                {
                    "frame": SENSOR,
                    "stream": "wrist",
                    "columns": ["Fx", "Fy", "Fz", "Mx", "My", "Mz"],
                }
            ],
        },
    )
    recording = load(path, panda_joint_names)
    states = recording.joint_states
    assert states.joint_names == PANDA_ARM
    np.testing.assert_allclose(states.t, T0 + joint_t, rtol=0, atol=1e-6)
    np.testing.assert_allclose(states.q, q, atol=1e-12)
    np.testing.assert_allclose(states.dq, dq, atol=1e-12)
    wrenches = recording.payload(SENSOR).wrenches
    np.testing.assert_allclose(wrenches.t, T0 + wrench_t, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(wrenches.wrench, wrench)
    assert any(
        "panda_finger_joint9" not in note and "gripper" in note for note in recording.notes
    ), recording.notes


def test_currents_with_torque_constants_and_signs(tmp_path: Path) -> None:
    """Joint torques from motor currents × torque constant × gear ratio, one joint's sign
    reversed, from an NPZ with its own key names and no time column (a known rate)."""
    data_dir = shared_data("kuka_lwr4")
    run = np.load(data_dir / "measurements_1.npz")
    torques = run["torques"][:400]
    constants = np.array([0.11, 0.12, 0.09, 0.1, 0.08, 0.07, 0.05])  # N m / A
    gear = 160.0
    signs = np.array([1, 1, -1, 1, 1, 1, 1])
    currents = torques / (constants * gear) * signs
    np.savez(tmp_path / "log.npz", pos=run["positions"][:400], amps=currents)
    path = describe(
        tmp_path,
        {
            "streams": {"arm": {"file": "log.npz", "rate": 200.0}},
            "joints": {
                "names": list(KUKA_JOINTS),
                "position": {"key": "pos", "unit": "rad"},
                "effort": {
                    "key": "amps",
                    "unit": "A",
                    "torque_constant": dict(zip(KUKA_JOINTS, constants.tolist())),
                    "gear_ratio": gear,
                    "sign": {"lwr_2_joint": -1},
                },
            },
        },
    )
    states = load(path, list(KUKA_JOINTS)).joint_states
    np.testing.assert_allclose(states.effort, torques, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(states.t, np.arange(400) / 200.0)


def test_bag_with_ft_on_its_own_topic(
    tmp_path: Path, sim: PayloadSimulator, panda_joint_names
) -> None:
    """A bag with joint states (with a joint not in the URDF) and the F/T on its own topic and
    rate: the same arrays as the bag reader of the canonical path."""
    rng = np.random.default_rng(1)
    joint_t, wrench_t = np.arange(300) / 100.0, 0.0013 + np.arange(1500) / 500.0
    q, dq = sim.measure_joints(joint_t, rng)
    wrench = sim.measure_wrench(wrench_t, rng)
    names = PANDA_ARM + ("conveyor",)
    q8, dq8 = np.hstack([q, np.zeros((300, 1))]), np.hstack([dq, np.zeros((300, 1))])
    bag = write_bag(
        tmp_path / "rec",
        "mcap",
        T0 + joint_t,
        names,
        q8,
        dq8,
        wrench_t=T0 + wrench_t,
        wrench=wrench,
        frame=SENSOR,
        joint_topic="/arm/js",
        wrench_topic="/wrist/ft",
    )
    path = describe(
        tmp_path,
        {
            "streams": {
                "js": {"file": "rec", "topic": "/arm/js"},
                "ft": {"file": "rec", "topic": "/wrist/ft"},
            },
            "joints": {"position": {"unit": "rad"}, "velocity": {"unit": "rad"}},
            "ft_sensors": [{"frame": SENSOR, "stream": "ft"}],
        },
    )
    recording = load(path, panda_joint_names)
    expected = read_payload_bag(bag, "/arm/js", "/wrist/ft")
    assert recording.joint_states.joint_names == PANDA_ARM
    np.testing.assert_array_equal(recording.joint_states.t, expected.joint_states.t)
    np.testing.assert_array_equal(recording.joint_states.q, expected.joint_states.q[:, :7])
    np.testing.assert_array_equal(recording.wrenches[SENSOR].t, expected.wrenches.t)
    np.testing.assert_array_equal(recording.wrenches[SENSOR].wrench, expected.wrenches.wrench)
    assert any("conveyor" in note for note in recording.notes)
    # the header's frame_id must be the sensor's frame, or be named as its frame_id
    description = yaml.safe_load(path.read_text())
    description["ft_sensors"][0]["frame"] = "panda_hand"
    with pytest.raises(DataError, match="in frame 'panda_link8', not 'panda_hand'.*frame_id"):
        load(describe(tmp_path, description), panda_joint_names)
    description["ft_sensors"][0]["frame_id"] = SENSOR
    assert "panda_hand" in load(describe(tmp_path, description), panda_joint_names).wrenches


def _kuka_description(tmp_path: Path, run: Path) -> Path:
    return describe(
        tmp_path,
        {
            "streams": {"run": {"file": str(run), "time": "times", "time_unit": "s"}},
            "joints": {
                "names": list(KUKA_JOINTS),
                "position": {"key": "positions", "unit": "rad"},
                "velocity": {"key": "velocities", "unit": "rad"},
                "acceleration": {"key": "accelerations", "unit": "rad"},
                "effort": {"key": "torques", "unit": "N·m"},
            },
        },
    )


def test_kuka_through_yaml_alone_gives_the_loader_path_fit(capsys, tmp_path: Path) -> None:
    """The shared KUKA NPZ (keys times/positions/...) read by a YAML description: the arrays of
    a canonical NPZ, and fit-links gives the same result both ways (first 6 s of run 1)."""
    data_dir = shared_data("kuka_lwr4")
    urdf = str(data_dir / "kuka_lwr4.urdf")
    run = np.load(data_dir / "measurements_1.npz")
    keep = run["times"] <= run["times"][0] + 6.0
    canonical = tmp_path / "canonical.npz"
    np.savez(
        canonical,
        t=run["times"][keep],
        joint_names=np.array(KUKA_JOINTS),
        q=run["positions"][keep],
        dq=run["velocities"][keep],
        ddq=run["accelerations"][keep],
        effort=run["torques"][keep],
    )
    path = _kuka_description(tmp_path, data_dir / "measurements_1.npz")
    loaded = load_recording(
        InputDescription.from_yaml(path).with_flags(t_end=6.0), list(KUKA_JOINTS)
    ).joint_states
    expected = read_joint_file(canonical)
    for key in ("t", "q", "dq", "ddq", "effort"):
        np.testing.assert_array_equal(getattr(loaded, key), getattr(expected, key), err_msg=key)
    results = []
    for source in (["--input", str(path), "--t-end", "6"], ["--data", str(canonical)]):
        out_json = tmp_path / f"fit{len(results)}.json"
        code, _, err = run_cli(
            capsys,
            "fit-links",
            "--urdf",
            urdf,
            *source,
            "--json",
            str(out_json),
            "--torque-delay",
            "0",
            "--coulomb-velocity",
            "0",
            "--filter-half-width",
            "0.02",
            "--prior-weight",
            "1e-3",
        )
        assert code == 0, err
        results.append(json.loads(out_json.read_text()))
    assert [b["theta"] for b in results[0]["bodies"]] == [b["theta"] for b in results[1]["bodies"]]
    assert results[0]["residual_rms"] == results[1]["residual_rms"]


def test_split_by_time_validates_on_the_held_out_part(capsys, tmp_path: Path) -> None:
    """``held_out_from``: the fit on the part before, the validation printed on the rest."""
    data_dir = shared_data("kuka_lwr4")
    path = _kuka_description(tmp_path, data_dir / "measurements_1.npz")
    description = InputDescription.from_yaml(path).with_flags(t_end=8.0, held_out_from=6.0)
    train, held_out = split_recording(load_recording(description, list(KUKA_JOINTS)), description)
    assert train.joint_states.t[-1] - train.t0 <= 6.0 < held_out.joint_states.t[0] - train.t0 + 0.01
    assert held_out.joint_states.t[-1] - train.t0 <= 8.0
    code, out, err = run_cli(
        capsys,
        "fit-links",
        "--urdf",
        str(data_dir / "kuka_lwr4.urdf"),
        "--input",
        str(path),
        "--t-end",
        "8",
        "--held-out-from",
        "6",
        "--torque-delay",
        "0",
        "--coulomb-velocity",
        "0",
        "--filter-half-width",
        "0.02",
        "--prior-weight",
        "1e-3",
    )
    assert code == 0, err
    assert "(held out)" in out and "overall" in out


# ---- F/T signs -------------------------------------------------------------------------------


def test_urdf_measure_direction_sets_the_sign() -> None:
    """iCub's URDF declares child_to_parent: internal sensors' readings are negated, contact
    sensors' kept; the sensor is found by joint, sensor name and child link."""
    conventions = read_ft_conventions(example_robot_urdf("icub"))
    for name in ("r_arm_ft_sensor", "right_arm_ft", "r_upper_arm"):
        assert conventions[name].measure_direction == "child_to_parent"
    assert conventions["r_arm_ft_sensor"].sign("internal") == -1.0
    assert conventions["r_foot_ft_sensor"].sign("contact") == 1.0


def test_description_sign_from_urdf_and_overrides(tmp_path: Path) -> None:
    """An internal sensor of a URDF declaring child_to_parent: ``sign: urdf`` negates, ``keep``
    keeps, ``flip`` negates."""
    urdf = example_robot_urdf("icub")
    names = list(load_model(urdf).names)[1:]
    t = np.arange(50) / 100.0
    wrench = np.tile([1.0, 2.0, 3.0, 0.1, 0.2, 0.3], (50, 1))
    write_table(
        tmp_path / "log.csv",
        {"t": t, "q": np.zeros(50), **{f"w{k}": wrench[:, k] for k in range(6)}},
    )
    signs = {}
    for sign in ("urdf", "keep", "flip"):
        path = describe(
            tmp_path,
            {
                "streams": {"log": {"file": "log.csv", "time": "t", "time_unit": "s"}},
                "joints": {
                    "names": {"q": "r_elbow"},
                    "position": {"columns": ["q"], "unit": "rad"},
                },
                "ft_sensors": [
                    {
                        "frame": "r_arm_ft_sensor",
                        "stream": "log",
                        "sign": sign,
                        "columns": [f"w{k}" for k in range(6)],
                    }
                ],
            },
        )
        recording = load(path, names, urdf)
        signs[sign] = recording.wrenches["r_arm_ft_sensor"].wrench[0, 0]
    assert signs == {"urdf": -1.0, "keep": 1.0, "flip": -1.0}


def test_fit_payload_flip_wrench_sign(
    capsys, tmp_path: Path, sim: PayloadSimulator, panda_urdf: str
) -> None:
    """fit-payload's --flip-wrench-sign (the node's flip_wrench_sign) on data recorded with the
    opposite sign gives the payload's mass back."""
    rng = np.random.default_rng(2)
    t = np.arange(2000) / 200.0
    q, dq, wrench = sim.measure(t, rng)
    data = tmp_path / "flipped.npz"
    np.savez(data, t=t, joint_names=np.array(PANDA_ARM), q=q, dq=dq, wrench=-wrench)
    out_json = tmp_path / "out.json"
    code, _, err = run_cli(
        capsys,
        "fit-payload",
        "--urdf",
        panda_urdf,
        "--sensor-frame",
        SENSOR,
        "--data",
        str(data),
        "--flip-wrench-sign",
        "--json",
        str(out_json),
    )
    assert code == 0, err
    mass = json.loads(out_json.read_text())["bodies"][0]["mass"]
    assert mass == pytest.approx(sim.true_theta[0], rel=0.02)


# ---- errors --------------------------------------------------------------------------------


def _joint_csv(tmp_path: Path, t: np.ndarray) -> Path:
    return write_table(
        tmp_path / "j.csv", {"stamp": t, **{f"p{i}": np.zeros(t.size) for i in range(7)}}
    )


def _joint_yaml(tmp_path: Path, **stream) -> Path:
    return describe(
        tmp_path,
        {
            "streams": {"arm": {"file": "j.csv", "time": "stamp", **stream}},
            "joints": {
                "names": {str(i): PANDA_ARM[i] for i in range(7)},
                "position": {"columns": "p{joint}", "unit": "rad"},
            },
        },
    )


def test_time_in_milliseconds_without_unit_is_named(tmp_path: Path, panda_joint_names) -> None:
    _joint_csv(tmp_path, 1e3 * (T0 + np.arange(100) / 200.0))
    with pytest.raises(DataError, match=r"stream 'arm'.*no unit.*Milliseconds\?.*time_unit"):
        load(_joint_yaml(tmp_path), panda_joint_names)
    with pytest.raises(DataError, match=r"stream 'arm'.*'stamp' in s: .*Milliseconds\?"):
        load(_joint_yaml(tmp_path, time_unit="s"), panda_joint_names)


def test_streams_that_do_not_overlap_are_refused(tmp_path: Path, panda_joint_names) -> None:
    _joint_csv(tmp_path, np.arange(100) / 200.0)
    write_table(
        tmp_path / "tau.csv",
        {"t": 100.0 + np.arange(100) / 200.0, **{f"e{i}": np.zeros(100) for i in range(7)}},
    )
    description = yaml.safe_load(_joint_yaml(tmp_path, time_unit="s").read_text())
    description["streams"]["tau"] = {"file": "tau.csv", "time": "t", "time_unit": "s"}
    description["joints"]["effort"] = {"stream": "tau", "columns": "e{joint}", "unit": "N·m"}
    with pytest.raises(DataError, match=r"do not overlap.*'arm'.*'tau'.*units and offsets"):
        load(describe(tmp_path, description), panda_joint_names)


def test_held_joint_moving_the_sensor_is_refused(capsys, tmp_path: Path, panda_urdf: str) -> None:
    """panda_joint7 not in the log, held: it moves the wrist sensor, so fit-payload refuses."""
    t = np.arange(200) / 200.0
    write_table(
        tmp_path / "log.csv",
        {
            "t": t,
            **{f"p{i}": np.zeros(t.size) for i in range(6)},
            **{f"w{k}": np.zeros(t.size) for k in range(6)},
        },
    )
    path = describe(
        tmp_path,
        {
            "streams": {"log": {"file": "log.csv", "time": "t", "time_unit": "s"}},
            "joints": {
                "names": {str(i): PANDA_ARM[i] for i in range(6)},
                "position": {"columns": "p{joint}", "unit": "rad"},
                "held": {"panda_joint7": 0.5},
            },
            "ft_sensors": [
                {"frame": SENSOR, "stream": "log", "columns": [f"w{k}" for k in range(6)]}
            ],
        },
    )
    code, _, err = run_cli(
        capsys, "fit-payload", "--urdf", panda_urdf, "--sensor-frame", SENSOR, "--input", str(path)
    )
    assert code == 2
    assert "held joint(s) ['panda_joint7']" in err and "depends on their motion" in err


@pytest.mark.parametrize(
    "change, fragment",
    [
        ({"joints": {"names": ["a"], "position": {"key": "q"}}}, "joints.position: no 'unit'"),
        ({"streams": {"arm": {"file": "j.csv"}}}, "give either 'time'"),
        ({"window": [3, 1]}, "window [3.0, 1.0] is empty"),
        ({"held_out": "later"}, "held_out: 'later' is not one of the intervals"),
        ({"extra": 1}, "unknown key(s) ['extra']"),
    ],
)
def test_bad_descriptions_name_the_key(tmp_path: Path, change: dict, fragment: str) -> None:
    description = {
        "streams": {"arm": {"file": "j.csv", "time": "t", "time_unit": "s"}},
        "joints": {"names": ["a"], "position": {"key": "q", "unit": "rad"}},
    }
    description.update(change)
    with pytest.raises(DataError) as error:
        InputDescription.from_yaml(describe(tmp_path, description))
    assert fragment in str(error.value) and "input.yaml" in str(error.value)
    assert "\n" not in str(error.value)


def test_flags_for_canonical_files(capsys, tmp_path: Path, panda_joint_names) -> None:
    """--time-unit and --angle-unit on a canonical file: stamps in ms and degrees come in as
    SI."""
    t = np.arange(100) / 100.0
    q = np.tile(np.linspace(0, 1, 7), (100, 1))
    np.savez(
        tmp_path / "log.npz",
        t=1e3 * t,
        joint_names=np.array(PANDA_ARM),
        q=np.degrees(q),
        effort=np.zeros((100, 7)),
    )
    description = InputDescription.from_canonical(tmp_path / "log.npz", "ms", "deg")
    states = load_recording(description, panda_joint_names).joint_states
    np.testing.assert_allclose(states.t, t)
    np.testing.assert_allclose(states.q, q)
    assert states.dq is None and states.effort is not None
    assert math.isclose(states.q[0, 6], 1.0)


def test_validate_takes_a_description(capsys, tmp_path: Path) -> None:
    """``validate --input``: a result on the description's held-out part, OLS on its training
    part."""
    data_dir = shared_data("kuka_lwr4")
    urdf = str(data_dir / "kuka_lwr4.urdf")
    description = yaml.safe_load(
        _kuka_description(tmp_path, data_dir / "measurements_1.npz").read_text()
    )
    description.update(
        {"intervals": {"fit": [0.0, 5.0], "check": [5.0, 8.0]}, "train": "fit", "held_out": "check"}
    )
    path = describe(tmp_path, description)
    out_json = tmp_path / "fit.json"
    code, _, err = run_cli(
        capsys,
        "fit-links",
        "--urdf",
        urdf,
        "--input",
        str(path),
        "--json",
        str(out_json),
        "--torque-delay",
        "0",
        "--coulomb-velocity",
        "0",
        "--filter-half-width",
        "0.02",
        "--prior-weight",
        "1e-3",
    )
    assert code == 0, err
    code, out, err = run_cli(
        capsys, "validate", str(out_json), "--input", str(path), "--urdf", urdf
    )
    assert code == 0, err
    assert "input.yaml (held out)" in out and "ols rms" in out


def test_imu_and_contact_sensor_from_csv_files(tmp_path: Path) -> None:
    """An IMU CSV (gyro in deg/s, at 400 Hz on its own clock) and a contact sensor CSV
    (100 Hz): synchronised at the F/T stamps for a whole-body fit, the gyro in rad/s."""
    urdf = example_robot_urdf("icub")
    names = list(load_model(urdf).names)[1:]
    t_joint, t_imu, t_ft = np.arange(400) / 200.0, np.arange(800) / 400.0, np.arange(200) / 100.0
    write_table(
        tmp_path / "joints.csv", {"t": t_joint, **{f"q_{j}": np.full(400, 0.1) for j in names}}
    )
    gyro = np.column_stack([np.sin(t_imu), np.cos(t_imu), t_imu])
    write_table(
        tmp_path / "imu.csv",
        {
            "t": t_imu,
            "qx": 0 * t_imu,
            "qy": 0 * t_imu,
            "qz": 0 * t_imu,
            "qw": 1 + 0 * t_imu,
            **{f"w{k}": np.degrees(gyro[:, k]) for k in range(3)},
            "ax": 0 * t_imu,
            "ay": 0 * t_imu,
            "az": 9.81 + 0 * t_imu,
        },
    )
    write_table(
        tmp_path / "sole.csv", {"t": t_ft, **{c: np.full(200, 1.0) for c in WRENCH_COLUMNS}}
    )
    path = describe(
        tmp_path,
        {
            "streams": {
                "joints": {"file": "joints.csv", "time": "t", "time_unit": "s"},
                "imu": {"file": "imu.csv", "time": "t", "time_unit": "s"},
                "sole": {"file": "sole.csv", "time": "t", "time_unit": "s"},
            },
            "joints": {"names": names, "position": {"columns": "q_{joint}", "unit": "rad"}},
            "ft_sensors": [
                {
                    "frame": "l_sole",
                    "stream": "sole",
                    "kind": "contact",
                    "columns": list(WRENCH_COLUMNS),
                }
            ],
            "imu": {
                "frame": "imu_frame",
                "stream": "imu",
                "orientation": ["qx", "qy", "qz", "qw"],
                "angular_velocity": ["w0", "w1", "w2"],
                "angular_velocity_unit": "deg",
                "linear_acceleration": ["ax", "ay", "az"],
            },
        },
    )
    whole = load(path, names, str(urdf)).whole_body(half_width=0.05)
    inside = (t_ft >= 0.05) & (t_ft <= t_joint[-1] - 0.05)
    np.testing.assert_allclose(whole.states.t, t_ft[inside])
    np.testing.assert_allclose(
        whole.imu["imu_angular_velocity"],
        np.column_stack([np.interp(t_ft[inside], t_imu, g) for g in gyro.T]),
        atol=1e-12,
    )
    assert whole.imu_frame == "imu_frame" and whole.ft_types == ("contact",)
    np.testing.assert_allclose(whole.ft_wrench[:, 0], 1.0)


def test_velocity_unit_defaults_to_the_positions(tmp_path: Path, panda_joint_names) -> None:
    """Velocities without a unit are in the positions' unit per second (here deg/s)."""
    t = np.arange(50) / 100.0
    write_table(
        tmp_path / "j.csv",
        {
            "stamp": t,
            **{f"p{i}": np.full(50, 90.0) for i in range(7)},
            **{f"v{i}": np.full(50, 180.0) for i in range(7)},
        },
    )
    path = describe(
        tmp_path,
        {
            "streams": {"arm": {"file": "j.csv", "time": "stamp", "time_unit": "s"}},
            "joints": {
                "names": {str(i): PANDA_ARM[i] for i in range(7)},
                "position": {"columns": "p{joint}", "unit": "deg"},
                "velocity": {"columns": "v{joint}"},
            },
        },
    )
    states = load(path, panda_joint_names).joint_states
    np.testing.assert_allclose(states.q, math.pi / 2)
    np.testing.assert_allclose(states.dq, math.pi)


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (
            ["fit-links", "--input", "{yaml}", "--time-unit", "ms"],
            "--time-unit applies to --data/--bag; an --input description gives its units itself",
        ),
        (["fit-links", "--data", "{npz}", "--hold", "lwr_6_joint"], "--hold takes JOINT=VALUE"),
        (
            ["fit-links", "--data", "{npz}", "--t-start", "5", "--t-end", "2"],
            "the window [5.0, 2.0] s is empty",
        ),
        (["fit-whole-body", "--data", "{npz}", "--t-end", "2"], "take an --input description"),
    ],
)
def test_bad_log_flags_exit_2_naming_the_flag(
    capsys, tmp_path: Path, argv: list[str], fragment: str
) -> None:
    yaml_path = describe(
        tmp_path,
        {
            "streams": {"a": {"file": "a.npz", "rate": 100}},
            "joints": {"names": list(KUKA_JOINTS), "position": {"key": "q", "unit": "rad"}},
        },
    )
    npz = tmp_path / "a.npz"
    np.savez(
        npz,
        t=np.arange(50) / 100.0,
        joint_names=np.array(KUKA_JOINTS),
        q=np.zeros((50, 7)),
        effort=np.zeros((50, 7)),
    )
    argv = [a.format(yaml=yaml_path, npz=npz) for a in argv]
    code, _, err = run_cli(capsys, *argv, "--urdf", str(example_robot_urdf("panda")))
    assert code == 2
    assert fragment in err and err.count("\n") == 1


def test_held_joints_coupled_to_the_fitted_ones(panda_urdf: str) -> None:
    """A finger's motion enters the arm's joint torques (refused when held), not its sibling
    finger's (another branch)."""
    from inertia_id_ros.formats.held import joints_coupled

    model = load_model(panda_urdf)
    assert joints_coupled(model, {}, PANDA_ARM, ["panda_finger_joint1"]) == ["panda_finger_joint1"]
    assert joints_coupled(model, {}, ["panda_finger_joint2"], ["panda_finger_joint1"]) == []


def test_joint_groups_from_separate_files(tmp_path: Path, panda_joint_names) -> None:
    """Joints logged per part (as YARP logs each part): joints 1-4 in one CSV file at 200 Hz,
    5-7 in a space-separated .log without a header row at 100 Hz on stamps 3 ms apart
    (degrees): one set of joint
    states on the first file's stamps, the second file's joints interpolated there, the span
    both cover."""
    t1, t2 = np.arange(200) / 200.0, 0.003 + np.arange(100) / 100.0

    def q(t: np.ndarray, i: int) -> np.ndarray:
        return 0.1 * (i + 1) * t  # linear: interpolation is exact

    write_table(tmp_path / "a.csv", {"t": t1, **{f"a{i}": np.degrees(q(t1, i)) for i in range(4)}})
    log = write_table(
        tmp_path / "b.log",
        {"index": np.arange(100), "t": t2, **{f"b{i}": np.degrees(q(t2, i)) for i in range(4, 7)}},
        delimiter=" ",
    )
    log.write_text(log.read_text().split("\n", 1)[1])  # no header row
    path = describe(
        tmp_path,
        {
            "streams": {
                "a": {"file": "a.csv", "time": "t", "time_unit": "s"},
                "b": {
                    "file": "b.log",
                    "time": "t",
                    "time_unit": "s",
                    "delimiter": " ",
                    "header": ["index", "t", "b4", "b5", "b6"],
                },
            },
            "joints": [
                {
                    "stream": "a",
                    "names": {str(i): PANDA_ARM[i] for i in range(4)},
                    "position": {"columns": "a{joint}", "unit": "deg"},
                },
                {
                    "stream": "b",
                    "names": {str(i): PANDA_ARM[i] for i in range(4, 7)},
                    "position": {"columns": "b{joint}", "unit": "deg"},
                },
            ],
        },
    )
    recording = load(path, panda_joint_names)
    states = recording.joint_states
    inside = (t1 >= t2[0]) & (t1 <= t2[-1])
    assert states.joint_names == PANDA_ARM
    np.testing.assert_array_equal(states.t, t1[inside])
    np.testing.assert_allclose(
        states.q, np.column_stack([q(t1[inside], i) for i in range(7)]), atol=1e-12
    )
    assert any("outside the span every joint stream covers" in n for n in recording.notes)


def test_fit_payload_from_two_csv_clocks_with_a_held_out_part(
    capsys, tmp_path: Path, sim: PayloadSimulator, panda_urdf: str
) -> None:
    """fit-payload through a description alone: joints in degrees with ms stamps, the F/T in
    its own file with ns stamps and a clock offset, its sign flipped: the payload's mass, and
    the validation on the held-out part printed."""
    rng = np.random.default_rng(5)
    joint_t, wrench_t = np.arange(2400) / 200.0, 0.0007 + np.arange(6000) / 500.0
    q, dq = sim.measure_joints(joint_t, rng)
    wrench = sim.measure_wrench(wrench_t, rng)
    write_table(
        tmp_path / "arm.csv",
        {
            "ms": 1e3 * (T0 + joint_t),
            **{f"q{i}": np.degrees(q[:, i]) for i in range(7)},
            **{f"v{i}": np.degrees(dq[:, i]) for i in range(7)},
        },
    )
    write_table(
        tmp_path / "ft.csv",
        {
            "ns": np.round(1e9 * (T0 + wrench_t + 0.02)),
            **{c: -wrench[:, k] for k, c in enumerate(WRENCH_COLUMNS)},
        },
    )
    path = describe(
        tmp_path,
        {
            "streams": {
                "arm": {"file": "arm.csv", "time": "ms", "time_unit": "ms"},
                "ft": {"file": "ft.csv", "time": "ns", "time_unit": "ns", "offset": -0.02},
            },
            "joints": {
                "names": {str(i): PANDA_ARM[i] for i in range(7)},
                "position": {"columns": "q{joint}", "unit": "deg"},
                "velocity": {"columns": "v{joint}", "unit": "deg"},
            },
            "ft_sensors": [
                {"frame": SENSOR, "stream": "ft", "columns": list(WRENCH_COLUMNS), "sign": "flip"}
            ],
            "held_out_from": 9.0,
        },
    )
    out_json = tmp_path / "payload.json"
    code, out, err = run_cli(
        capsys,
        "fit-payload",
        "--urdf",
        panda_urdf,
        "--sensor-frame",
        SENSOR,
        "--input",
        str(path),
        "--json",
        str(out_json),
    )
    assert code == 0, err
    result = json.loads(out_json.read_text())
    assert result["bodies"][0]["mass"] == pytest.approx(sim.true_theta[0], rel=0.02)
    assert result["samples"] < 0.8 * wrench_t.size  # the held-out part is not fitted
    assert "input.yaml (held out)" in out and "fit rms" in out
    assert "readings negated (sign: flip)" in err


def test_the_guides_examples_are_valid_descriptions() -> None:
    """Every YAML example of docs/how-to/real-logs.md parses as an input description: the ones
    shown, and the ones its commands write (``cat > X.yaml <<'EOF'``)."""
    import re

    guide = Path(__file__).resolve().parents[3] / "docs" / "how-to" / "real-logs.md"
    text = guide.read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
    blocks += re.findall(r"cat > \S+\.yaml <<'EOF'\n(.*?)\nEOF", text, re.S)
    assert len(blocks) >= 4
    for k, block in enumerate(blocks):
        description = InputDescription.from_mapping(
            yaml.safe_load(block), guide.parent, f"example {k}"
        )
        assert description.joints and description.streams
