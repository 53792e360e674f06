"""``inertia-id validate`` and ``--validate``: the errors agree (1 %) with an independent
computation (pinocchio RNEA of the result's links plus the drive terms written out; for a payload,
RNEA of the robot carrying it); JSON keys; PNG; the registry of result kinds."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from helpers.panda_arm import DRIVE_TRUTH, panda_truth_model
from inertia_id_ros import cli, modes
from inertia_id_ros.core.robots import example_robot_urdf, load_model, reduce_model
from inertia_id_ros.errors import InputError
from inertia_id_ros.modes import Mode
from inertia_id_ros.offline import validation as validate
from inertia_id_ros.sim.payload import ExcitingTrajectory, PayloadSimulator

PANDA_ARM = tuple(f"panda_joint{i}" for i in range(1, 8))


@pytest.fixture(scope="module")
def panda_urdf() -> str:
    return str(example_robot_urdf("panda"))


def link_npz(path: Path, seed: int, n: int = 500) -> Path:
    """``n`` samples at 50 Hz of an exciting motion, exact ``dq``/``ddq``, noisy torques."""
    t = np.arange(n) / 50.0
    trajectory = ExcitingTrajectory.for_model(
        load_model(example_robot_urdf("panda")),
        PANDA_ARM,
        period=10.0,
        seed=seed,
        position_fraction=0.6,
        velocity_fraction=0.6,
    )
    q, dq, ddq = trajectory(t)
    model = panda_truth_model()
    data = model.createData()
    tau = np.array([pin.rnea(model, data, *x) for x in zip(q, dq, ddq)])
    d = DRIVE_TRUTH
    tau += d["viscous"] * dq + d["coulomb"] * np.sign(dq) + d["offset"] + d["armature"] * ddq
    tau += np.random.default_rng(seed).normal(0.0, 0.05, tau.shape)
    np.savez(path, t=t, joint_names=np.array(PANDA_ARM), q=q, dq=dq, ddq=ddq, effort=tau)
    return path


@pytest.fixture(scope="module")
def link_files(tmp_path_factory, panda_urdf) -> tuple[Path, Path, Path]:
    """(train, held-out, result of fit-links ols on train)."""
    root = tmp_path_factory.mktemp("validate_links")
    train, held_out = link_npz(root / "train.npz", 1), link_npz(root / "held_out.npz", 2)
    result = root / "result.json"
    assert (
        cli.main(
            [
                "fit-links",
                "--urdf",
                panda_urdf,
                "--data",
                str(train),
                "--method",
                "ols",
                "--prior-weight",
                "1e-4",
                "--json",
                str(result),
            ]
        )
        == 0
    )
    return train, held_out, result


def independent_torques(result: dict, urdf: str, q, dq, ddq) -> np.ndarray:
    """RNEA with each body's theta on the joint that moves it, plus
    viscous dq + coulomb sign(dq) + offset + armature ddq, written out."""
    model = reduce_model(load_model(urdf), PANDA_ARM)
    for body in result["bodies"]:
        joint = model.frames[model.getFrameId(body["name"])].parentJoint
        model.inertias[joint] = pin.Inertia.FromDynamicParameters(np.array(body["theta"]))
    data = model.createData()
    tau = np.array([pin.rnea(model, data, *x) for x in zip(q, dq, ddq)])
    drive = {
        key: np.array([j[key] for j in result["joints"]])
        for key in ("viscous", "coulomb", "offset", "armature")
    }
    assert all(j["coulomb_velocity"] == 0.0 for j in result["joints"])
    return (
        tau
        + drive["viscous"] * dq
        + drive["coulomb"] * np.sign(dq)
        + drive["offset"]
        + drive["armature"] * ddq
    )


def errors_by_hand(measured: np.ndarray, predicted: np.ndarray) -> tuple[float, float, np.ndarray]:
    error = measured - predicted
    return (
        float(np.sqrt(np.mean(error**2))),
        float(100 * np.linalg.norm(error) / np.linalg.norm(measured)),
        np.sqrt(np.mean(error**2, axis=0)),
    )


def test_links_agree_with_rnea_plus_drive_terms(capsys, tmp_path, panda_urdf, link_files):
    train, held_out, result_path = link_files
    out_json, out_png = tmp_path / "v.json", tmp_path / "v.png"
    capsys.readouterr()
    assert (
        cli.main(
            [
                "validate",
                str(result_path),
                "--data",
                str(held_out),
                "--urdf",
                panda_urdf,
                "--train",
                str(train),
                "--json",
                str(out_json),
                "--png",
                str(out_png),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "overall" in out and "panda_joint7" in out
    report = json.loads(out_json.read_text())
    assert list(report) == ["fit", "urdf", "ols"]
    for model in report.values():
        assert {"rms", "relative_error_percent", "per_channel"} <= set(model)
        assert list(model["per_channel"]) == list(PANDA_ARM)
    recorded = np.load(held_out)
    measured = recorded["effort"]
    result = json.loads(result_path.read_text())
    predicted = independent_torques(
        result, panda_urdf, recorded["q"], recorded["dq"], recorded["ddq"]
    )
    rms, relative, per_joint = errors_by_hand(measured, predicted)
    assert report["fit"]["rms"] == pytest.approx(rms, rel=0.01)
    assert report["fit"]["relative_error_percent"] == pytest.approx(relative, rel=0.01)
    assert list(report["fit"]["per_channel"].values()) == pytest.approx(per_joint, rel=0.01)
    assert relative < 5.0  # a good fit of the right model
    # the URDF: its inertials, no friction: RNEA of the URDF alone
    urdf_model = reduce_model(load_model(panda_urdf), PANDA_ARM)
    data = urdf_model.createData()
    urdf_tau = np.array(
        [
            pin.rnea(urdf_model, data, *x)
            for x in zip(recorded["q"], recorded["dq"], recorded["ddq"])
        ]
    )
    rms, relative, _ = errors_by_hand(measured, urdf_tau)
    assert report["urdf"]["rms"] == pytest.approx(rms, rel=0.01)
    assert report["urdf"]["relative_error_percent"] == pytest.approx(relative, rel=0.01)
    assert report["urdf"]["relative_error_percent"] > 3 * report["fit"]["relative_error_percent"]
    assert report["ols"]["relative_error_percent"] < 5.0
    assert out_png.stat().st_size > 10_000


def test_fit_links_validate_prints_the_table(capsys, panda_urdf, link_files):
    train, held_out, _ = link_files
    assert (
        cli.main(
            [
                "fit-links",
                "--urdf",
                panda_urdf,
                "--data",
                str(train),
                "--method",
                "ols",
                "--validate",
                str(held_out),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "validation on" in out and "ols %" in out and "urdf rms" in out


@pytest.fixture(scope="module")
def payload_files(tmp_path_factory) -> tuple[Path, Path, Path, PayloadSimulator]:
    root = tmp_path_factory.mktemp("validate_payload")
    sim = PayloadSimulator.panda(seed=4)
    paths = []
    for name, start in (("train", 0.0), ("held_out", 10.0)):
        t = start + np.arange(1000) / 100.0
        q, dq, ddq = sim.state(t)
        wrench = sim.measure_wrench(t, np.random.default_rng(int(start)))
        path = root / f"{name}.npz"
        np.savez(
            path,
            t=t,
            joint_names=np.array(PANDA_ARM),
            q=q,
            dq=dq,
            ddq=ddq,
            wrench=wrench,
            wrench_frame="panda_link8",
        )
        paths.append(path)
    result = root / "result.json"
    assert (
        cli.main(
            [
                "fit-payload",
                "--urdf",
                str(example_robot_urdf("panda")),
                "--sensor-frame",
                "panda_link8",
                "--data",
                str(paths[0]),
                "--method",
                "lmi",
                "--json",
                str(result),
            ]
        )
        == 0
    )
    return paths[0], paths[1], result, sim


def test_payload_agrees_with_rnea_of_the_robot_carrying_it(capsys, tmp_path, payload_files):
    train, held_out, result_path, sim = payload_files
    urdf = str(example_robot_urdf("panda"))
    out_json = tmp_path / "v.json"
    capsys.readouterr()
    assert (
        cli.main(
            [
                "validate",
                str(result_path),
                "--data",
                str(held_out),
                "--urdf",
                urdf,
                "--train",
                str(train),
                "--json",
                str(out_json),
            ]
        )
        == 0
    )
    report = json.loads(out_json.read_text())
    assert list(report["fit"]["per_channel"]) == ["fx", "fy", "fz", "tx", "ty", "tz"]
    result = json.loads(result_path.read_text())
    recorded = np.load(held_out)
    # independent: RNEA of the robot carrying the fitted payload, plus the fitted offset
    theta = np.array(result["bodies"][0]["theta"])
    fitted = PayloadSimulator(
        load_model(urdf),
        "panda_link8",
        theta,
        sim.trajectory,
        PANDA_ARM,
        offset=np.array(result["sensor_offset"]),
    )
    predicted = fitted.true_wrench(recorded["t"]) + fitted.true_offset
    rms, relative, per_channel = errors_by_hand(recorded["wrench"], predicted)
    assert report["fit"]["rms"] == pytest.approx(rms, rel=0.01)
    assert report["fit"]["relative_error_percent"] == pytest.approx(relative, rel=0.01)
    assert list(report["fit"]["per_channel"].values()) == pytest.approx(per_channel, rel=0.01)
    # the URDF's links beyond the flange (hand, fingers) are not the simulated payload
    assert report["urdf"]["relative_error_percent"] > 10 * report["fit"]["relative_error_percent"]
    assert report["ols"]["relative_error_percent"] < 2 * report["fit"]["relative_error_percent"]


class _Toy(Mode):
    """A mode whose results validate by one evaluator and whose older files hold ``"toy"``."""

    name = "toy_validation"
    title = "Toy mode"
    summary = "nothing"
    default_weighting = "none"
    wiring = "nowhere:ToyIO"

    def read_settings(self, values):
        return None

    def build_session(self, settings):
        raise NotImplementedError

    def recognises(self, result):
        return "toy" in result

    def evaluate(self, result, held_out, urdf, train):
        t = np.arange(4.0)
        measured = np.array([[1.0], [2.0], [3.0], [4.0]])
        return {
            "urdf": validate.Prediction(("base_fz",), t, measured, 0.5 * measured),
            "fit": validate.Prediction(("base_fz",), t, measured, 0.9 * measured),
        }


def test_a_result_is_validated_by_its_mode(tmp_path, monkeypatch):
    """A result names its mode (``"mode"``) and the registry's mode evaluates it (the models in
    report order); an older file is the mode's that recognises it; none: refused."""
    from inertia_id_ros.jobs.validate import validate as validate_job

    monkeypatch.setattr(modes.base, "_REGISTRY", dict(modes.base._REGISTRY))
    toy = modes.register(_Toy())
    held_out = validate.DataSource(str(tmp_path / "none.npz"))
    validation = validate_job({"mode": "toy_validation", "bodies": []}, held_out)
    assert list(validation.estimate) == ["fit", "urdf"]
    assert validation.estimate["fit"].relative_error_percent == pytest.approx(10.0)
    assert validation.document["urdf"]["relative_error_percent"] == pytest.approx(50.0)
    assert modes.result_mode({"toy": 1}) is toy
    assert modes.result_mode({"joints": [], "bodies": []}).name == "links"
    assert modes.result_mode({"sensor_offset": [0] * 6, "bodies": []}).name == "payload"
    torques = {"sensor_offset": [0] * 2, "offset_names": ["j1", "j2"], "bodies": []}
    assert modes.result_mode(torques).name == "payload_torques"
    assert modes.result_mode({"offset_changes": {}, "bodies": []}).name == "payload_torques"
    assert modes.result_mode({"sensor_offsets": {}, "bodies": []}).name == "whole_body"
    with pytest.raises(InputError, match="no mode recognises it"):
        modes.result_mode({"bodies": []})
    with pytest.raises(InputError, match="unknown mode 'magic'"):
        modes.result_mode({"mode": "magic", "joints": []})


def test_links_need_urdf(capsys, link_files):
    _, held_out, result = link_files
    assert cli.main(["validate", str(result), "--data", str(held_out)]) == 2
    assert "needs --urdf" in capsys.readouterr().err
