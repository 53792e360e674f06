"""Whole-body rows (floating base, IMU, several F/T sensors), the scaled consistent fit, the CLI."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from helpers.whole_body import ICUB_SENSORS, whole_body_rnea_samples
from inertia_id_ros.chain.whole_body_fit import (
    IDENTIFIED,
    PRIOR_ONLY,
    fit_whole_body,
    normal_equations,
    parameter_scales,
)
from inertia_id_ros.cli import main
from inertia_id_ros.core.base_motion import BaseMotion
from inertia_id_ros.core.inertia import (
    check_consistency,
    inertia_from_theta,
    pseudo_inertia,
    theta_from_inertia,
)
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.core.whole_body_model import FTSensor, WholeBodyModel, WholeBodySamples
from inertia_id_ros.errors import ConfigError, FrameNotFound
from inertia_id_ros.formats.export import inertial_theta, with_link_inertial
from inertia_id_ros.sim.whole_body_robots import ICUB_INTERNAL_SENSORS


@pytest.fixture(scope="module")
def icub():
    urdf = example_robot_urdf("icub")
    return urdf, WholeBodyModel.from_urdf(urdf, ft_sensors=ICUB_SENSORS, imu_frame="imu_frame")


def _samples(model, urdf_xml, n, seed=0, base="floating", rate=None, noise=None):
    names, q, dq, ddq, imu, W, tau = whole_body_rnea_samples(
        urdf_xml,
        model.sensors,
        n,
        seed=seed,
        base=base,
        imu_frame=model.imu_frame if base == "floating" else None,
        rate=rate,
    )
    assert tuple(names) == model.joint_names
    motion = (
        model.base_motion_from_imu(q, dq, ddq, imu[0], imu[2], imu[1])
        if base == "floating"
        else BaseMotion.at_rest(n)
    )
    return WholeBodySamples(q, dq, ddq, motion, W, tau), imu


def test_link_inertials_are_the_urdf_links(icub):
    urdf, model = icub
    root = ET.parse(urdf).getroot()
    urdf_links = {
        link.get("name"): inertial_theta(link.find("inertial"))
        for link in root.findall("link")
        if link.find("inertial") is not None
    }
    with_mass = {name for name, theta in urdf_links.items() if theta[0] > 0}
    assert set(model.links) == with_mass and len(model.links) == 39
    for name, theta in zip(model.links, model.link_prior):
        np.testing.assert_allclose(theta, urdf_links[name], atol=1e-12, err_msg=name)
    # an F/T sensor splits pinocchio's joint body: r_upper_arm beyond it, r_shoulder_3 not
    assert model.links_beyond("r_arm_ft_sensor")[0] == "r_upper_arm"
    assert "r_shoulder_3" not in model.links_beyond("r_arm_ft_sensor")
    assert model.links_beyond("r_arm_ft_sensor") == model.links_beyond("r_upper_arm")


def test_rows_match_rnea_floating_base_with_imu(icub):
    urdf, model = icub
    samples, _ = _samples(model, urdf.read_text(), 12)
    Y, b, channels = model.rows(samples, with_efforts=True)
    assert channels[:6] == tuple(f"base.{c}" for c in ("fx", "fy", "fz", "tx", "ty", "tz"))
    assert channels[6] == "l_arm_ft_sensor.fx" and channels[-1] == "tau.r_wrist_yaw"
    x = model.prior  # the URDF is the truth here; offsets zero
    residual = (Y @ x - b).reshape(12, len(channels))
    scale = np.abs(b).reshape(12, -1).max(axis=0) + 1.0
    assert np.abs(residual).max(axis=0).max() < 1e-10 * scale.max()
    assert np.abs(b).max() > 10.0  # not trivially zero


def test_rows_offsets_and_known_links(icub):
    """Sensor offsets enter linearly (internal: estimated, contact: not); links left out keep
    their URDF inertials on the right-hand side."""
    urdf, _ = icub
    sensors = (FTSensor("l_sole", "contact", estimate_offset=True),) + ICUB_SENSORS[1:]
    bodies = ["r_upper_arm", "r_forearm", "chest"]
    model = WholeBodyModel.from_urdf(urdf, ft_sensors=sensors, imu_frame="imu_frame", bodies=bodies)
    assert model.bodies == ("chest", "r_upper_arm", "r_forearm")  # URDF order
    assert model.offset_sensors == ("l_sole",) + ICUB_INTERNAL_SENSORS
    samples, _ = _samples(model, urdf.read_text(), 6, seed=2)
    offsets = np.random.default_rng(0).normal(0, 2, (len(sensors), 6))
    samples.wrenches = samples.wrenches + offsets[None]
    Y, b, _ = model.rows(samples)
    x = np.concatenate([model.prior[:30], offsets.ravel()])
    assert np.abs(Y @ x - b).max() < 1e-9


def test_rows_fixed_base(icub):
    urdf, _ = icub
    model = WholeBodyModel.from_urdf(urdf, base="fixed", ft_sensors=ICUB_SENSORS[1:])
    samples, _ = _samples(model, urdf.read_text(), 8, base="fixed")
    Y, b, channels = model.rows(samples, with_efforts=True)
    assert not any(c.startswith("base.") for c in channels)
    assert np.abs(Y @ model.prior - b).max() < 1e-9


def test_flipped_sensors_are_negated(icub):
    """A sensor that reports the opposite wrench (``flip_wrench_sign``, e.g. iCub's
    child_to_parent): its negated readings give the rows of the plain one."""
    urdf, model = icub
    flipped = ("l_sole", "r_arm_ft_sensor")
    sensors = [FTSensor(s.frame, s.kind, flip_wrench_sign=s.frame in flipped) for s in ICUB_SENSORS]
    model_flipped = WholeBodyModel.from_urdf(urdf, ft_sensors=sensors, imu_frame="imu_frame")
    samples, _ = _samples(model, urdf.read_text(), 4, seed=4)
    Y, b, _ = model.rows(samples)
    signs = np.array([-1.0 if s.frame in flipped else 1.0 for s in ICUB_SENSORS])
    samples.wrenches = samples.wrenches * signs[None, :, None]
    Y_flipped, b_flipped, _ = model_flipped.rows(samples)
    np.testing.assert_array_equal(Y_flipped, Y)
    np.testing.assert_allclose(b_flipped, b, atol=1e-12)


def test_base_motion_from_a_differentiated_gyro(icub):
    """Smooth motion at 200 Hz: the gyro's derivative replaces the true angular acceleration."""
    from inertia_id_ros.core.base_motion import gyro_derivative

    urdf, model = icub
    n, rate = 200, 200.0
    samples, imu = _samples(model, urdf.read_text(), n, rate=rate)
    t = np.arange(n) / rate
    alpha = gyro_derivative(t, imu[0])
    inner = slice(10, -10)
    np.testing.assert_allclose(alpha[inner], imu[1][inner], atol=2e-3 * np.abs(imu[1]).max())
    motion = model.base_motion_from_imu(samples.q, samples.dq, samples.ddq, imu[0], imu[2], alpha)
    Y, b, _ = model.rows(
        WholeBodySamples(samples.q, samples.dq, samples.ddq, motion, samples.wrenches)
    )
    rel = np.abs(Y @ model.prior - b).reshape(n, -1)[inner].max() / np.abs(b).max()
    assert rel < 1e-3


