"""The fit-payload-torques job called from Python: a LogSource, the frame and options in, the
payload's fit, its findings, the result JSON and the summary out, by each route (differencing,
a fit-links result, the URDF's links); refusals and bad options."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from inertia_id_ros.chain.payload_from_torques import PayloadTorqueFit
from inertia_id_ros.core.inertia import inertia_from_theta
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.errors import InputError
from inertia_id_ros.findings import REFUSE, WARN, Finding
from inertia_id_ros.formats.source import LogSource
from inertia_id_ros.jobs.fit_links import FitLinksOptions, fit_links
from inertia_id_ros.jobs.fit_payload_torques import (
    FitPayloadTorquesOptions,
    fit_payload_torques,
)

PANDA_ARM = tuple(f"panda_joint{i}" for i in range(1, 8))
FRAME = "panda_link8"


@pytest.fixture(scope="module")
def panda_urdf() -> str:
    return str(example_robot_urdf("panda"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(runs, unloaded NPZ, loaded NPZ): the simulated Panda replaying one motion without and
    with a payload at the flange, 12 s at 200 Hz each."""
    from inertia_id_ros.sim.torques import panda_payload_torque_runs

    runs = panda_payload_torque_runs(duration=12.0, rate=200.0, seed=2)
    directory = tmp_path_factory.mktemp("runs")
    paths = []
    for name, run in (("unloaded", runs.unloaded), ("loaded", runs.loaded)):
        paths.append(directory / f"{name}.npz")
        np.savez(
            paths[-1],
            t=run.t,
            joint_names=np.array(PANDA_ARM),
            q=run.q,
            dq=run.dq,
            effort=run.effort,
        )
    return runs, paths[0], paths[1]


def assert_payload(result, truth: np.ndarray) -> None:
    """The fit within 1 % of the true mass and 5 mm of its COM; the JSON's body is the fit's."""
    assert isinstance(result.estimate, PayloadTorqueFit) and not result.refused
    mass, com, _ = inertia_from_theta(result.estimate.theta)
    true_mass, true_com, _ = inertia_from_theta(truth)
    assert mass == pytest.approx(true_mass, rel=0.01)
    assert np.linalg.norm(com - true_com) < 5e-3
    (body,) = result.document["bodies"]
    assert body["frame"] == FRAME and body["theta"] == result.estimate.theta.tolist()
    assert result.document["rank"] == result.document["n_parameters"] == 17


def test_differencing_a_loaded_and_an_unloaded_run(panda_urdf: str, runs) -> None:
    truth, unloaded, loaded = runs[0].payload_theta, runs[1], runs[2]
    options = FitPayloadTorquesOptions(unloaded=str(unloaded))
    result = fit_payload_torques(panda_urdf, LogSource(data=str(loaded)), FRAME, options)
    assert_payload(result, truth)
    assert result.alignment is not None and result.alignment.shift == pytest.approx(0.0, abs=1e-9)
    assert result.document["alignment"]["shift_s"] == result.alignment.shift
    assert result.document["link_model"] == "difference of a loaded and an unloaded run"
    assert result.document["findings"] == []  # inside the default sphere
    assert [f.kind for f in result.findings] == ["runtime_warning"] * len(result.estimate.warnings)
    assert not any("mass is poorly determined" in f.message for f in result.findings)
    assert "filter ±0.03 s, the payload's default (not cross-validated" in result.summary[1]
    assert "unloaded run matched with a time shift of +0.000 s" in result.summary[2]


def test_a_fit_links_result_as_the_link_model(panda_urdf: str, runs, tmp_path: Path) -> None:
    """The links fitted to the unloaded run (the fit-links job's JSON) subtracted from the
    loaded run's torques, the data differentiated with the links' filter."""
    truth, unloaded, loaded = runs[0].payload_theta, runs[1], runs[2]
    links_options = FitLinksOptions(
        prior_weight=1e-6,
        coulomb_velocity=0.02,
        filter_half_width=0.03,
        torque_delay=0.0,
        estimate_tilt=False,
    )
    links = fit_links(panda_urdf, LogSource(data=str(unloaded)), links_options)
    path = tmp_path / "links.json"
    path.write_text(json.dumps(links.document))
    options = FitPayloadTorquesOptions(links_result=str(path))
    result = fit_payload_torques(panda_urdf, LogSource(data=str(loaded)), FRAME, options)
    assert_payload(result, truth)
    assert result.alignment is None and result.document["alignment"] is None
    assert result.document["link_model"] == f"fit-links result {path}"
    assert result.document["differentiation"]["half_width_s"] == 0.03
    assert "filter ±0.03 s, the links' fit's (its differentiation)" in result.summary[1]


