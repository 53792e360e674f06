"""The usual input mistakes, injected into simulated and real recordings: each refused (exit code
3) or warned, naming the cause; the undisturbed inputs pass (exit code 0). The checks' units
(:mod:`inertia_id_ros.offline.plausibility`) on small inputs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from helpers.paths import shared_data
from inertia_id_ros import cli
from inertia_id_ros.cli.common import EXIT_IMPLAUSIBLE
from inertia_id_ros.core.inertia import theta_from_inertia
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.findings import REFUSE, WARN
from inertia_id_ros.offline import plausibility
from inertia_id_ros.offline import volumes as bounding
from inertia_id_ros.options import LINK_VOLUME_MARGIN
from inertia_id_ros.sim.payload import ExcitingTrajectory, PayloadSimulator

PANDA_ARM = tuple(f"panda_joint{i}" for i in range(1, 8))
SENSOR = "panda_link8"
KUKA_JOINTS = tuple(f"lwr_{i}_joint" for i in range(7))
ICUB_LEGS = ("l_leg_ft_sensor", "l_foot_ft_sensor", "r_leg_ft_sensor", "r_foot_ft_sensor")


def run_cli(capsys, tmp_path: Path, *argv: str) -> tuple[int, str, dict | None]:
    """``(exit code, stderr, result JSON or None)``."""
    out = tmp_path / "result.json"
    out.unlink(missing_ok=True)
    code = cli.main([*argv, "--json", str(out)])
    err = capsys.readouterr().err
    return code, err, json.loads(out.read_text()) if out.exists() else None


def kinds(result: dict | None, severity: str | None = None) -> set[tuple[str, str]]:
    """``{(kind, subject)}`` of the result's findings (of ``severity``)."""
    return {
        (f["kind"], f["subject"])
        for f in (result or {}).get("findings", [])
        if severity is None or f["severity"] == severity
    }


# ---- the checks on small inputs ------------------------------------------------------------


@pytest.mark.parametrize(
    "link_half_width, payload_half_width, warned",
    [
        (0.1255, 0.03, True),
        (0.05, 0.03, True),
        (0.04, 0.03, False),
        (0.1255, 0.1, False),
        (0.03, 0.06, True),
        (0.03, 0.04, False),
        (None, 0.03, False),
    ],
)  # None: a result without a filter (a simulator's truth) is not judged
def test_a_links_result_with_another_filter_is_warned(
    link_half_width, payload_half_width, warned
) -> None:
    result = (
        {}
        if link_half_width is None
        else {"differentiation": {"half_width_s": link_half_width, "order": 2}}
    )
    findings = plausibility.link_filter_findings(
        result, "links.json", payload_half_width, payload_half_width
    )
    assert plausibility.link_filter_findings(result, "links.json", payload_half_width) == (
        findings if link_half_width is None or link_half_width > payload_half_width else []
    )
    assert [(f.kind, f.subject, f.severity) for f in findings] == (
        [("link_filter", "links.json", WARN)] if warned else []
    )
    if warned:
        assert (
            "fit-links --filter-half-width"
            if link_half_width > payload_half_width
            else "Differentiate with the links' filter"
        ) in findings[0].message


def test_free_fall_refused_unless_declared() -> None:
    (finding,) = plausibility.free_fall_finding("floating", ["internal", "internal"], False)
    assert finding.severity == REFUSE and "--free-fall" in finding.message
    assert plausibility.free_fall_finding("floating", ["internal"], True) == []
    assert plausibility.free_fall_finding("floating", ["internal", "contact"], False) == []
    assert plausibility.free_fall_finding("fixed", ["internal"], False) == []


def test_volume_com_outside_and_mass_spread() -> None:
    sphere = bounding.payload_volume(radius=0.5)
    near = theta_from_inertia(1.0, [0.0, 0.0, 0.1], np.eye(3) * 1e-3)
    assert bounding.volume_findings("payload", near, sphere) == []
    far = theta_from_inertia(0.12, [0.0, 0.3, 1.05], np.eye(3) * 1e-4)
    (finding,) = bounding.volume_findings("payload", far, sphere)
    assert finding.kind == "bounding_volume" and finding.figures["com_outside"]
    spread = theta_from_inertia(1.0, [0.0, 0.0, 0.0], np.eye(3) * 0.6)  # gyration radius ~1 m
    (finding,) = bounding.volume_findings("payload", spread, sphere)
    assert finding.figures["spread_outside"] and not finding.figures["com_outside"]