def test_bad_model_inputs_name_the_item(icub):
    urdf, _ = icub
    with pytest.raises(ConfigError, match="'sideways'"):
        FTSensor("l_sole", "sideways")
    with pytest.raises(FrameNotFound, match="'no_such_frame'"):
        WholeBodyModel.from_urdf(urdf, ft_sensors=[FTSensor("no_such_frame", "contact")])
    with pytest.raises(FrameNotFound, match="'imu_nowhere'"):
        WholeBodyModel.from_urdf(urdf, imu_frame="imu_nowhere")
    with pytest.raises(ConfigError, match="hovering"):
        WholeBodyModel.from_urdf(urdf, base="hovering")


def test_scaling_is_a_congruence(icub):
    """``θ' = θ / d`` per link keeps ``J ⪰ 0``: ``J(θ') = T J(θ) T`` with a diagonal ``T``."""
    _, model = icub
    p = model.n_params
    d = parameter_scales(model, np.eye(p), 1)
    for k in (0, 5, 22):
        theta = model.prior[10 * k : 10 * k + 10]
        scaled = theta / d[10 * k : 10 * k + 10]
        m, length = d[10 * k], d[10 * k + 1] / d[10 * k]
        T = np.diag([1 / (length * np.sqrt(m))] * 3 + [1 / np.sqrt(m)])
        np.testing.assert_allclose(
            pseudo_inertia(scaled), T @ pseudo_inertia(theta) @ T, atol=1e-12
        )
        assert abs(scaled[0] - 1.0) < 1e-12