def test_the_urdfs_links_are_flagged_and_warnings_are_findings(panda_urdf: str, runs) -> None:
    """The URDF's links (10 % off the truth, no friction): the summary says to prefer a
    fit-links result or differencing; each of the fit's warnings is a runtime_warning finding
    (printed), not a JSON finding (the JSON's "warnings" has them)."""
    result = fit_payload_torques(panda_urdf, LogSource(data=str(runs[2])), FRAME)
    assert result.estimate is not None
    assert result.document["link_model"] == "the URDF's links (no friction)"
    assert "prefer --links-result" in result.summary[-1]
    assert result.estimate.warnings  # the URDF's error shows as a poorly determined payload
    assert list(result.findings) == [
        Finding("runtime_warning", "", WARN, message) for message in result.estimate.warnings
    ]
    assert result.document["warnings"] == list(result.estimate.warnings)
    assert result.document["findings"] == []


def test_stamps_in_milliseconds_are_refused(panda_urdf: str, runs, tmp_path: Path) -> None:
    content = dict(np.load(runs[2]))
    content["t"] = content["t"] * 1e3
    path = tmp_path / "ms.npz"
    np.savez(path, **content)
    result = fit_payload_torques(panda_urdf, LogSource(data=str(path)), FRAME)
    assert result.estimate is None and result.refused and result.summary == ()
    assert [(f.kind, f.severity) for f in result.findings] == [("time_units", REFUSE)]
    assert result.document == {"findings": [result.findings[0].as_json()], "refused": True}


@pytest.mark.parametrize(
    "options,message",
    [
        ({"payload_sphere": -1.0}, "--payload-sphere must be > 0 m, got -1.0"),
        ({"payload_box": (1.0, 2.0)}, "--payload-box must be three half-extents > 0 m, got 1,2"),
        ({"method": "manifold", "bounding_ellipsoid": True}, "manifold cannot take bounding"),
        ({"links_result": "a.json", "unloaded": "b.npz"}, "links_result or unloaded, not both"),
    ],
)
def test_options_are_checked(options: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        FitPayloadTorquesOptions(**options)


@pytest.mark.parametrize(
    "source,options,message",
    [
        ({"held_out_from": 5.0}, {}, "--held-out-from does not apply to fit-payload-torques"),
        (
            {"input": "log.yaml"},
            {"unloaded": "b.npz"},
            "with --input, give the unloaded run as an input description",
        ),
    ],
)
def test_what_does_not_apply_is_refused(
    panda_urdf: str, runs, tmp_path: Path, source: dict, options: dict, message: str
) -> None:
    """A held-out split (no validation here); an unloaded run beside an input description (it
    describes the loaded run only)."""
    if "input" in source:
        description = tmp_path / "log.yaml"
        description.write_text(
            f"streams:\n  log: {{file: {runs[2]}, time: t, time_unit: s}}\n"
            f"joints:\n  names: {list(PANDA_ARM)}\n  position: {{key: q, unit: rad}}\n"
            "  velocity: {key: dq, unit: rad}\n  effort: {key: effort, unit: N·m}\n"
        )
        source = {"input": str(description)}
    else:
        source = {"data": str(runs[2]), **source}
    with pytest.raises(InputError, match=message):
        fit_payload_torques(
            panda_urdf, LogSource(**source), FRAME, FitPayloadTorquesOptions(**options)
        )


def _flipped(path: Path, joint: int, directory: Path) -> Path:
    """The NPZ at ``path`` with joint ``joint``'s efforts of the other sign."""
    content = dict(np.load(path))
    content["effort"] = content["effort"].copy()
    content["effort"][:, joint] *= -1.0
    out = directory / f"flipped_{path.stem}.npz"
    np.savez(out, **content)
    return out


@pytest.mark.parametrize("route", ["differencing", "urdf"])
def test_a_flipped_joint_torque_is_refused_naming_the_joint(
    panda_urdf: str, runs, tmp_path: Path, route: str
) -> None:
    unloaded, loaded = (_flipped(runs[k], 3, tmp_path) for k in (1, 2))
    options = FitPayloadTorquesOptions(unloaded=str(unloaded) if route == "differencing" else None)
    result = fit_payload_torques(panda_urdf, LogSource(data=str(loaded)), FRAME, options)
    assert result.refused
    (sign,) = [f for f in result.findings if f.severity == REFUSE]
    assert sign.subject == "joint 'panda_joint4'" and "sign" in (sign.message + sign.fix).lower()
    assert any(f["kind"] == sign.kind for f in result.document["findings"])
