"""``inertia-id fit-payload`` and ``fit-links`` on simulated and real recordings: JSON vs truth,
bad input (exit code 2, one line on stderr), the console script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from helpers.panda_arm import DRIVE_TRUTH, panda_truth_model
from helpers.paths import shared_data
from helpers.recordings import write_bag, write_csv
from inertia_id_ros import cli
from inertia_id_ros.core.inertia import (
    check_consistency,
    inertia_from_msg_order,
    inertia_from_theta,
    theta_from_inertia,
)
from inertia_id_ros.core.robots import example_robot_urdf, load_model, reduce_model
from inertia_id_ros.formats.data import JointStates
from inertia_id_ros.sim.payload import ExcitingTrajectory, PayloadSimulator
from inertia_id_ros.solvers.problem import on_consistency_bound

PANDA_ARM = tuple(f"panda_joint{i}" for i in range(1, 8))
SENSOR = "panda_link8"
BODY_KEYS = [
    "name",
    "frame",
    "mass",
    "com",
    "inertia_com",
    "theta",
    "fully_consistent",
    "min_pseudo_inertia_eig",
    "at_bound",
]
JOINT_KEYS = ["name", "viscous", "coulomb", "coulomb_velocity", "offset", "armature"]
KUKA_JOINTS = tuple(f"lwr_{i}_joint" for i in range(7))


@pytest.fixture(scope="module")
def panda_urdf() -> str:
    return str(example_robot_urdf("panda"))


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def read_json(path: Path) -> dict:
    return json.loads(path.read_text())


# ---- fit-payload ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def payload_sim() -> PayloadSimulator:
    return PayloadSimulator.panda(seed=2)


@pytest.fixture(scope="module")
def payload_npz(payload_sim: PayloadSimulator, tmp_path_factory) -> Path:
    """12 s of joint states and wrenches at 200 Hz (shared stamps), as NPZ."""
    t = np.arange(2400) / 200.0
    q, dq, wrench = payload_sim.measure(t, np.random.default_rng(0))
    path = tmp_path_factory.mktemp("payload") / "panda.npz"
    np.savez(
        path, t=t, joint_names=np.array(PANDA_ARM), q=q, dq=dq, wrench=wrench, wrench_frame=SENSOR
    )
    return path


def assert_payload_json(
    result: dict, sim: PayloadSimulator, method: str, offset: bool = True
) -> None:
    """Exact schema; estimate within tolerance of the simulator's truth."""
    assert list(result) == [
        "mode",
        "method",
        "bodies",
        "sensor_offset",
        "residual_rms",
        "samples",
        "solve_time_s",
        "residual_ratios",
        "identifiability",
        "findings",
        "refused",
    ]
    assert result["refused"] is False
    assert result["method"] == method
    (body,) = result["bodies"]
    assert list(body) == BODY_KEYS
    assert body["name"] == "payload" and body["frame"] == SENSOR
    assert len(body["com"]) == 3 and len(body["inertia_com"]) == 6 and len(body["theta"]) == 10
    theta = np.array(body["theta"])
    np.testing.assert_allclose(
        theta_from_inertia(body["mass"], body["com"], inertia_from_msg_order(body["inertia_com"])),
        theta,
        atol=1e-12,
    )
    report = check_consistency(theta)
    assert body["fully_consistent"] is True and report.fully_consistent
    assert body["min_pseudo_inertia_eig"] == pytest.approx(report.min_pseudo_inertia_eig)
    mass, com, inertia = inertia_from_theta(sim.true_theta)
    assert abs(body["mass"] - mass) / mass < 0.01
    assert np.linalg.norm(np.array(body["com"]) - com) < 0.003
    error = inertia_from_msg_order(body["inertia_com"]) - inertia
    assert np.linalg.norm(error) / np.linalg.norm(inertia) < 0.2
    assert len(result["sensor_offset"]) == 6
    expected_offset = sim.true_offset if offset else np.zeros(6)
    np.testing.assert_allclose(result["sensor_offset"][:3], expected_offset[:3], atol=0.1)
    assert isinstance(result["samples"], int) and result["samples"] > 1000
    assert result["residual_rms"] > 0 and result["solve_time_s"] >= 0


def test_fit_payload_npz(
    capsys, tmp_path: Path, panda_urdf: str, payload_npz: Path, payload_sim: PayloadSimulator
) -> None:
    out_json = tmp_path / "payload.json"
    code, out, err = run_cli(
        capsys,
        "fit-payload",
        "--urdf",
        panda_urdf,
        "--sensor-frame",
        SENSOR,
        "--data",
        str(payload_npz),
        "--method",
        "lmi",
        "--json",
        str(out_json),
    )
    assert code == 0, err
    assert "mass" in out and "fully physically consistent: yes" in out and "F/T offset" in out
    assert_payload_json(read_json(out_json), payload_sim, "lmi")