def _perturbed_urdf(model, urdf_xml, seed):
    rng = np.random.default_rng(seed)
    truth = []
    for name, theta in zip(model.links, model.link_prior):
        mass, com, inertia = inertia_from_theta(theta)
        true = theta_from_inertia(
            mass * (1 + rng.uniform(-0.3, 0.3)),
            com + rng.uniform(-0.02, 0.02, 3),
            inertia * (1 + rng.uniform(-0.4, 0.4)),
        )
        truth.append(true)
        urdf_xml = with_link_inertial(urdf_xml, name, true)
    return urdf_xml, np.array(truth)


def test_fit_is_consistent_and_predicts_better_than_the_urdf(icub):
    urdf, model = icub
    true_xml, truth = _perturbed_urdf(model, urdf.read_text(), seed=1)
    rng = np.random.default_rng(3)
    samples, _ = _samples(model, true_xml, 500, seed=3)
    offsets = rng.normal(0, 2, (len(ICUB_SENSORS), 6))
    offsets[0] = 0.0  # the contact sensor's offset is not estimated
    noise = rng.normal(0, 1, samples.wrenches.shape) * np.array([0.5] * 3 + [0.02] * 3)
    samples.wrenches = samples.wrenches + offsets + noise
    equations = normal_equations(model, samples)
    ols = fit_whole_body(model, equations, "ols")
    lmi = fit_whole_body(model, equations, "lmi")
    reference = fit_whole_body(model, equations, "lmi", backend="cvxpy")
    assert lmi.fully_consistent and reference.fully_consistent
    assert sum(not check_consistency(t).fully_consistent for t in ols.thetas) >= 5
    # the fast back end solves the same problem as the reference
    assert lmi.solution.objective <= reference.solution.objective * (1 + 1e-6)
    assert np.abs(lmi.x - reference.x).max() < 1e-3 * np.abs(lmi.x).max()
    # held-out prediction of the wrenches: far better than the URDF, as good as OLS
    test, _ = _samples(model, true_xml, 100, seed=4)
    test.wrenches = test.wrenches + offsets
    Y, b, _ = model.rows(test)
    rms = {
        name: np.sqrt(np.mean((Y @ x - b) ** 2))
        for name, x in (("urdf", model.prior), ("ols", ols.x), ("lmi", lmi.x))
    }
    assert rms["lmi"] < 0.2 * rms["urdf"] and rms["lmi"] < 1.2 * rms["ols"]
    np.testing.assert_allclose(lmi.offsets["r_arm_ft_sensor"], offsets[2], atol=0.1)
    # identifiability: the feet beyond their own sensors are identified; the base parameters
    # are fewer than the parameters
    labels = dict(zip(model.bodies, lmi.identifiability.labels))
    assert labels["l_foot"] == IDENTIFIED and labels["r_foot"] == IDENTIFIED
    assert lmi.identifiability.rank < model.n_params
    assert PRIOR_ONLY not in (labels["chest"], labels["r_upper_arm"])
    # warm start from the previous solution
    warm = fit_whole_body(model, equations, "lmi", initvals=lmi.solution)
    assert np.abs(warm.x - lmi.x).max() < 1e-6 * np.abs(lmi.x).max()


# ---- command line --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def recording(tmp_path_factory, icub):
    urdf, model = icub
    n, rate = 240, 200.0
    names, q, dq, ddq, imu, W, tau = whole_body_rnea_samples(
        urdf.read_text(), model.sensors, n, seed=5, imu_frame="imu_frame", rate=rate
    )
    path = tmp_path_factory.mktemp("wb") / "wb.npz"
    arrays = dict(
        t=np.arange(n) / rate,
        joint_names=np.array(names),
        q=q,
        dq=dq,
        ddq=ddq,
        effort=tau,
        imu_frame=np.array("imu_frame"),
        imu_orientation=imu[3],
        imu_angular_velocity=imu[0],
        imu_linear_acceleration=imu[2],
        ft_frames=np.array([s.frame for s in ICUB_SENSORS]),
        ft_types=np.array([s.kind for s in ICUB_SENSORS]),
        ft_wrench=W,
    )
    np.savez(path, **arrays)
    return path, arrays


