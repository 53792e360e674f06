"""The fit-payload job called from Python (:func:`inertia_id_ros.jobs.fit_payload.fit_payload`):
a LogSource and options in, the typed estimate, its findings and the result JSON out."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.errors import CallerError, InputError
from inertia_id_ros.findings import NOTE, REFUSE, WARN
from inertia_id_ros.formats.source import LogSource
from inertia_id_ros.jobs.fit_payload import FitPayloadOptions, PayloadFit, fit_payload
from inertia_id_ros.sim.payload import PayloadSimulator

PANDA_ARM = tuple(f"panda_joint{i}" for i in range(1, 8))
SENSOR = "panda_link8"
URDF = str(example_robot_urdf("panda"))


@pytest.fixture(scope="module")
def sim() -> PayloadSimulator:
    return PayloadSimulator.panda(seed=2, offset=np.array([20.0, -15.0, 12.0, 0.5, -0.4, 0.2]))


@pytest.fixture(scope="module")
def recorded(sim, tmp_path_factory) -> dict[str, str]:
    """8 s at 200 Hz of the simulated Panda's payload, as recorded (``plain``), with the
    opposite sign (``flipped``) and with stamps in ms (``ms``): NPZ paths."""
    t = np.arange(1600) / 200.0
    q, dq, wrench = sim.measure(t, np.random.default_rng(0))
    directory = tmp_path_factory.mktemp("payload")
    paths = {}
    for name, sign, time_scale in (("plain", 1.0, 1.0), ("flipped", -1.0, 1.0), ("ms", 1.0, 1e3)):
        paths[name] = str(directory / f"{name}.npz")
        np.savez(
            paths[name],
            t=t * time_scale,
            joint_names=np.array(PANDA_ARM),
            q=q,
            dq=dq,
            wrench=sign * wrench,
            wrench_frame=SENSOR,
        )
    return paths


def test_the_payload_with_its_findings_and_document(sim, recorded) -> None:
    result = fit_payload(URDF, SENSOR, LogSource(data=recorded["plain"]))
    assert isinstance(result, PayloadFit) and not result.refused
    estimate = result.estimate
    assert estimate is not None
    assert estimate.mass == pytest.approx(sim.true_theta[0], rel=0.02)
    np.testing.assert_allclose(estimate.sensor_offset[:3], [20.0, -15.0, 12.0], atol=0.1)
    assert list(result.document) == [
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
    body = result.document["bodies"][0]
    assert (body["name"], body["frame"]) == ("payload", SENSOR)
    assert body["mass"] == estimate.mass and result.document["refused"] is False
    assert result.document["findings"] == [f.as_json() for f in result.findings]
    assert result.summary[0].startswith(f"fit-payload (lmi): {estimate.n_samples} wrench samples")
    assert any(line.startswith("  F/T offset [") for line in result.summary)
    assert result.validation is None


def test_options_change_the_fit(sim, recorded) -> None:
    """No offset: none in the summary, zeros in the JSON; a CAD prior (a URDF link's) named in
    the summary."""
    options = FitPayloadOptions(method="ols", estimate_offset=False, weighting="none")
    result = fit_payload(URDF, SENSOR, LogSource(data=recorded["plain"]), options)
    assert result.document["method"] == "ols" and result.document["sensor_offset"] == [0.0] * 6
    assert not any("F/T offset" in line for line in result.summary)
    options = FitPayloadOptions(method="cad_prior", prior_link="panda_hand")
    result = fit_payload(URDF, SENSOR, LogSource(data=recorded["plain"]), options)
    assert result.document["method"] == "cad_prior"
    assert any(line.startswith("  prior 'panda_hand': mass") for line in result.summary)


def test_a_flipped_sign_is_refused_unless_flipped_back(sim, recorded) -> None:
    result = fit_payload(URDF, SENSOR, LogSource(data=recorded["flipped"]))
    assert result.refused and result.estimate is not None and result.document["refused"]
    assert any(f.severity == REFUSE and f.subject.startswith("F/T") for f in result.findings)
    flipped = FitPayloadOptions(flip_wrench_sign=True)
    result = fit_payload(URDF, SENSOR, LogSource(data=recorded["flipped"]), flipped)
    assert not result.refused and result.estimate is not None
    assert result.estimate.mass == pytest.approx(sim.true_theta[0], rel=0.02)


def test_stamps_in_ms_are_refused_before_the_fit(recorded) -> None:
    result = fit_payload(URDF, SENSOR, LogSource(data=recorded["ms"]))
    assert result.refused and result.estimate is None and result.summary == ()
    assert result.document == {
        "findings": [f.as_json() for f in result.findings],
        "refused": True,
    }
    assert {f.kind for f in result.findings} == {"time_units"}
    stated = fit_payload(URDF, SENSOR, LogSource(data=recorded["ms"], time_unit="ms"))
    assert not stated.refused and stated.estimate is not None


def test_a_split_is_validated_on_its_held_out_part(recorded) -> None:
    """The log flags read the file through a description: its notes are findings, the part
    after ``held_out_from`` is not fitted but validated."""
    whole = fit_payload(URDF, SENSOR, LogSource(data=recorded["plain"]))
    result = fit_payload(URDF, SENSOR, LogSource(data=recorded["plain"], held_out_from=6.0))
    assert result.estimate is not None and whole.estimate is not None
    assert result.estimate.n_samples < 0.8 * whole.estimate.n_samples
    assert all(f.kind == "log" for f in result.findings if f.severity == NOTE)
    assert result.validation is not None
    assert set(result.validation.estimate) >= {"fit", "urdf", "ols"}
    assert "(held out)" in result.validation.summary[0]
    validated = FitPayloadOptions(validate=recorded["plain"])
    result = fit_payload(URDF, SENSOR, LogSource(data=recorded["plain"]), validated)
    assert result.validation is not None and recorded["plain"] in result.validation.summary[0]


@pytest.mark.parametrize(
    "options, message",
    [
        (FitPayloadOptions(prior="x.json", prior_link="panda_hand"), "not both"),
        (FitPayloadOptions(prior_urdf=URDF), "--prior-urdf needs --prior-link"),
        (FitPayloadOptions(method="cad_prior"), "needs the payload's CAD values"),
        (FitPayloadOptions(method="manifold", bounding_ellipsoid=True), "manifold cannot"),
        (FitPayloadOptions(payload_sphere=-1.0), "--payload-sphere must be > 0 m"),
        (FitPayloadOptions(payload_box=(0.1, 0.2)), "--payload-box must be three"),
        (FitPayloadOptions(window_sec=0.01), "no estimate: .* wrench samples in the window"),
    ],
)
def test_the_callers_mistakes_are_input_errors(recorded, options, message) -> None:
    with pytest.raises(InputError, match=message):
        fit_payload(URDF, SENSOR, LogSource(data=recorded["plain"]), options)


def test_a_wrong_sensor_frame_or_topic_is_an_input_error(recorded) -> None:
    with pytest.raises(CallerError, match="frame 'nope' is not in the model"):
        fit_payload(URDF, "nope", LogSource(data=recorded["plain"]))
    with pytest.raises(InputError, match="--wrench-topic only apply to --bag"):
        fit_payload(URDF, SENSOR, LogSource(data=recorded["plain"], wrench_topic="/w"))


def test_warnings_found_before_an_error_travel_with_it(recorded) -> None:
    """Radians read as degrees: the warning that says so comes with the error it causes (no
    estimate: the motion seems too small), for the caller to report first."""
    with pytest.raises(InputError, match="no estimate") as raised:
        fit_payload(URDF, SENSOR, LogSource(data=recorded["plain"], angle_unit="deg"))
    assert [f.severity for f in raised.value.findings] == [WARN]
    assert "read as degrees" in raised.value.findings[0].message


def test_a_negative_least_squares_mass_gets_the_sign_diagnosis(recorded) -> None:
    options = FitPayloadOptions(method="ols")
    result = fit_payload(URDF, SENSOR, LogSource(data=recorded["flipped"]), options)
    assert result.estimate is not None and result.estimate.mass < 0
    (negative,) = [f for f in result.findings if f.kind == "negative_mass"]
    assert negative.severity == WARN and "sign" in negative.message and negative.fix
    plain = fit_payload(URDF, SENSOR, LogSource(data=recorded["plain"]), options)
    assert not any(f.kind == "negative_mass" for f in plain.findings)
