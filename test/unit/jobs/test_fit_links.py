"""The fit-links job called from Python: a LogSource and options in, the identification, its
findings, the result JSON and the summary out; refusals, the held-out split, a solver's failure."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from inertia_id_ros import cli
from inertia_id_ros.chain.identify import LinkIdentification
from inertia_id_ros.chain.links import torque_error
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.errors import EstimateUnavailable, InputError, SolverError
from inertia_id_ros.findings import REFUSE, WARN, Finding
from inertia_id_ros.formats.source import LogSource
from inertia_id_ros.jobs.fit_links import FitLinksOptions, fit_links

PANDA_ARM = tuple(f"panda_joint{i}" for i in range(1, 8))
FAST = FitLinksOptions(
    prior_weight=1e-6,
    coulomb_velocity=0.02,
    filter_half_width=0.03,
    torque_delay=0.0,
    estimate_tilt=False,
)
"""Every choice given: no cross-validation (a few seconds per fit)."""


@pytest.fixture(scope="module")
def panda_urdf() -> str:
    return str(example_robot_urdf("panda"))


@pytest.fixture(scope="module")
def arm_npz(tmp_path_factory) -> Path:
    """10 s at 200 Hz of the simulated Panda without a payload (links 10 % off the URDF's,
    friction, offsets, noisy torques), as an arm logs it."""
    from inertia_id_ros.sim.torques import panda_payload_torque_runs

    run = panda_payload_torque_runs(duration=10.0, rate=200.0, seed=2).unloaded
    path = tmp_path_factory.mktemp("arm") / "arm.npz"
    np.savez(path, t=run.t, joint_names=np.array(PANDA_ARM), q=run.q, dq=run.dq, effort=run.effort)
    return path


def test_fit_links_returns_the_identification_its_json_and_summary(
    panda_urdf: str, arm_npz: Path
) -> None:
    result = fit_links(panda_urdf, LogSource(data=str(arm_npz)), FAST)
    assert isinstance(result.estimate, LinkIdentification)
    assert not result.refused and result.validation is None and result.validation_error is None
    fit = result.estimate.fit
    assert fit.fully_consistent and result.estimate.model.joint_names == PANDA_ARM
    document = result.document
    assert list(document)[:7] == [
        "mode",
        "method",
        "bodies",
        "joints",
        "residual_rms",
        "samples",
        "solve_time_s",
    ]
    assert list(document)[-5:] == [
        "residual_ratios",
        "urdf_gains",
        "identifiability",
        "findings",
        "refused",
    ]
    assert [body["name"] for body in document["bodies"]] == [f"panda_link{i}" for i in range(1, 8)]
    np.testing.assert_allclose(
        [body["theta"] for body in document["bodies"]], fit.link_parameters, atol=0
    )
    assert [joint["name"] for joint in document["joints"]] == list(PANDA_ARM)
    assert document["samples"] == result.estimate.data.n_samples
    model, data = result.estimate.model, result.estimate.data
    assert document["residual_rms"] == torque_error(model, fit.x, data).overall
    assert document["residual_rms"] < 0.3 * torque_error(model, model.prior, data).overall
    assert document["prior_weight"] == 1e-6 and document["torque_delay"]["delay_s"] == 0.0
    assert document["findings"] == [f.as_json() for f in result.findings]
    assert result.summary[0].startswith(
        f"fit-links (lmi, prior weight 1e-06): {document['samples']} samples of 7 joints "
        f"from {arm_npz}; solver"
    )
    assert result.summary[-1].startswith("joint torque rms")


def test_fit_links_refuses_stamps_in_milliseconds(
    panda_urdf: str, arm_npz: Path, tmp_path: Path
) -> None:
    """Stamps in ms read as s: refused before any fit; the JSON holds the findings alone; the
    same data with time_unit="ms" fit."""
    content = dict(np.load(arm_npz))
    content["t"] = content["t"] * 1e3
    path = tmp_path / "ms.npz"
    np.savez(path, **content)
    result = fit_links(panda_urdf, LogSource(data=str(path)), FAST)
    assert result.estimate is None and result.refused and result.summary == ()
    assert [(f.kind, f.severity) for f in result.findings] == [("time_units", REFUSE)]
    assert result.document == {"findings": [result.findings[0].as_json()], "refused": True}
    converted = fit_links(panda_urdf, LogSource(data=str(path), time_unit="ms"), FAST)
    assert converted.estimate is not None and not converted.refused


def test_fit_links_validates_on_the_held_out_split(panda_urdf: str, arm_npz: Path) -> None:
    """held_out_from splits the log: the fit on the part before, its validation on the rest;
    with validation_data as well, the fit stands and the validation is refused."""
    split = LogSource(data=str(arm_npz), held_out_from=7.0)
    result = fit_links(panda_urdf, split, FAST)
    assert result.validation is not None and result.validation_error is None
    errors = result.validation.estimate
    assert errors is not None and {"fit", "urdf", "ols"} <= set(errors)
    assert "(held out)" in result.validation.summary[0]
    assert result.document["samples"] < 0.75 * 2000
    both = fit_links(panda_urdf, split, FitLinksOptions(**{**vars(FAST), "validation_data": "x"}))
    assert both.estimate is not None and both.validation is None
    assert isinstance(both.validation_error, InputError)
    assert "give --validate or the split, not both" in str(both.validation_error)


@pytest.mark.parametrize(
    "options,message",
    [
        ({"prior_weight": -1.0}, "--prior-weight must be >= 0, got -1.0"),
        ({"coulomb_velocity": -0.1}, "--coulomb-velocity must be >= 0 rad/s, got -0.1"),
        ({"method": "manifold", "bounding_ellipsoid": True}, "manifold cannot take bounding"),
    ],
)
def test_fit_links_options_are_checked(options: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        FitLinksOptions(**options)


def test_a_solver_failure_is_no_estimate_and_warnings_are_findings(
    panda_urdf: str, arm_npz: Path, monkeypatch, capsys
) -> None:
    """The library's RuntimeWarnings during the fit become runtime_warning findings (printed,
    not in the JSON); a solver's failure is EstimateUnavailable, exit code 1 on the command
    line."""
    from inertia_id_ros.chain import identify

    fit = identify.identify_links

    def warning_fit(*args, **kwargs):
        warnings.warn("the solver took its last iterate", RuntimeWarning)
        return fit(*args, **kwargs)

    monkeypatch.setattr(identify, "identify_links", warning_fit)
    result = fit_links(panda_urdf, LogSource(data=str(arm_npz)), FAST)
    warning = Finding("runtime_warning", "", WARN, "the solver took its last iterate")
    assert warning in result.findings and warning.as_json() not in result.document["findings"]

    def failing_fit(*args, **kwargs):
        raise SolverError("the back end gave up")

    monkeypatch.setattr(identify, "identify_links", failing_fit)
    with pytest.raises(EstimateUnavailable) as caught:
        fit_links(panda_urdf, LogSource(data=str(arm_npz)), FAST)
    assert caught.value.reason == "solver_failed"
    code = cli.main(["fit-links", "--urdf", panda_urdf, "--data", str(arm_npz)])
    assert code == 1
    assert capsys.readouterr().err == "inertia-id fit-links: no estimate: the back end gave up\n"


def test_an_effectively_planar_log_names_its_still_joints(panda_urdf: str, tmp_path: Path) -> None:
    """The Panda moving joints 2 to 4, the others within their encoder's noise: the summary, the
    findings and the JSON name the still joints; every parameter called identified has
    |t| >= 3."""
    from helpers.planar import STILL, planar_log

    t, recorded, effort = planar_log(panda_urdf)
    path = tmp_path / "planar.npz"
    np.savez(path, t=t, joint_names=np.array(PANDA_ARM), q=recorded, effort=effort)
    options = FitLinksOptions(prior_weight=1e-3, coulomb_velocity=0.02, torque_delay=0.0)
    result = fit_links(panda_urdf, LogSource(data=str(path)), options)
    planar = "effectively planar: joints " + ", ".join(STILL) + " still"
    assert any(line.strip().startswith(planar) for line in result.summary)
    (note,) = [f for f in result.findings if f.kind == "effectively_planar"]
    assert note.message.startswith(planar) and note.fix
    identifiability = result.document["identifiability"]
    assert identifiability["still_joints"] == list(STILL)
    assert identifiability["rank"] < identifiability["rank_counting_noise"]
    determination = identifiability["determination"]
    assert determination["identified"]
    assert all(abs(determination["t"][name]) >= 3 for name in determination["identified"])


def test_a_pointmass_fit_its_points_limit_blames_the_points_not_the_signs(
    panda_urdf: str, arm_npz: Path
) -> None:
    """A links fit far worse than least squares: a sign or scale refused, unless the point
    masses limit it (their solver says so): then a warning naming the points and lmi."""
    from inertia_id_ros.offline.fit_checks import POINTS_LIMIT_CAUSE, links_residual_findings

    identification = fit_links(panda_urdf, LogSource(data=str(arm_npz)), FAST).estimate
    links, data = identification.model, identification.data
    empty = np.zeros_like(identification.fit.x)  # no link, no drive: the torques unexplained
    blamed, _ = links_residual_findings(links, data, empty, 1e-6)
    assert blamed and {f.severity for f in blamed} == {REFUSE}
    assert all("torque sign" in f.message for f in blamed)
    limited, _ = links_residual_findings(links, data, empty, 1e-6, points_limit=True)
    assert [f.subject for f in limited] == [f.subject for f in blamed]
    assert {f.severity for f in limited} == {WARN}
    assert all(POINTS_LIMIT_CAUSE in f.message for f in limited)