def test_cli_fit_whole_body(tmp_path, recording, icub, capsys):
    urdf, model = icub
    path, _ = recording
    out = tmp_path / "wb.json"
    assert (
        main(["fit-whole-body", "--urdf", str(urdf), "--data", str(path), "--json", str(out)]) == 0
    )
    result = json.loads(out.read_text())
    assert [b["name"] for b in result["bodies"]] == list(model.links)
    assert all(b["fully_consistent"] for b in result["bodies"])
    assert {b["identifiability"] for b in result["bodies"]} <= {
        "identified",
        "partly identified",
        "prior only",
    }
    assert set(result["sensor_offsets"]) == set(ICUB_INTERNAL_SENSORS)
    assert result["samples"] > 200 and result["solve_time_s"] > 0
    assert 0 < result["base_parameters"]["rank"] < result["base_parameters"]["parameters"]
    # the URDF is the truth and there is no noise (but a differentiated gyro, 1.2 s of motion):
    # the fit predicts other, wilder motions within 1 %
    thetas = np.array([b["theta"] for b in result["bodies"]])
    Y, b, _ = model.rows(_samples(model, urdf.read_text(), 5, seed=9)[0])
    assert (
        np.abs(Y @ np.concatenate([thetas.ravel(), np.zeros(36)]) - b).max()
        < 0.01 * np.abs(b).max()
    )
    assert "inconsistent links: 0" in capsys.readouterr().out