def test_link_volumes_from_collision_geometry(tmp_path) -> None:
    """The Panda's collision meshes: a box about each link, grown by the margin. Every URDF COM
    lies inside; the URDF's inertia of panda_link1 (Ixx 0.70 kg m² for 5 kg, a radius of
    gyration of 0.38 m) does not fit its 0.2 x 0.3 x 0.35 m box. Missing meshes: no volumes."""
    from inertia_id_ros.core.robots import load_model

    urdf = example_robot_urdf("panda")
    links = [f"panda_link{i}" for i in range(1, 8)]
    volumes = bounding.link_volumes(urdf, links)
    assert set(volumes) == set(links)
    model = load_model(urdf)
    for name in links:
        joint = model.frames[model.getFrameId(name)].parentJoint
        theta = model.inertias[joint].toDynamicParameters()
        assert np.all(volumes[name].half_extents > LINK_VOLUME_MARGIN)
        findings = bounding.volume_findings(name, theta, volumes[name])
        assert not any(f.figures["com_outside"] for f in findings), name
        if name == "panda_link1":
            assert findings and findings[0].figures["spread_outside"]
    moved = tmp_path / "panda.urdf"  # the package:// meshes cannot be found from here
    moved.write_text(Path(urdf).read_text())
    assert bounding.link_volumes(moved, links) == {}


def test_pinned_masses_and_tilt() -> None:
    findings = plausibility.pinned_mass_findings(
        ["a", "b", "c"], np.array([1e-6, 1.0, 0.0]), np.array([2.0, 1.1, 0.0])
    )
    assert [(f.kind, f.subject) for f in findings] == [("pinned_mass", "a")]
    assert plausibility.tilt_finding(0.01, 0.02) == []
    (tilt,) = plausibility.tilt_finding(np.radians(4.0), 0.0)
    assert tilt.kind == "base_tilt" and tilt.figures["angle_deg"] == pytest.approx(4.0)


# ---- payload (simulated Panda) ----------------------------------------------------------


@pytest.fixture(scope="module")
def payload(tmp_path_factory) -> dict:
    """6 s at 200 Hz of the simulated Panda's payload; the arrays, a writer with mistakes."""
    sim = PayloadSimulator.panda(seed=2, offset=np.array([20.0, -15.0, 12.0, 0.5, -0.4, 0.2]))
    t = np.arange(1200) / 200.0
    q, dq, wrench = sim.measure(t, np.random.default_rng(0))
    directory = tmp_path_factory.mktemp("payload")

    def write(
        name: str, sign: float = 1.0, time_scale: float = 1.0, angle_scale: float = 1.0
    ) -> str:
        path = directory / f"{name}.npz"
        np.savez(
            path,
            t=t * time_scale,
            joint_names=np.array(PANDA_ARM),
            q=q * angle_scale,
            dq=dq * angle_scale,
            wrench=sign * wrench,
            wrench_frame=SENSOR,
        )
        return str(path)

    return {"write": write, "urdf": str(example_robot_urdf("panda"))}


def fit_payload(payload: dict, data: str, *extra: str) -> list[str]:
    return [
        "fit-payload",
        "--urdf",
        payload["urdf"],
        "--sensor-frame",
        SENSOR,
        "--data",
        data,
        *extra,
    ]


def test_payload_undisturbed_passes(capsys, tmp_path, payload) -> None:
    code, err, result = run_cli(capsys, tmp_path, *fit_payload(payload, payload["write"]("ok")))
    assert code == 0, err
    assert result["findings"] == [] and result["refused"] is False
    assert max(r["ratio"] for r in result["residual_ratios"].values()) < 1.1
    assert result["identifiability"]["rank"] == 16  # 10 inertial + 6 offset parameters


@pytest.mark.parametrize(
    "mistake, extra, kind, words",
    [
        ({"sign": -1.0}, (), "residual_ratio", "sign"),
        ({}, ("--no-offset",), "residual_ratio", "drop --no-offset"),
        ({"angle_scale": np.degrees(1.0)}, (), "degrees", "Degrees?"),
        ({"time_scale": 1e3}, (), "time_units", "Milliseconds?"),
    ],
)
def test_payload_mistakes_refused(capsys, tmp_path, payload, mistake, extra, kind, words) -> None:
    data = payload["write"]("mistake", **mistake)
    code, err, result = run_cli(capsys, tmp_path, *fit_payload(payload, data, *extra))
    assert code == EXIT_IMPLAUSIBLE
    assert kind in {k for k, _ in kinds(result, REFUSE)}, err
    assert words in err and "refused" in err and result["refused"] is True