def test_fit_payload_bag_own_rates_without_offset(capsys, tmp_path: Path, panda_urdf: str) -> None:
    """A bag with joint states at 100 Hz and wrenches at 500 Hz on their own stamps, no F/T offset
    and ``--no-offset``; non-default topics."""
    sim = PayloadSimulator.panda(seed=4, offset=np.zeros(6))
    rng = np.random.default_rng(1)
    t0 = 1_700_000_000.0
    joint_t, wrench_t = np.arange(1000) / 100.0, 0.0013 + np.arange(5000) / 500.0
    q, dq = sim.measure_joints(joint_t, rng)
    wrench = sim.measure_wrench(wrench_t, rng)
    bag = write_bag(
        tmp_path / "rec",
        "mcap",
        t0 + joint_t,
        PANDA_ARM,
        q,
        dq,
        wrench_t=t0 + wrench_t,
        wrench=wrench,
        frame=SENSOR,
        joint_topic="/arm/js",
        wrench_topic="/arm/ft",
    )
    out_json = tmp_path / "payload.json"
    code, _, err = run_cli(
        capsys,
        "fit-payload",
        "--urdf",
        panda_urdf,
        "--sensor-frame",
        SENSOR,
        "--bag",
        str(bag),
        "--joint-states-topic",
        "/arm/js",
        "--wrench-topic",
        "/arm/ft",
        "--method",
        "manifold",
        "--no-offset",
        "--json",
        str(out_json),
    )
    assert code == 0, err
    result = read_json(out_json)
    assert_payload_json(result, sim, "manifold", offset=False)
    assert result["sensor_offset"] == [0.0] * 6