def test_cli_fit_whole_body_estimates_contact_offsets(tmp_path, recording, icub):
    """``--estimate-contact-offsets``: the contact sole's offset is a parameter too (and, with no
    offset in the data, comes out near zero)."""
    urdf, _ = icub
    path, _ = recording
    out = tmp_path / "wb.json"
    assert (
        main(
            [
                "fit-whole-body",
                "--urdf",
                str(urdf),
                "--data",
                str(path),
                "--estimate-contact-offsets",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    offsets = json.loads(out.read_text())["sensor_offsets"]
    assert set(offsets) == set(ICUB_INTERNAL_SENSORS) | {"l_sole"}
    assert np.abs(offsets["l_sole"][:3]).max() < 1.0


def test_cli_fit_whole_body_weighting_channel(tmp_path, recording, icub, capsys):
    """``--weighting channel``: the JSON names each noise group's weight and residual std (the
    joints' too with ``--efforts``); the held-out table runs on the weighted fit."""
    urdf, model = icub
    path, _ = recording
    out = tmp_path / "wb.json"
    assert (
        main(
            [
                "fit-whole-body",
                "--urdf",
                str(urdf),
                "--data",
                str(path),
                "--efforts",
                "--weighting",
                "channel",
                "--holdout",
                "0.3",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    result = json.loads(out.read_text())
    weighting = result["weighting"]
    assert weighting["kind"] == "channel" and weighting["iterations"] >= 1
    assert list(weighting["weights"])[:2] == ["base.force", "base.torque"]
    assert f"tau.{model.joint_names[0]}" in weighting["sigma"]
    assert all(b["fully_consistent"] for b in result["bodies"])
    assert set(result["holdout"]["rms"]) >= {"base", *ICUB_INTERNAL_SENSORS}
    printed = capsys.readouterr().out
    assert "weighting channel" in printed and "base.force" in printed
    assert (
        main(
            [
                "fit-whole-body",
                "--urdf",
                str(urdf),
                "--data",
                str(path),
                "--weighting",
                "none",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    assert json.loads(out.read_text())["weighting"] == {"kind": "none"}


@pytest.mark.parametrize(
    "change, message",
    [
        ({"imu_frame": np.array("imu_nowhere")}, "IMU frame 'imu_nowhere' is not in the URDF"),
        (
            {
                "ft_frames": np.array(
                    [
                        "l_sole",
                        "l_arm_ft_sensor",
                        "r_arm_ft_sensor",
                        "l_leg_ft_sensor",
                        "r_leg_ft_sensor",
                        "l_foot_ft_sensor",
                        "no_sensor_here",
                    ]
                )
            },
            "F/T frame 'no_sensor_here' is not in the URDF",
        ),
        (
            {"ft_types": np.array(["contact"] + ["internal"] * 5 + ["sideways"])},
            "'r_foot_ft_sensor' has type 'sideways'",
        ),
        (
            {"ft_wrench": np.zeros((240, 6, 6))},
            "'ft_wrench' has shape (240, 6, 6), expected (240, 7, 6)",
        ),
        ({"imu_angular_velocity": np.zeros((239, 3))}, "'imu_angular_velocity' has shape (239, 3)"),
        ({"joint_names": np.array([f"j{k}" for k in range(32)])}, "lacks the URDF's joints"),
    ],
)
def test_cli_fit_whole_body_bad_input(tmp_path, recording, icub, capsys, change, message):
    urdf, _ = icub
    _, arrays = recording
    path = tmp_path / "bad.npz"
    np.savez(path, **{**arrays, **change})
    assert main(["fit-whole-body", "--urdf", str(urdf), "--data", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_cli_flipped_sensors(tmp_path, recording, icub):
    """``--flip-wrench-sign FRAME`` and the NPZ's ``ft_flip_wrench_sign`` undo a sensor that
    reports the opposite wrench: the same fit as the plain recording."""
    urdf, _ = icub
    path, arrays = recording
    frames = list(arrays["ft_frames"])
    k = frames.index("r_arm_ft_sensor")
    wrench = arrays["ft_wrench"].copy()
    wrench[:, k] *= -1.0
    flipped = tmp_path / "flipped.npz"
    np.savez(flipped, **{**arrays, "ft_wrench": wrench})
    marked = tmp_path / "marked.npz"
    np.savez(
        marked,
        **{**arrays, "ft_wrench": wrench, "ft_flip_wrench_sign": np.arange(len(frames)) == k},
    )
    fits = {}
    for name, extra in (
        ("plain", [str(path)]),
        ("option", [str(flipped), "--flip-wrench-sign", "r_arm_ft_sensor"]),
        ("npz", [str(marked)]),
    ):
        out = tmp_path / f"{name}.json"
        assert (
            main(["fit-whole-body", "--urdf", str(urdf), "--data", *extra, "--json", str(out)]) == 0
        )
        fits[name] = json.loads(out.read_text())
    for name in ("option", "npz"):
        np.testing.assert_allclose(
            fits[name]["sensor_offsets"]["r_arm_ft_sensor"],
            fits["plain"]["sensor_offsets"]["r_arm_ft_sensor"],
            atol=1e-6,
        )
        np.testing.assert_allclose(
            [b["theta"] for b in fits[name]["bodies"]],
            [b["theta"] for b in fits["plain"]["bodies"]],
            atol=1e-6,
        )


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--flip-wrench-sign", "r_elbow"], "no F/T sensor at 'r_elbow' to flip"),
        (
            {"ft_flip_wrench_sign": np.array([True, False])},
            "'ft_flip_wrench_sign' must be 7 booleans",
        ),
    ],
)
def test_cli_flipped_sensors_bad_input(tmp_path, recording, icub, capsys, extra, message):
    urdf, _ = icub
    path, arrays = recording
    if isinstance(extra, dict):
        path = tmp_path / "bad.npz"
        np.savez(path, **{**arrays, **extra})
        extra = []
    assert main(["fit-whole-body", "--urdf", str(urdf), "--data", str(path), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


@pytest.mark.parametrize(
    "text, message", [(None, "does not exist"), ("<robot", "cannot build a model")]
)
def test_cli_fit_whole_body_bad_urdf(tmp_path, recording, capsys, text, message):
    _, arrays = recording
    path, urdf = tmp_path / "data.npz", tmp_path / "robot.urdf"
    np.savez(path, **arrays)
    if text is not None:
        urdf.write_text(text)
    assert main(["fit-whole-body", "--urdf", str(urdf), "--data", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_cli_fit_whole_body_without_rows_is_bad_input(tmp_path, recording, icub, capsys):
    """A fixed base with the contact sensor only (no base rows, no internal sensor) has no rows:
    bad input, not a failed solve; with --efforts it has the joint-torque rows."""
    urdf, _ = icub
    _, arrays = recording
    contact = [k for k, kind in enumerate(arrays["ft_types"]) if kind == "contact"]
    path = tmp_path / "contact_only.npz"
    np.savez(
        path,
        **{
            **arrays,
            "ft_frames": arrays["ft_frames"][contact],
            "ft_types": arrays["ft_types"][contact],
            "ft_wrench": arrays["ft_wrench"][:, contact],
        },
    )
    assert (
        main(["fit-whole-body", "--urdf", str(urdf), "--data", str(path), "--base", "fixed"]) == 2
    )
    err = capsys.readouterr().err
    assert "no rows to fit" in err and err.count("\n") == 1
    assert (
        main(
            [
                "fit-whole-body",
                "--urdf",
                str(urdf),
                "--data",
                str(path),
                "--base",
                "fixed",
                "--efforts",
            ]
        )
        == 0
    )


def test_cli_holdout_and_pointmass(tmp_path, icub, capsys):
    """A URDF off by ±30 % / 2 cm / ±40 %, noise and offsets: the consistent fit predicts the
    held-out wrenches of every internal sensor far better than the URDF, as well as OLS."""
    urdf, model = icub
    true_xml, _ = _perturbed_urdf(model, urdf.read_text(), seed=4)
    n, rate = 800, 200.0
    names, q, dq, ddq, imu, W, _ = whole_body_rnea_samples(
        true_xml, model.sensors, n, seed=6, imu_frame="imu_frame", rate=rate
    )
    rng = np.random.default_rng(1)
    offsets = rng.normal(0, 2, (len(ICUB_SENSORS), 6))
    offsets[0] = 0.0
    W = W + offsets + rng.normal(0, 1, W.shape) * np.array([0.5] * 3 + [0.02] * 3)
    path = tmp_path / "noisy.npz"
    np.savez(
        path,
        t=np.arange(n) / rate,
        joint_names=np.array(names),
        q=q,
        dq=dq,
        ddq=ddq,
        imu_frame=np.array("imu_frame"),
        imu_orientation=imu[3],
        imu_angular_velocity=imu[0],
        imu_linear_acceleration=imu[2],
        ft_frames=np.array([s.frame for s in ICUB_SENSORS]),
        ft_types=np.array([s.kind for s in ICUB_SENSORS]),
        ft_wrench=W,
    )
    for method in ("lmi", "pointmass"):
        out = tmp_path / f"{method}.json"
        assert (
            main(
                [
                    "fit-whole-body",
                    "--urdf",
                    str(urdf),
                    "--data",
                    str(path),
                    "--json",
                    str(out),
                    "--method",
                    method,
                    "--holdout",
                    "0.3",
                ]
            )
            == 0
        )
        result = json.loads(out.read_text())
        assert all(b["fully_consistent"] for b in result["bodies"])
        rms = result["holdout"]["rms"]
        for frame in ICUB_INTERNAL_SENSORS:
            force = rms[frame]["force"]
            assert force["fit"] < 0.5 * force["urdf"], (method, frame, force)
            assert force["fit"] < 1.2 * force["ols"], (method, frame, force)
        assert rms["base"]["force"]["fit"] < 1.2 * rms["base"]["force"]["ols"]
        assert (
            rms["r_arm_ft_sensor"]["force"]["fit"]
            < rms["r_arm_ft_sensor"]["force"]["urdf_offsets"]
            < rms["r_arm_ft_sensor"]["force"]["urdf"]
        )
        assert rms["base"]["ols_inconsistent_links"] > 0
    assert "fit/URDF" in capsys.readouterr().out
    assert (
        main(["fit-whole-body", "--urdf", str(urdf), "--data", str(path), "--holdout", "1.5"]) == 2
    )


def test_base_parameter_combinations_are_in_si_units(icub):
    """Each reported combination is unchanged along every null direction of the unscaled data."""
    urdf, model = icub
    samples, _ = _samples(model, urdf.read_text(), 300, seed=8)
    equations = normal_equations(model, samples)
    fit = fit_whole_body(model, equations, "lmi")
    ident = fit.identifiability
    assert len(ident.base_parameters) == ident.rank
    names = model.parameter_names
    index = {name: k for k, name in enumerate(names)}
    # a combination 'a + c*b - ...' as a vector
    vectors = []
    for text in ident.base_parameters[:40]:
        tokens = text.split()
        v = np.zeros(len(names))
        v[index[tokens[0]]] = 1.0
        for sign, term in zip(tokens[1::2], tokens[2::2]):
            coefficient, name = term.split("*", 1)
            v[index[name]] = float(coefficient) * (1 if sign == "+" else -1)
        vectors.append(v)
    eigenvalues, eigenvectors = np.linalg.eigh(equations.gram)
    scale = np.abs(np.array(vectors)).max(axis=1)[:, None]
    # directions the data do not see move the combinations only by round-off of the 4 digits
    # (in the scaled coordinates' units the coefficients would be off by the links' sizes)
    unseen = eigenvectors[:, eigenvalues < 1e-12 * eigenvalues[-1]]
    assert unseen.shape[1] > 0
    assert np.abs(np.array(vectors) @ unseen / scale).max() < 5e-2


def test_cli_fit_whole_body_from_a_description(tmp_path, recording, icub, capsys):
    """A humanoid bag with every F/T sensor on its own topic, read through an input description
    (the simulated readings are in this package's convention: ``sign: keep`` overrides the
    URDF's child_to_parent): the same fit as ``--bag``; ``sign: urdf`` negates the internal
    sensors' readings, and the fit is refused as implausible."""
    import yaml

    urdf, _ = icub
    _, arrays = recording
    bag, ft = _bag_of(arrays, tmp_path / "wb_bag")
    by_bag = tmp_path / "bag.json"
    fit = ["fit-whole-body", "--urdf", str(urdf), "--filter-half-width", "0.05"]  # not the filter
    assert main([*fit, "--bag", str(bag), "--json", str(by_bag), *ft]) == 0
    streams = {
        "joints": {"file": "wb_bag", "topic": "/joint_states"},
        "imu": {"file": "wb_bag", "topic": "/imu"},
    }
    streams.update(
        {str(frame): {"file": "wb_bag", "topic": f"/ft/{frame}"} for frame in arrays["ft_frames"]}
    )
    results, codes = {}, {}
    for sign in ("keep", "urdf"):
        description = {
            "streams": streams,
            "joints": {
                "stream": "joints",
                "position": {"unit": "rad"},
                "velocity": {"unit": "rad"},
            },
            "ft_sensors": [
                {"frame": str(frame), "stream": str(frame), "kind": str(kind), "sign": sign}
                for frame, kind in zip(arrays["ft_frames"], arrays["ft_types"])
            ],
            "imu": {"frame": "imu_frame", "stream": "imu"},
        }
        path = tmp_path / f"{sign}.yaml"
        path.write_text(yaml.safe_dump(description, sort_keys=False))
        out = tmp_path / f"{sign}.json"
        codes[sign] = main([*fit, "--input", str(path), "--json", str(out)])
        results[sign] = json.loads(out.read_text())
    expected = json.loads(by_bag.read_text())
    assert results["keep"]["samples"] == expected["samples"]
    np.testing.assert_allclose(
        [b["theta"] for b in results["keep"]["bodies"]],
        [b["theta"] for b in expected["bodies"]],
        atol=1e-9,
    )
    assert codes == {"keep": 0, "urdf": 3}  # negated readings: refused as implausible
    assert results["urdf"]["refused"] and not results["keep"].get("refused")
    assert "measure_direction child_to_parent -> readings negated" in capsys.readouterr().err


def test_rows_moved_by_a_held_joint(icub):
    """A joint not in the log (held) moves the base rows and the rows of the sensors whose
    measured part it is in, not the others: the fit is refused only for the former."""
    from inertia_id_ros.formats.held import rows_moved_by

    urdf, model = icub
    samples, _ = _samples(model, urdf.read_text(), 4, seed=3)
    moved = rows_moved_by(model, samples, ["r_elbow"])
    assert "base.fx" in moved and "r_arm_ft_sensor.fx" in moved
    assert not any(channel.startswith(("l_leg", "r_leg", "l_foot", "l_arm")) for channel in moved)


def test_cli_fit_whole_body_from_a_bag(tmp_path, recording, icub, capsys):
    """The same recording as a bag (one topic per input, synchronised by header stamp) gives
    the NPZ's fit; a missing topic or a bad kind is an error naming it."""
    urdf, model = icub
    npz, arrays = recording
    bag, ft = _bag_of(arrays, tmp_path / "wb_bag")
    out = tmp_path / "bag.json"
    assert (
        main(["fit-whole-body", "--urdf", str(urdf), "--bag", str(bag), "--json", str(out), *ft])
        == 0
    )
    result = json.loads(out.read_text())
    assert all(b["fully_consistent"] for b in result["bodies"])
    assert result["samples"] > 200 and set(result["sensor_offsets"]) == set(ICUB_INTERNAL_SENSORS)
    assert "does not cover" not in capsys.readouterr().err
    # a sensor that stops half way: its stamps are dropped and reported
    bag2, _ = _bag_of(arrays, tmp_path / "stopped", kept={"r_arm_ft_sensor": 120})
    assert (
        main(["fit-whole-body", "--urdf", str(urdf), "--bag", str(bag2), "--json", str(out), *ft])
        == 0
    )
    assert "'/ft/r_arm_ft_sensor' does not cover 120 stamps" in capsys.readouterr().err
    assert json.loads(out.read_text())["samples"] < result["samples"] - 100
    assert (
        main(
            [
                "fit-whole-body",
                "--urdf",
                str(urdf),
                "--bag",
                str(bag),
                *ft,
                "--ft=/ft/missing=internal",
            ]
        )
        == 2
    )
    assert "no topic '/ft/missing'" in capsys.readouterr().err
    bad = [ft[0].replace("=contact", "=touching")] + ft[1:]
    assert main(["fit-whole-body", "--urdf", str(urdf), "--bag", str(bag), *bad]) == 2
    assert "type 'touching'" in capsys.readouterr().err
    assert (
        main(
            [
                "fit-whole-body",
                "--urdf",
                str(urdf),
                "--bag",
                str(bag),
                *ft,
                "--imu-topic",
                "/imu_gone",
            ]
        )
        == 2
    )
    assert "'/imu_gone'" in capsys.readouterr().err


def test_rows_suspended_base(icub):
    """Hanging from a crane through an F/T sensor at the base (a contact sensor), joints moving,
    the base still: the base rows balance the crane's wrench."""
    urdf, _ = icub
    sensors = (FTSensor("root_link", "contact"),) + ICUB_SENSORS[1:]
    model = WholeBodyModel.from_urdf(
        urdf, base="suspended", ft_sensors=sensors, imu_frame="imu_frame"
    )
    names, q, dq, ddq, imu, W, _ = whole_body_rnea_samples(
        urdf.read_text(), sensors, 6, seed=3, base="suspended", imu_frame="imu_frame"
    )
    motion = model.base_motion_from_imu(q, dq, ddq, imu[0], imu[2], imu[1])
    np.testing.assert_allclose(np.linalg.norm(motion.proper_acceleration, axis=1), 9.81)
    Y, b, channels = model.rows(WholeBodySamples(q, dq, ddq, motion, W))
    assert channels[0] == "base.fx"
    assert np.abs(Y @ model.prior - b).max() < 1e-9


def test_cli_fixed_base_without_imu(tmp_path, icub):
    """On a stand: no IMU keys, no base rows; the arms' and legs' sensors identify the links
    beyond them (the rest keeps the prior)."""
    urdf, _ = icub
    sensors = ICUB_SENSORS[1:]
    n, rate = 200, 200.0
    names, q, dq, ddq, _, W, _ = whole_body_rnea_samples(
        urdf.read_text(), sensors, n, seed=2, base="fixed", rate=rate
    )
    path = tmp_path / "stand.npz"
    np.savez(
        path,
        t=np.arange(n) / rate,
        joint_names=np.array(names),
        q=q,
        dq=dq,
        ddq=ddq,
        ft_frames=np.array([s.frame for s in sensors]),
        ft_types=np.array([s.kind for s in sensors]),
        ft_wrench=W,
    )
    out = tmp_path / "stand.json"
    assert (
        main(
            [
                "fit-whole-body",
                "--urdf",
                str(urdf),
                "--data",
                str(path),
                "--base",
                "fixed",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    result = json.loads(out.read_text())
    labels = {b["name"]: b["identifiability"] for b in result["bodies"]}
    assert result["base"] == "fixed" and all(b["fully_consistent"] for b in result["bodies"])
    assert labels["chest"] == PRIOR_ONLY and labels["r_hand"] != PRIOR_ONLY
    assert main(["fit-whole-body", "--urdf", str(urdf), "--data", str(path)]) == 2  # floating


def _bag_of(arrays, path: Path, kept: dict[str, int] | None = None) -> tuple[Path, list[str]]:
    """The recording ``arrays`` as a bag at ``path``, each F/T sensor on its own topic
    ``/ft/<frame>`` (``kept``: frame -> how many of its first readings are written; default
    all), and the ``--ft`` options of fit-whole-body that read it."""
    from helpers.recordings import write_whole_body_bag

    kept = kept or {}
    topics = {
        f"/ft/{frame}": (frame, arrays["ft_wrench"][: kept.get(str(frame)), k])
        for k, frame in enumerate(arrays["ft_frames"])
    }
    bag = write_whole_body_bag(
        path,
        arrays["t"],
        list(arrays["joint_names"]),
        arrays["q"],
        arrays["dq"],
        "imu_frame",
        (
            arrays["imu_angular_velocity"],
            arrays["imu_linear_acceleration"],
            arrays["imu_orientation"],
        ),
        topics,
    )
    ft = [f"--ft=/ft/{f}={kind}" for f, kind in zip(arrays["ft_frames"], arrays["ft_types"])]
    return bag, ft