def test_payload_volume_and_bounding_ellipsoid(capsys, tmp_path, payload) -> None:
    """A box smaller than the payload's COM distance warns; --bounding-ellipsoid keeps the fit
    inside the sphere (the COM of the sign-flipped fit comes back from 0.3 m)."""
    ok = payload["write"]("box")
    code, err, result = run_cli(
        capsys, tmp_path, *fit_payload(payload, ok, "--payload-box", "0.01,0.01,0.01")
    )
    assert code == 0 and ("bounding_volume", "payload") in kinds(result, WARN), err
    flipped = payload["write"]("flipped", sign=-1.0)
    _, _, free = run_cli(capsys, tmp_path, *fit_payload(payload, flipped))
    _, _, bounded = run_cli(
        capsys,
        tmp_path,
        *fit_payload(payload, flipped, "--bounding-ellipsoid", "--payload-sphere", "0.1"),
    )
    assert np.linalg.norm(free["bodies"][0]["com"]) > 0.1
    assert np.linalg.norm(bounded["bodies"][0]["com"]) <= 0.1 + 1e-6


def test_validate_yardsticks_fit_the_urdf_offset(capsys, tmp_path, payload) -> None:
    """validate: the URDF with its F/T offset fitted beats the URDF with none (the sensor reads
    28 N of offset) and is the yardstick printed; OLS is the second."""
    data = payload["write"]("validate")
    code, err, _ = run_cli(capsys, tmp_path, *fit_payload(payload, data))
    assert code == 0, err
    out = tmp_path / "validation.json"
    assert (
        cli.main(
            [
                "validate",
                str(tmp_path / "result.json"),
                "--data",
                data,
                "--urdf",
                payload["urdf"],
                "--train",
                data,
                "--json",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    errors = json.loads(out.read_text())
    assert list(errors) == ["fit", "urdf", "urdf_offsets", "ols"]
    assert errors["fit"]["rms"] < errors["urdf_offsets"]["rms"] < 0.5 * errors["urdf"]["rms"]
    ratio = errors["fit"]["rms"] / errors["urdf_offsets"]["rms"]
    assert f"fit / URDF with its offsets fitted (the fair yardstick): {ratio:.3f}" in printed
    assert "fit / unconstrained least squares: 1.0" in printed


def test_validate_names_milliseconds(capsys, tmp_path, payload) -> None:
    code, err, _ = run_cli(capsys, tmp_path, *fit_payload(payload, payload["write"]("fit")))
    assert code == 0, err
    held_out = payload["write"]("ms", time_scale=1e3)
    assert (
        cli.main(
            [
                "validate",
                str(tmp_path / "result.json"),
                "--data",
                held_out,
                "--urdf",
                payload["urdf"],
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "Milliseconds?" in err and err.count("\n") == 1


def test_bounding_ellipsoid_refused_with_manifold(capsys, tmp_path, payload) -> None:
    code, err, _ = run_cli(
        capsys,
        tmp_path,
        *fit_payload(
            payload, payload["write"]("manifold"), "--method", "manifold", "--bounding-ellipsoid"
        ),
    )
    assert code == 2 and "--bounding-ellipsoid needs --method lmi" in err
    assert err.count("\n") == 1


# ---- links (real KUKA LWR4+) ---------------------------------------------------------------


def kuka_npz(
    tmp_path: Path,
    sign_joint: int | None = None,
    time_scale: float = 1.0,
    angle_scale: float = 1.0,
    step: int = 20,
) -> str:
    run = np.load(shared_data("kuka_lwr4") / "measurements_1.npz")
    effort = run["torques"][::step].copy()
    if sign_joint is not None:
        effort[:, sign_joint] *= -1.0
    path = tmp_path / "kuka.npz"
    np.savez(
        path,
        t=run["times"][::step] * time_scale,
        joint_names=np.array(KUKA_JOINTS),
        q=run["positions"][::step] * angle_scale,
        dq=run["velocities"][::step] * angle_scale,
        ddq=run["accelerations"][::step] * angle_scale,
        effort=effort,
    )
    return str(path)


def fit_links(data: str) -> list[str]:
    """fit-links with the choices given (no selection: fast)."""
    return [
        "fit-links",
        "--urdf",
        str(shared_data("kuka_lwr4") / "kuka_lwr4.urdf"),
        "--data",
        data,
        "--prior-weight",
        "1e-3",
        "--coulomb-velocity",
        "0.05",
        "--torque-delay",
        "0",
    ]


def test_kuka_undisturbed_passes(capsys, tmp_path) -> None:
    code, err, result = run_cli(capsys, tmp_path, *fit_links(kuka_npz(tmp_path)))
    assert code == 0, err
    assert not kinds(result, REFUSE)
    assert result["identifiability"]["rank"] < result["identifiability"]["n_params"]


@pytest.mark.parametrize(
    "mistake, kind, subject, words",
    [
        ({"sign_joint": 1}, "urdf_sign", "joint 'lwr_1_joint'", "Sign?"),
        ({"sign_joint": 3}, "urdf_sign", "joint 'lwr_3_joint'", "Sign?"),
        ({"angle_scale": np.degrees(1.0)}, "degrees", None, "Degrees?"),
        ({"time_scale": 1e3}, "time_units", "joint state stamps", "Milliseconds?"),
    ],
)
def test_kuka_mistakes_refused(capsys, tmp_path, mistake, kind, subject, words) -> None:
    code, err, result = run_cli(capsys, tmp_path, *fit_links(kuka_npz(tmp_path, **mistake)))
    assert code == EXIT_IMPLAUSIBLE
    refused = kinds(result, REFUSE)
    assert kind in {k for k, _ in refused}, err
    if subject is not None:
        assert (kind, subject) in refused
    assert words in err


# ---- whole body (simulated iCub) -----------------------------------------------------------


@pytest.fixture(scope="module")
def icub_recording(tmp_path_factory) -> dict:
    from inertia_id_ros.sim.whole_body_robots import icub

    return icub(seed=1).record(1.0, 200.0)


def icub_npz(
    tmp_path: Path, data: dict, flip: tuple[str, ...] = (), drop_contact: bool = False
) -> str:
    data = dict(data)
    frames = list(data["ft_frames"])
    wrench = data["ft_wrench"].copy()
    for frame in flip:
        wrench[:, frames.index(frame)] *= -1.0
    data["ft_wrench"] = wrench
    if drop_contact:
        keep = [k for k, kind in enumerate(data["ft_types"]) if kind != "contact"]
        data.update(
            ft_frames=data["ft_frames"][keep],
            ft_types=data["ft_types"][keep],
            ft_wrench=wrench[:, keep],
        )
    path = tmp_path / "icub.npz"
    np.savez(path, **data)
    return str(path)


def fit_whole_body(data: str, *extra: str) -> list[str]:
    return ["fit-whole-body", "--urdf", str(example_robot_urdf("icub")), "--data", data, *extra]


def test_icub_forgotten_sign_flips_refused_naming_the_sensors(
    capsys, tmp_path, icub_recording
) -> None:
    flipped = icub_npz(tmp_path, icub_recording, flip=ICUB_LEGS)
    code, err, result = run_cli(capsys, tmp_path, *fit_whole_body(flipped))
    assert code == EXIT_IMPLAUSIBLE
    signs = {subject for kind, subject in kinds(result, REFUSE) if kind == "urdf_sign"}
    assert signs and all(any(leg in s for leg in ICUB_LEGS) for s in signs), signs
    assert "--flip-wrench-sign" in err
    pinned = [b for b in result["bodies"] if "pinned" in b["identifiability"]]
    assert pinned and all(b["identifiability"] != "identified" for b in pinned)
    code, err, result = run_cli(
        capsys,
        tmp_path,
        *fit_whole_body(
            flipped, *[item for leg in ICUB_LEGS for item in ("--flip-wrench-sign", leg)]
        ),
    )
    assert code == 0, err
    assert not {k for k, _ in kinds(result)} & {"urdf_sign", "residual_ratio"}


def test_icub_without_contact_sensor_refused_unless_free_fall(
    capsys, tmp_path, icub_recording
) -> None:
    data = icub_npz(tmp_path, icub_recording, drop_contact=True)
    code, err, result = run_cli(capsys, tmp_path, *fit_whole_body(data))
    assert code == EXIT_IMPLAUSIBLE and kinds(result) == {("free_fall", "base")}
    assert "free fall" in err and "--free-fall" in err
    code, err, result = run_cli(capsys, tmp_path, *fit_whole_body(data, "--free-fall"))
    assert ("free_fall", "base") not in kinds(result)
    # the robot stood on its sole: declared in free fall, its base rows cannot be explained
    assert code == EXIT_IMPLAUSIBLE and "residual_ratio" in {k for k, _ in kinds(result)}


def test_icub_bounding_ellipsoid_keeps_every_link_inside(capsys, tmp_path, icub_recording) -> None:
    """--bounding-ellipsoid: every link whose grown collision box holds its URDF inertial
    satisfies tr(J Q) >= 0 for the ellipsoid around the box (unconstrained, some do not), at
    little cost in residual."""
    import pinocchio as pin

    urdf = example_robot_urdf("icub")
    data = icub_npz(tmp_path, icub_recording)
    results = {}
    for extra in ((), ("--bounding-ellipsoid",)):
        code, err, results[extra] = run_cli(capsys, tmp_path, *fit_whole_body(data, *extra))
        assert code == 0, err
    from inertia_id_ros.sim.urdf_inertials import link_inertials

    volumes = bounding.volumes_holding(
        bounding.link_volumes(urdf, [b["name"] for b in results[()]["bodies"]]),
        link_inertials(Path(urdf).read_text()),
    )
    assert len(volumes) > 15

    def violations(result: dict) -> list[str]:
        return [
            b["name"]
            for b in result["bodies"]
            if b["name"] in volumes
            and np.trace(
                pin.Inertia.FromDynamicParameters(np.array(b["theta"])).toPseudoInertia().toMatrix()
                @ volumes[b["name"]].ellipsoid_matrix()
            )
            < -1e-9
        ]

    assert violations(results[()])
    assert violations(results[("--bounding-ellipsoid",)]) == []
    assert results[("--bounding-ellipsoid",)]["residual_rms"] < 1.01 * results[()]["residual_rms"]


def test_links_bounding_ellipsoid_keeps_the_links_inside(capsys, tmp_path) -> None:
    """fit-links --bounding-ellipsoid on the simulated Panda arm (links 10-20 % off the URDF's):
    every link whose collision box holds its URDF inertial ends inside the box's ellipsoid."""
    import pinocchio as pin

    from helpers.panda_arm import panda_truth_model
    from inertia_id_ros.core.robots import load_model

    urdf = example_robot_urdf("panda")
    truth = panda_truth_model()
    t = np.arange(800) / 100.0
    trajectory = ExcitingTrajectory.for_model(
        truth, PANDA_ARM, period=8.0, seed=3, position_fraction=0.6, velocity_fraction=0.6
    )
    q, dq, ddq = trajectory(t)
    data = truth.createData()
    effort = np.array([pin.rnea(truth, data, *x) for x in zip(q, dq, ddq)])
    effort += np.random.default_rng(0).normal(0.0, 0.05, effort.shape)
    path = tmp_path / "panda.npz"
    np.savez(path, t=t, joint_names=np.array(PANDA_ARM), q=q, dq=dq, ddq=ddq, effort=effort)
    code, err, result = run_cli(
        capsys,
        tmp_path,
        "fit-links",
        "--urdf",
        str(urdf),
        "--data",
        str(path),
        "--prior-weight",
        "1e-3",
        "--coulomb-velocity",
        "0.05",
        "--torque-delay",
        "0",
        "--no-tilt",
        "--bounding-ellipsoid",
    )
    assert code == 0, err
    model = load_model(urdf)
    priors = {
        name: model.inertias[model.frames[model.getFrameId(name)].parentJoint].toDynamicParameters()
        for name in (b["name"] for b in result["bodies"])
    }
    volumes = bounding.volumes_holding(bounding.link_volumes(urdf, list(priors)), priors)
    assert len(volumes) >= 3
    for body in result["bodies"]:
        if body["name"] in volumes:
            pseudo = pin.Inertia.FromDynamicParameters(np.array(body["theta"])).toPseudoInertia()
            assert (
                np.trace(pseudo.toMatrix() @ volumes[body["name"]].ellipsoid_matrix()) >= -1e-9
            ), body["name"]
    assert not kinds(result, REFUSE)