def test_fit_payload_console_script_csv(
    tmp_path: Path, panda_urdf: str, payload_npz: Path, payload_sim: PayloadSimulator
) -> None:
    """The installed ``inertia-id`` on a CSV file, in a process of its own."""
    content = np.load(payload_npz)
    states = JointStates(content["t"], PANDA_ARM, content["q"], content["dq"])
    csv_path = write_csv(tmp_path / "panda.csv", states, content["wrench"], wrench_frame=SENSOR)
    out_json = tmp_path / "payload.json"
    script = Path(sys.executable).parent / "inertia-id"
    completed = subprocess.run(
        [
            str(script),
            "fit-payload",
            "--urdf",
            panda_urdf,
            "--sensor-frame",
            SENSOR,
            "--data",
            str(csv_path),
            "--method",
            "lmi",
            "--json",
            str(out_json),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    assert "payload beyond 'panda_link8'" in completed.stdout
    assert_payload_json(read_json(out_json), payload_sim, "lmi")


def _rewrite_npz(source: Path, target: Path, **changes) -> Path:
    content = dict(np.load(source))
    content.update(changes)
    np.savez(target, **content)
    return target


@pytest.mark.parametrize(
    "case, fragment",
    [
        ("absent_file", "no such file"),
        ("unknown_frame", "frame 'tool0' is not in the model"),
        ("wrong_wrench_frame", "expressed in frame 'panda_hand'"),
        ("missing_chain_joint", "lacks joint(s) ['panda_joint7']"),
        ("unknown_joint", "['elbow'] are not in the robot model"),
        ("bad_urdf", "absent.urdf'"),
        ("topic_without_bag", "--wrench-topic only apply to --bag"),
        ("too_few_samples", "wrench samples in the window, need 200"),
        ("missing_argument", "the following arguments are required: --urdf"),
        ("bad_method", "invalid choice: 'magic'"),
    ],
)
def test_fit_payload_bad_input(
    capsys, tmp_path: Path, panda_urdf: str, payload_npz: Path, case: str, fragment: str
) -> None:
    data = str(payload_npz)
    args = {"--urdf": panda_urdf, "--sensor-frame": SENSOR, "--data": data}
    content = np.load(payload_npz)
    if case == "absent_file":
        args["--data"] = str(tmp_path / "absent.npz")
    elif case == "unknown_frame":
        args["--sensor-frame"] = "tool0"
    elif case == "wrong_wrench_frame":
        args["--data"] = str(
            _rewrite_npz(payload_npz, tmp_path / "d.npz", wrench_frame="panda_hand")
        )
    elif case == "missing_chain_joint":
        args["--data"] = str(
            _rewrite_npz(
                payload_npz,
                tmp_path / "d.npz",
                joint_names=np.array(PANDA_ARM[:6]),
                q=content["q"][:, :6],
                dq=content["dq"][:, :6],
            )
        )
    elif case == "unknown_joint":
        args["--data"] = str(
            _rewrite_npz(
                payload_npz, tmp_path / "d.npz", joint_names=np.array(PANDA_ARM[:6] + ("elbow",))
            )
        )
    elif case == "bad_urdf":
        args["--urdf"] = str(tmp_path / "absent.urdf")
    elif case == "topic_without_bag":
        args["--wrench-topic"] = "/ft"
    elif case == "too_few_samples":
        args["--data"] = str(
            _rewrite_npz(
                payload_npz,
                tmp_path / "d.npz",
                **{k: content[k][:60] for k in ("t", "q", "dq", "wrench")},
            )
        )
    elif case == "missing_argument":
        del args["--urdf"]
    elif case == "bad_method":
        args["--method"] = "magic"
    argv = ["fit-payload"] + [item for pair in args.items() for item in pair]
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("inertia-id"), err
    assert fragment in err
    assert "Traceback" not in err


# ---- fit-links -----------------------------------------------------------------------------


def fourier_motion(t: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exciting motion of the Panda arm within its limits (rad, rad/s, rad/s²)."""
    model = load_model(example_robot_urdf("panda"))
    trajectory = ExcitingTrajectory.for_model(
        model, PANDA_ARM, period=15.0, seed=seed, position_fraction=0.6, velocity_fraction=0.6
    )
    return trajectory(t)


COULOMB_VELOCITY = 0.05


def panda_torques(model: pin.Model, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
    data = model.createData()
    tau = np.array([pin.rnea(model, data, *x) for x in zip(q, dq, ddq)])
    d = DRIVE_TRUTH
    return (
        tau
        + d["viscous"] * dq
        + d["coulomb"] * np.tanh(dq / COULOMB_VELOCITY)
        + d["offset"]
        + d["armature"] * ddq
    )


def torques_from_json(
    result: dict,
    urdf: str,
    joints: tuple[str, ...],
    q: np.ndarray,
    dq: np.ndarray,
    ddq: np.ndarray,
    locked: dict[str, float] | None = None,
) -> np.ndarray:
    """Torques the JSON predicts, computed independently: pinocchio RNEA (with the JSON's
    gravity) with every link's ``theta`` put on the joint whose child link the body names
    (checking that the link frame is the joint frame), plus the drive terms as documented."""
    model = reduce_model(load_model(urdf), joints, locked)
    if result.get("gravity") is not None:  # the base tilt the fit estimated, root frame
        model.gravity.linear = np.array(result["gravity"])
    assert [b["name"] for b in result["bodies"]] == [b["frame"] for b in result["bodies"]]
    for body in result["bodies"]:
        frame = model.frames[model.getFrameId(body["name"])]
        assert frame.type == pin.FrameType.BODY
        assert np.allclose(frame.placement.homogeneous, np.eye(4))
        model.inertias[frame.parentJoint] = pin.Inertia.FromDynamicParameters(
            np.array(body["theta"])
        )
    assert [j["name"] for j in result["joints"]] == list(joints)
    data = model.createData()
    tau = np.array([pin.rnea(model, data, *x) for x in zip(q, dq, ddq)])
    drive = {key: np.array([j[key] for j in result["joints"]]) for key in JOINT_KEYS[1:]}
    width = drive["coulomb_velocity"]
    sign = np.where(width > 0, np.tanh(dq / np.where(width > 0, width, 1.0)), np.sign(dq))
    return (
        tau
        + drive["viscous"] * dq
        + drive["coulomb"] * sign
        + drive["offset"]
        + drive["armature"] * ddq
    )


def delay_dropped(delay: float, period: float) -> int:
    """Samples a torque delay of ``delay`` s drops at one end of a recording ``period`` s apart."""
    return int(np.ceil(abs(delay) / period - 1e-9))


def assert_links_schema(result: dict, method: str, joints: tuple[str, ...]) -> None:
    assert list(result) == [
        "mode",
        "method",
        "bodies",
        "joints",
        "residual_rms",
        "samples",
        "solve_time_s",
        "differentiation",
        "prior_weight",
        "prior_weight_selection",
        "prior_weight_guard",
        "weighting",
        "gravity",
        "base_tilt",
        "coulomb_velocity_selection",
        "torque_delay",
        "residual_ratios",
        "urdf_gains",
        "identifiability",
        "findings",
        "refused",
    ]
    assert result["method"] == method
    assert len(result["bodies"]) == len(joints) == len(result["joints"])
    for body in result["bodies"]:
        assert list(body) == BODY_KEYS and len(body["theta"]) == 10
        report = check_consistency(np.array(body["theta"]))
        assert body["fully_consistent"] == report.fully_consistent
        assert body["at_bound"] == on_consistency_bound(report.min_pseudo_inertia_eig)
    assert set(result["identifiability"]) >= {"still_joints", "determination", "joint_motions"}
    for joint in result["joints"]:
        assert list(joint) == JOINT_KEYS


@pytest.fixture(scope="module")
def panda_link_npz(tmp_path_factory) -> Path:
    """15 s at 100 Hz of the perturbed Panda, exact derivatives, torques with 0.05 N m noise."""
    t = np.arange(1500) / 100.0
    q, dq, ddq = fourier_motion(t, seed=3)
    effort = panda_torques(panda_truth_model(), q, dq, ddq)
    effort += np.random.default_rng(0).normal(0.0, 0.05, effort.shape)
    path = tmp_path_factory.mktemp("links") / "panda_links.npz"
    np.savez(path, t=t, joint_names=np.array(PANDA_ARM), q=q, dq=dq, ddq=ddq, effort=effort)
    return path


@pytest.mark.parametrize("method", ["lmi", "ols"])
def test_fit_links_simulated_panda(
    capsys, tmp_path: Path, panda_urdf: str, panda_link_npz: Path, method: str
) -> None:
    """The JSON's links and drives predict the true torques of another motion; friction is
    recovered; the consistent fit keeps every link consistent."""
    out_json = tmp_path / "links.json"
    code, out, err = run_cli(
        capsys,
        "fit-links",
        "--urdf",
        panda_urdf,
        "--data",
        str(panda_link_npz),
        "--method",
        method,
        "--prior-weight",
        "1e-6",
        "--coulomb-velocity",
        str(COULOMB_VELOCITY),
        "--json",
        str(out_json),
    )
    assert code == 0, err
    assert "joint torque rms" in out
    result = read_json(out_json)
    assert_links_schema(result, method, PANDA_ARM)
    delay = result["torque_delay"]["delay_s"]  # none in the data: within a third of a sample
    assert abs(delay) < 0.0033
    assert result["samples"] == 1500 - delay_dropped(delay, 0.01)
    assert result["residual_rms"] == pytest.approx(0.05, rel=0.1)
    if method == "lmi":
        assert all(body["fully_consistent"] for body in result["bodies"])
    for key in ("viscous", "coulomb", "offset"):
        estimated = np.array([joint[key] for joint in result["joints"]])
        np.testing.assert_allclose(estimated, DRIVE_TRUTH[key], atol=0.03, err_msg=key)
    t = np.arange(0, 10.0, 0.05)
    q, dq, ddq = fourier_motion(t, seed=11)
    truth = panda_torques(panda_truth_model(), q, dq, ddq)
    predicted = torques_from_json(result, panda_urdf, PANDA_ARM, q, dq, ddq)
    assert np.sqrt(np.mean((predicted - truth) ** 2)) < 0.05


def test_fit_links_bag_differentiates_and_selects_joints(
    capsys, tmp_path: Path, panda_urdf: str
) -> None:
    """From a sqlite3 bag with positions and efforts only (velocities and accelerations are
    differentiated), identifying joints 2-7 with joint 1 locked at its mean position."""
    t = np.arange(1500) / 100.0
    q, dq, ddq = fourier_motion(t, seed=5)
    q[:, 0], dq[:, 0], ddq[:, 0] = 0.3, 0.0, 0.0
    effort = panda_torques(panda_truth_model(), q, dq, ddq)
    bag = write_bag(tmp_path / "rec", "sqlite3", 1_700_000_000.0 + t, PANDA_ARM, q, effort=effort)
    out_json = tmp_path / "links.json"
    joints = PANDA_ARM[1:]
    code, out, err = run_cli(
        capsys,
        "fit-links",
        "--urdf",
        panda_urdf,
        "--bag",
        str(bag),
        "--joints",
        ",".join(joints),
        "--prior-weight",
        "1e-6",
        "--coulomb-velocity",
        str(COULOMB_VELOCITY),
        "--json",
        str(out_json),
    )
    assert code == 0, err
    result = read_json(out_json)
    assert_links_schema(result, "lmi", joints)
    chosen = result["differentiation"]  # no velocities recorded: positions twice, by CV
    assert chosen["source"] == "positions" and len(chosen["selection"]["candidates"]) > 4
    assert chosen["window_samples"] % 2 == 1 and "positions differentiated twice" in out
    half = (chosen["window_samples"] - 1) // 2  # half-width (half + 1/2) sample periods:
    assert result["samples"] == (
        1500
        - 2 * (half + 1)  # samples within it of an end dropped
        - delay_dropped(result["torque_delay"]["delay_s"], 0.01)
    )
    assert all(body["fully_consistent"] for body in result["bodies"])
    assert result["residual_rms"] < 0.1
    t_check = np.arange(0, 10.0, 0.05)
    q, dq, ddq = fourier_motion(t_check, seed=12)
    q[:, 0], dq[:, 0], ddq[:, 0] = 0.3, 0.0, 0.0
    truth = panda_torques(panda_truth_model(), q, dq, ddq)[:, 1:]
    predicted = torques_from_json(
        result, panda_urdf, joints, q[:, 1:], dq[:, 1:], ddq[:, 1:], locked={"panda_joint1": 0.3}
    )
    assert np.sqrt(np.mean((predicted - truth) ** 2)) < 0.1


def _kuka_npz(path: Path, run: Path, step: int) -> Path:
    content = np.load(run)
    np.savez(
        path,
        t=content["times"][::step],
        joint_names=np.array(KUKA_JOINTS),
        q=content["positions"][::step],
        dq=content["velocities"][::step],
        ddq=content["accelerations"][::step],
        effort=content["torques"][::step],
    )
    return path


def test_fit_links_real_kuka(capsys, tmp_path: Path) -> None:
    """Real KUKA LWR4+ torques (run 1, every 10th sample): every link consistent, and the JSON
    predicts the held-out run 2 about as well as the data's README says least squares does
    (0.22 N m on all of run 1)."""
    data_dir = shared_data("kuka_lwr4")
    urdf = str(data_dir / "kuka_lwr4.urdf")
    train = _kuka_npz(tmp_path / "run1.npz", data_dir / "measurements_1.npz", 10)
    out_json = tmp_path / "kuka.json"
    code, out, err = run_cli(
        capsys, "fit-links", "--urdf", urdf, "--data", str(train), "--json", str(out_json)
    )
    assert code == 0, err
    result = read_json(out_json)
    assert_links_schema(result, "lmi", KUKA_JOINTS)
    assert [b["name"] for b in result["bodies"]] == [f"lwr_{i}_link" for i in range(1, 8)]
    assert all(body["fully_consistent"] for body in result["bodies"])
    assert result["residual_rms"] < 0.3
    run2 = np.load(data_dir / "measurements_2.npz")
    rows = slice(None, None, 10)
    predicted = torques_from_json(
        result,
        urdf,
        KUKA_JOINTS,
        run2["positions"][rows],
        run2["velocities"][rows],
        run2["accelerations"][rows],
    )
    rms = np.sqrt(np.mean((predicted - run2["torques"][rows]) ** 2))
    assert rms < 0.3, rms


@pytest.mark.parametrize(
    "extra, fragment",
    [
        (["--joints", "panda_joint1,wrist"], "lacks joint(s) ['wrist']"),
        (["--coulomb-velocity", "-1"], "--coulomb-velocity must be >= 0"),
        (["--joint-states-topic", "/js"], "--joint-states-topic only apply to --bag"),
    ],
)
def test_fit_links_bad_input(
    capsys, panda_urdf: str, panda_link_npz: Path, extra: list[str], fragment: str
) -> None:
    code, out, err = run_cli(
        capsys, "fit-links", "--urdf", panda_urdf, "--data", str(panda_link_npz), *extra
    )
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and fragment in err, err


def test_fit_links_needs_effort(capsys, panda_urdf: str, payload_npz: Path) -> None:
    code, _, err = run_cli(capsys, "fit-links", "--urdf", panda_urdf, "--data", str(payload_npz))
    assert code == 2 and err.count("\n") == 1 and "missing 'effort'" in err


# ---- the module ----------------------------------------------------------------------------


def test_cli_module_does_not_import_rclpy() -> None:
    code = "import sys, inertia_id_ros.cli; print('rclpy' in sys.modules)"
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert completed.stdout.strip() == "False", completed.stderr


def test_help_exits_zero(capsys) -> None:
    assert cli.main(["--help"]) == 0
    assert "fit-payload" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv", [["--help"], ["fit-links", "--help"], ["fit-links", "--no-such-option"]]
)
def test_help_and_usage_errors_import_no_library(argv: list[str]) -> None:
    """``--help`` and argument errors stay quick: the parser loads neither numpy, pinocchio, cvxpy
    nor rclpy (the stand-in, free of timing, for its 0.3 s target)."""
    code = (
        "import sys; from inertia_id_ros.cli import main; code = main(sys.argv[1:]); "
        "heavy = ('numpy', 'pinocchio', 'cvxpy', 'scipy', 'rclpy'); "
        "print(code, [name for name in heavy if name in sys.modules], file=sys.stderr)"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=60
    )
    expected = 2 if "--no-such-option" in argv else 0
    assert completed.stderr.splitlines()[-1] == f"{expected} []", completed.stderr


@pytest.mark.parametrize(
    "argv,message",
    [
        (["fit-links", "--joints", "j1,j2,j1"], "argument --joints: lists 'j1' twice"),
        (
            ["fit-whole-body", "--bodies", " , "],
            "argument --bodies: expected comma-separated names",
        ),
        (["excite", "--start", "0.1,x"], "argument --start: expected comma-separated numbers"),
        (["excite", "--start", "0.1,nan"], "argument --start: expected finite numbers"),
        (["fit-whole-body", "--fixed-tilt", "0.1"], "argument --fixed-tilt: expected ROLL,PITCH"),
    ],
)
def test_list_options_are_checked_as_they_are_parsed(capsys, argv: list[str], message: str) -> None:
    """Comma-separated options are parsed by argparse: a bad one is one line and exit 2 before
    any file is read (the URDF and data named here do not exist)."""
    code, _, err = run_cli(capsys, *argv, "--urdf", "missing.urdf", "--data", "missing.npz")
    assert code == 2
    assert message in err and "missing" not in err
    assert len(err.strip().splitlines()) == 1


def test_ctrl_c_in_a_command_is_one_line_and_exit_130(capsys, monkeypatch) -> None:
    """A KeyboardInterrupt wherever it lands in a command: one line, exit 130, no traceback."""
    from inertia_id_ros.cli import fit_links

    def interrupted(args) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(fit_links, "run", interrupted)
    code, _, err = run_cli(capsys, "fit-links", "--urdf", "u.urdf", "--data", "d.npz")
    assert code == 130 and err == "inertia-id fit-links: interrupted\n"


def test_method_choices_are_the_solvers() -> None:
    from inertia_id_ros.options import METHOD_NAMES
    from inertia_id_ros.solvers import METHODS

    assert METHOD_NAMES == tuple(METHODS)


def test_fit_payload_reports_an_inconsistent_ols_estimate_flagged(capsys, panda_urdf, tmp_path):
    """A point mass sits on the consistency boundary: noise makes OLS inconsistent; fit-payload
    still writes it, flagged, while lmi stays consistent."""
    point_mass = theta_from_inertia(1.0, np.array([0.02, 0.0, 0.05]), np.zeros((3, 3)))
    sim = PayloadSimulator.panda(payload_theta=point_mass, seed=4)
    t = np.arange(2400) / 200.0
    q, dq, wrench = sim.measure(t, np.random.default_rng(3))
    data = tmp_path / "point_mass.npz"
    np.savez(data, t=t, joint_names=np.array(PANDA_ARM), q=q, dq=dq, wrench=wrench)
    flags = {}
    for method in ("ols", "lmi"):
        out = tmp_path / f"{method}.json"
        code, _, err = run_cli(
            capsys,
            "fit-payload",
            "--urdf",
            panda_urdf,
            "--sensor-frame",
            SENSOR,
            "--data",
            str(data),
            "--method",
            method,
            "--json",
            str(out),
        )
        assert code == 0, err
        flags[method] = read_json(out)["bodies"][0]["fully_consistent"]
    assert flags == {"ols": False, "lmi": True}


@pytest.mark.parametrize(
    "arguments, message",
    [
        (("--excite", "--speed-scale", "1.5"), "--speed-scale: invalid_speed_scale"),
        (("--excite", "--speed-scale", "0"), "--speed-scale: invalid_speed_scale"),
        (("--speed-scale", "0.5"), "--trajectory and --speed-scale apply to --excite"),
        (("--duration", "-5"), "--duration must be >= 0 s"),
    ],
)
def test_demo_refuses_bad_arguments_before_starting_anything(capsys, arguments, message):
    code, _, err = run_cli(capsys, "demo", *arguments)
    assert code == 2 and message in err and err.count("\n") == 1


# ---- fit-payload-torques -------------------------------------------------------------------


def save_payload_torque_runs(runs, directory: Path) -> list[Path]:
    """The unloaded and the loaded run of ``runs`` as NPZ files in ``directory`` (t, joint_names,
    q, dq, effort, as an arm logs them): their paths, unloaded first."""
    paths = []
    for name, rec in (("unloaded", runs.unloaded), ("loaded", runs.loaded)):
        paths.append(directory / f"{name}.npz")
        np.savez(
            paths[-1],
            t=rec.t,
            joint_names=np.array(PANDA_ARM),
            q=rec.q,
            dq=rec.dq,
            effort=rec.effort,
        )
    return paths


@pytest.fixture(scope="module")
def payload_torque_npz(tmp_path_factory):
    """(runs, unloaded NPZ, loaded NPZ, fit-links JSON of the unloaded run): the simulated Panda
    replaying one motion without and with the default payload, 20 s at 200 Hz each."""
    from inertia_id_ros.sim.torques import panda_payload_torque_runs

    runs = panda_payload_torque_runs(duration=20.0, rate=200.0, seed=2)
    directory = tmp_path_factory.mktemp("payload_torques")
    paths = save_payload_torque_runs(runs, directory)
    links = directory / "links.json"
    assert (
        cli.main(
            [
                "fit-links",
                "--urdf",
                str(example_robot_urdf("panda")),
                "--data",
                str(paths[0]),
                "--json",
                str(links),
                "--filter-half-width",
                "0.03",
                "--prior-weight",
                "1e-6",
                "--coulomb-velocity",
                "0.02",
                "--no-tilt",
                "--torque-delay",
                "0",
            ]
        )
        == 0
    )
    return runs, paths[0], paths[1], links


def test_fit_payload_torques_at_125_hz_widens_its_filter_and_says_the_inertia_is_uncertain(
    capsys, tmp_path: Path, panda_urdf: str
) -> None:
    """Joint states at 125 Hz (a UR's rate), differencing: the default filter spans five
    samples each side (0.044 s, not 0.03 s); 10 s of motion leave the inertia about the COM
    uncertain, and the fit says so in words while the mass stays within 1 %."""
    from inertia_id_ros.sim.torques import panda_payload_torque_runs

    runs = panda_payload_torque_runs(duration=10.0, rate=125.0, seed=0)
    paths = save_payload_torque_runs(runs, tmp_path)
    out_json = tmp_path / "payload.json"
    code, _, err = run_cli(
        capsys,
        "fit-payload-torques",
        "--urdf",
        panda_urdf,
        "--data",
        str(paths[1]),
        "--frame",
        SENSOR,
        "--json",
        str(out_json),
        "--unloaded",
        str(paths[0]),
    )
    assert code == 0, err
    result = read_json(out_json)
    assert result["differentiation"]["half_width_s"] == pytest.approx(0.044)
    assert result["differentiation"]["window_samples"] == 11
    assert "the payload's inertia is poorly determined: about its COM" in err
    assert result["bodies"][0]["mass"] == pytest.approx(runs.payload_theta[0], rel=0.01)


@pytest.mark.parametrize("route", ["--links-result", "--unloaded"])
def test_fit_payload_torques_routes(
    capsys, tmp_path: Path, panda_urdf: str, payload_torque_npz, route: str
) -> None:
    """A fit-links link model, or differencing a loaded and an unloaded run: mass within 1 %,
    COM within 5 mm; the JSON has the standard errors; no warning about the mass."""
    runs, unloaded, loaded, links = payload_torque_npz
    capsys.readouterr()
    out_json = tmp_path / "payload.json"
    code, out, err = run_cli(
        capsys,
        "fit-payload-torques",
        "--urdf",
        panda_urdf,
        "--data",
        str(loaded),
        "--frame",
        SENSOR,
        "--json",
        str(out_json),
        route,
        str(links if route == "--links-result" else unloaded),
    )
    assert code == 0, err
    assert "mass is poorly determined" not in err
    result = read_json(out_json)
    assert list(result["bodies"][0]) == BODY_KEYS
    theta = np.array(result["bodies"][0]["theta"])
    mass, com, _ = inertia_from_theta(theta)
    true_mass, true_com, _ = inertia_from_theta(runs.payload_theta)
    assert mass == pytest.approx(true_mass, rel=0.01)
    assert np.linalg.norm(com - true_com) < 5e-3
    assert 0.0 < result["theta_std"][0] < 0.01 * true_mass
    assert result["rank"] == result["n_parameters"] == 17
    assert set(result["offset_changes"]) == set(PANDA_ARM)
    assert "standard errors: mass" in out
    assert result["refused"] is False and result["findings"] == []  # inside the default sphere
    if route == "--unloaded":
        assert result["link_model"].startswith("difference")
        assert result["alignment"]["shift_s"] == pytest.approx(0.0, abs=1e-9)
        assert "time shift of +0.000 s" in out
    else:
        assert result["link_model"] == f"fit-links result {links}"


def test_fit_payload_torques_bounding_ellipsoid(
    capsys, tmp_path: Path, panda_urdf: str, payload_torque_npz
) -> None:
    """--bounding-ellipsoid with --payload-sphere R (0.8 x the free fit's RMS radius of the
    payload's mass about --frame): the constrained payload stays within R on average,
    consistent; manifold cannot take it (exit 2)."""
    from helpers.estimators import rms_radius

    _, unloaded, loaded, _ = payload_torque_npz
    argv = [
        "fit-payload-torques",
        "--urdf",
        panda_urdf,
        "--data",
        str(loaded),
        "--frame",
        SENSOR,
        "--unloaded",
        str(unloaded),
    ]
    paths = {name: tmp_path / f"{name}.json" for name in ("free", "bounded")}
    assert run_cli(capsys, *argv, "--json", str(paths["free"]))[0] == 0
    free = np.array(read_json(paths["free"])["bodies"][0]["theta"])
    radius = 0.8 * rms_radius(free)
    code, _, err = run_cli(
        capsys,
        *argv,
        "--json",
        str(paths["bounded"]),
        "--bounding-ellipsoid",
        "--payload-sphere",
        f"{radius:.6f}",
    )
    assert code == 0, err
    result = read_json(paths["bounded"])
    theta = np.array(result["bodies"][0]["theta"])
    assert result["bodies"][0]["fully_consistent"]
    assert rms_radius(theta) <= radius * (1 + 1e-3) < rms_radius(free)
    code, _, err = run_cli(capsys, *argv, "--bounding-ellipsoid", "--method", "manifold")
    assert code == 2 and "manifold cannot take bounding ellipsoids" in err


def test_fit_payload_torques_urdf_links_are_flagged(
    capsys, panda_urdf: str, payload_torque_npz
) -> None:
    """The URDF's links as the link model (the truth 10 % off, no friction): the estimate is
    printed with the note to prefer a fit-links result or differencing."""
    _, _, loaded, _ = payload_torque_npz
    code, out, err = run_cli(
        capsys,
        "fit-payload-torques",
        "--urdf",
        panda_urdf,
        "--data",
        str(loaded),
        "--frame",
        SENSOR,
    )
    assert code == 0, err
    assert "link model: the URDF's links" in out
    assert "prefer --links-result" in out


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--torque-constants", "0.1,0.1"], "torque constants: 2 values for 7 joints"),
        (["--gear-ratios", ",".join(["100"] * 7)], "gear ratios need torque constants"),
        (
            ["--torque-constants", "a,b"],
            "argument --torque-constants: expected comma-separated numbers",
        ),
        (["--effort-signs", ",".join(["2"] * 7)], "effort_sign must be +1 or -1"),
        (["--frame", "no_such_frame"], "no_such_frame"),
        (["--validate", "x.npz"], "unrecognized arguments: --validate"),
        (["--links-result", "a.json", "--unloaded", "b.npz"], "not allowed with argument"),
    ],
)
def test_fit_payload_torques_bad_input(
    capsys, panda_urdf: str, payload_torque_npz, extra: list[str], message: str
) -> None:
    _, _, loaded, _ = payload_torque_npz
    argv = [
        "fit-payload-torques",
        "--urdf",
        panda_urdf,
        "--data",
        str(loaded),
        "--frame",
        SENSOR,
        *extra,
    ]
    code, _, err = run_cli(capsys, *argv)
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_fit_payload_torques_refuses_another_motion(
    capsys, tmp_path: Path, panda_urdf: str, payload_torque_npz
) -> None:
    """--unloaded of a different motion is refused: differencing needs the same motion."""
    from inertia_id_ros.sim.torques import panda_payload_torque_runs

    _, _, loaded, _ = payload_torque_npz
    other = panda_payload_torque_runs(duration=20.0, rate=200.0, seed=3).unloaded
    path = tmp_path / "other.npz"
    np.savez(
        path,
        t=other.t,
        joint_names=np.array(PANDA_ARM),
        q=other.q,
        dq=other.dq,
        effort=other.effort,
    )
    code, _, err = run_cli(
        capsys,
        "fit-payload-torques",
        "--urdf",
        panda_urdf,
        "--data",
        str(loaded),
        "--frame",
        SENSOR,
        "--unloaded",
        str(path),
    )
    assert code == 2
    assert "does not follow the loaded run's motion" in err


def test_fit_payload_torques_refuses_the_cad_prior_method(capsys, tmp_path, panda_urdf):
    """No CAD prior of the payload can be given to fit-payload-torques: its --method choices
    are its mode's methods, so cad_prior is a usage error (exit 2, one line)."""
    code, _, err = run_cli(
        capsys,
        "fit-payload-torques",
        "--urdf",
        panda_urdf,
        "--data",
        str(tmp_path / "absent.npz"),
        "--frame",
        SENSOR,
        "--method",
        "cad_prior",
    )
    assert code == 2
    assert "argument --method: invalid choice: 'cad_prior'" in err
    assert len(err.strip().splitlines()) == 1


def _kuka_torque_npz(path: Path, run: Path, payload: np.ndarray | None = None) -> Path:
    """A KUKA run as fit-payload-torques reads it; ``payload`` (10,) at ``lwr_7_link``: its
    torques (at the run's recorded states) added to the measured ones."""
    from inertia_id_ros.chain.links import LinkModel
    from inertia_id_ros.chain.payload_from_torques import PayloadTorqueModel

    d = np.load(run)
    effort = d["torques"]
    if payload is not None:
        links = LinkModel.from_urdf(run.parent / "kuka_lwr4.urdf", KUKA_JOINTS)
        model = PayloadTorqueModel(links, "lwr_7_link", estimate_offsets=False)
        effort = (
            effort + model.regressor(d["positions"], d["velocities"], d["accelerations"]) @ payload
        )
    np.savez(
        path,
        t=d["times"],
        joint_names=np.array(KUKA_JOINTS),
        q=d["positions"],
        dq=d["velocities"],
        ddq=d["accelerations"],
        effort=effort,
    )
    return path


def test_fit_payload_torques_real_kuka(capsys, tmp_path: Path) -> None:
    """Real KUKA LWR4+ torques, runs 1 and 2 of the same trajectory, no payload: differencing
    them finds no payload (within its standard error); with a 1.5 kg payload's torques added to
    run 2 it finds that payload (mass within 2 %, COM within 5 mm) through the real runs'
    noise and repeatability, where the URDF's links are 20 % off."""
    from inertia_id_ros.sim.payload import default_payload_theta

    data_dir = shared_data("kuka_lwr4")
    urdf = str(data_dir / "kuka_lwr4.urdf")
    unloaded = _kuka_torque_npz(tmp_path / "run1.npz", data_dir / "measurements_1.npz")
    payload = default_payload_theta()
    results = {}
    for name, run, extra in (
        (
            "null",
            _kuka_torque_npz(tmp_path / "run2.npz", data_dir / "measurements_2.npz"),
            ["--unloaded", str(unloaded)],
        ),
        (
            "payload",
            _kuka_torque_npz(tmp_path / "run2p.npz", data_dir / "measurements_2.npz", payload),
            ["--unloaded", str(unloaded)],
        ),
        ("urdf", tmp_path / "run2p.npz", []),
    ):
        out_json = tmp_path / f"{name}.json"
        code, _, err = run_cli(
            capsys,
            "fit-payload-torques",
            "--urdf",
            urdf,
            "--data",
            str(run),
            "--frame",
            "lwr_7_link",
            "--json",
            str(out_json),
            *extra,
        )
        assert code == 0, err
        results[name] = read_json(out_json)
    null = results["null"]
    assert null["bodies"][0]["mass"] < 3 * null["theta_std"][0] < 0.05
    assert abs(null["alignment"]["shift_s"]) < 0.02 and null["alignment"]["position_rms"] < 0.01
    assert null["differentiation"]["source"] == "recorded"  # the runs hold dq and ddq
    mass, com, _ = inertia_from_theta(np.array(results["payload"]["bodies"][0]["theta"]))
    true_mass, true_com, _ = inertia_from_theta(payload)
    assert mass == pytest.approx(true_mass, rel=0.02)
    assert np.linalg.norm(com - true_com) < 5e-3
    assert abs(results["urdf"]["bodies"][0]["mass"] - true_mass) > 0.1 * true_mass


def test_fit_payload_torques_log_flags_apply_to_both_runs(
    capsys, tmp_path: Path, panda_urdf: str, payload_torque_npz
) -> None:
    """Both runs logged in degrees: --angle-unit deg reads the loaded and the unloaded run alike,
    and the differencing gives what the runs in radians give; without it the degrees, read as
    radians, leave the joint limits: refused (exit 3), as the other fits."""
    _, unloaded, loaded, _ = payload_torque_npz
    masses = []
    for unit in ("rad", "deg"):
        paths = []
        for path in (loaded, unloaded):
            content = dict(np.load(path))
            if unit == "deg":
                content.update(q=np.rad2deg(content["q"]), dq=np.rad2deg(content["dq"]))
            paths.append(tmp_path / f"{unit}_{path.name}")
            np.savez(paths[-1], **content)
        out_json = tmp_path / f"{unit}.json"
        code, _, err = run_cli(
            capsys,
            "fit-payload-torques",
            "--urdf",
            panda_urdf,
            "--data",
            str(paths[0]),
            "--unloaded",
            str(paths[1]),
            "--frame",
            SENSOR,
            "--angle-unit",
            unit,
            "--json",
            str(out_json),
        )
        assert code == 0, err
        masses.append(read_json(out_json)["bodies"][0]["mass"])
    assert masses[1] == pytest.approx(masses[0], rel=1e-6)
    code, _, err = run_cli(
        capsys,
        "fit-payload-torques",
        "--urdf",
        panda_urdf,
        "--data",
        str(paths[0]),
        "--unloaded",
        str(paths[1]),
        "--frame",
        SENSOR,
    )
    assert code == 3 and "inertia-id fit-payload-torques: refused:" in err  # degrees as rad
    code, _, err = run_cli(
        capsys,
        "fit-payload-torques",
        "--urdf",
        panda_urdf,
        "--data",
        str(loaded),
        "--frame",
        SENSOR,
        "--angle-unit",
        "deg",
    )
    assert "warning: " in err and "radians read as degrees" in err  # radians as degrees
    code, _, err = run_cli(
        capsys,
        "fit-payload-torques",
        "--urdf",
        panda_urdf,
        "--data",
        str(loaded),
        "--frame",
        SENSOR,
        "--held-out-from",
        "5",
    )
    assert code == 2 and "--held-out-from does not apply" in err


def test_fit_payload_torques_warns_of_a_links_result_with_a_wide_filter(
    capsys, tmp_path: Path, panda_urdf: str, payload_torque_npz
) -> None:
    """fit-links with a +-0.12 s filter (its own choice on the simulated Panda at 1 kHz is
    0.126 s) says to refit for a payload, and fit-payload-torques warns of that result, naming
    the refit; a result without a filter is not judged, and the payload's data are then
    differentiated at the payload's default."""
    from inertia_id_ros.options import PAYLOAD_TORQUES_HALF_WIDTH

    _, unloaded, loaded, links = payload_torque_npz
    wide, bare = tmp_path / "wide.json", tmp_path / "bare.json"
    code, out, err = run_cli(
        capsys,
        "fit-links",
        "--urdf",
        panda_urdf,
        "--data",
        str(unloaded),
        "--json",
        str(wide),
        "--filter-half-width",
        "0.12",
        "--prior-weight",
        "1e-6",
        "--coulomb-velocity",
        "0.02",
        "--no-tilt",
        "--torque-delay",
        "0",
    )
    assert code == 0, err
    assert "refit with --filter-half-width 0.03" in out
    result = read_json(links)
    bare.write_text(json.dumps({k: v for k, v in result.items() if k != "differentiation"}))
    out_json = tmp_path / "payload.json"
    argv = [
        "fit-payload-torques",
        "--urdf",
        panda_urdf,
        "--data",
        str(loaded),
        "--frame",
        SENSOR,
        "--json",
        str(out_json),
        "--links-result",
    ]
    code, _, err = run_cli(capsys, *argv, str(wide))
    assert code == 0, err
    assert f"warning: {wide}: the links were fitted with a +-0.120 s derivative filter" in err
    assert "fit-links --filter-half-width 0.03" in err
    payload = read_json(out_json)
    assert [f["kind"] for f in payload["findings"]] == ["link_filter"]
    assert payload["differentiation"]["half_width_s"] == 0.12
    assert payload["differentiation"]["source"] == "velocities"
    code, _, err = run_cli(capsys, *argv, str(bare))
    assert code == 0 and "the links were fitted" not in err, err
    payload = read_json(out_json)
    assert payload["findings"] == []
    assert payload["differentiation"]["half_width_s"] == PAYLOAD_TORQUES_HALF_WIDTH
