"""The fit-whole-body job called from Python
(:func:`inertia_id_ros.jobs.fit_whole_body.fit_whole_body`): a LogSource and options in, the
typed fit of the links, its findings and the result JSON out."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml

from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.errors import InputError
from inertia_id_ros.findings import NOTE, REFUSE, WARN
from inertia_id_ros.formats.source import LogSource
from inertia_id_ros.jobs.fit_whole_body import (
    WHOLE_BODY_FILTER_CANDIDATES,
    FitWholeBodyOptions,
    WholeBodyFit,
    fit_whole_body,
)

URDF = str(example_robot_urdf("icub"))
FIXED = FitWholeBodyOptions(base="fixed")


@pytest.fixture(scope="module")
def recordings(tmp_path_factory) -> dict[str, dict]:
    """2 s at 200 Hz of the simulated iCub on its sole (``floating``: its sole's contact sensor
    and six internal ones) and on a stand (``fixed``: the internal ones): NPZ keys."""
    from inertia_id_ros.sim.whole_body_robots import icub, icub_fixed

    return {
        "floating": icub(seed=1).record(2.0, 200.0),
        "fixed": icub_fixed(seed=1).record(2.0, 200.0),
    }


def npz(tmp_path: Path, data: dict, drop_contact: bool = False) -> LogSource:
    """``data`` as an NPZ file (without its contact sensors for ``drop_contact``)."""
    data = dict(data)
    if drop_contact:
        keep = [k for k, kind in enumerate(data["ft_types"]) if kind != "contact"]
        data.update(
            ft_frames=data["ft_frames"][keep],
            ft_types=data["ft_types"][keep],
            ft_wrench=data["ft_wrench"][:, keep],
        )
    path = tmp_path / "whole_body.npz"
    np.savez(path, **data)
    return LogSource(data=str(path))


def test_every_link_with_its_held_out_errors(recordings, tmp_path) -> None:
    result = fit_whole_body(
        URDF, npz(tmp_path, recordings["floating"]), FitWholeBodyOptions(holdout=0.3)
    )
    assert isinstance(result, WholeBodyFit) and result.document["mode"] == "whole_body"
    fit, model, document = result.estimate, result.model, result.document
    assert fit is not None and model is not None and result.holdout is not None
    assert model.base == "floating" and fit.thetas.shape == (model.n_bodies, 10)
    assert "l_sole" in [sensor.frame for sensor in model.sensors]
    assert list(document)[-6:] == [
        "still_joints",
        "holdout",
        "urdf_gains",
        "residual_ratios",
        "findings",
        "refused",
    ]
    assert document["holdout"] == {"fraction": 0.3, "rms": result.holdout}
    assert {"base", "l_arm_ft_sensor"} <= set(result.holdout)
    assert document["refused"] == result.refused
    assert document["findings"] == [f.as_json() for f in result.findings]
    masses = {body["name"]: body["mass"] for body in document["bodies"]}
    assert masses["chest"] == pytest.approx(fit.thetas[model.bodies.index("chest"), 0])
    assert result.summary[0].startswith("fit-whole-body (lmi, floating base): ")
    assert any(line.startswith("held-out last 30 %") for line in result.summary)
    assert any(line.startswith("chest ") for line in result.summary)


def test_without_a_contact_sensor_refused_before_the_fit_unless_free_fall(
    recordings, tmp_path
) -> None:
    source = npz(tmp_path, recordings["floating"], drop_contact=True)
    result = fit_whole_body(URDF, source)
    assert result.refused and result.estimate is None and result.summary == ()
    assert [(f.kind, f.severity) for f in result.findings] == [("free_fall", REFUSE)]
    assert result.document == {"findings": [result.findings[0].as_json()], "refused": True}
    falling = fit_whole_body(URDF, source, FitWholeBodyOptions(free_fall=True))
    assert falling.estimate is not None and "free_fall" not in {f.kind for f in falling.findings}


def test_a_fixed_base_tilt_checked_against_the_imu(recordings, tmp_path) -> None:
    """The stand is level: a tilt given, kept (``check``), is warned about; the IMU's
    (``correct``, the default) is used instead, without a warning."""
    source = npz(tmp_path, recordings["fixed"])
    tilted = FitWholeBodyOptions(base="fixed", fixed_tilt=(0.1, 0.0), imu_tilt="check")
    result = fit_whole_body(URDF, source, tilted)
    assert result.model is not None and result.model.base == "fixed"
    assert result.document["fixed_tilt"] == [0.1, 0.0]
    warned = [f for f in result.findings if f.kind == "imu_tilt"]
    assert [f.severity for f in warned] == [WARN]
    assert warned[0].message.startswith("the IMU tilts the URDF root by roll")
    assert any(
        line.startswith("fixed at the URDF root, tilt roll 5.73° pitch 0.00° (given; the IMU")
        for line in result.summary
    )
    corrected = fit_whole_body(URDF, source, FIXED)
    assert "imu_tilt" not in {f.kind for f in corrected.findings}
    assert any(line.endswith("(from the IMU)") for line in corrected.summary)


def test_options_are_checked_when_made() -> None:
    with pytest.raises(InputError, match="--prior-weight must be >= 0"):
        FitWholeBodyOptions(prior_weight=-1.0)
    with pytest.raises(InputError, match="apply to --base fixed"):
        FitWholeBodyOptions(fixed_frame="l_sole")
    with pytest.raises(InputError, match="apply to --base fixed"):
        FitWholeBodyOptions(base="suspended", fixed_tilt=(0.1, 0.0))


@pytest.mark.parametrize(
    "source, options, message",
    [
        ({"bag": "nowhere"}, FitWholeBodyOptions(), "--bag needs --ft TOPIC=KIND"),
        ({}, FitWholeBodyOptions(imu_topic="/imu"), "only apply to --bag"),
        ({"t_end": 1.0}, FitWholeBodyOptions(), "take an --input description"),
        ({}, FitWholeBodyOptions(holdout=1.5), r"--holdout must be in \(0, 1\), got 1.5"),
    ],
)
def test_the_callers_mistakes_are_input_errors(
    recordings, tmp_path, source, options, message
) -> None:
    data = npz(tmp_path, recordings["fixed"])
    flags = {"data": data.data, **source} if "bag" not in source else source
    with pytest.raises(InputError, match=message):
        fit_whole_body(URDF, LogSource(**flags), options)


def describe(tmp_path: Path, data: dict, held: dict[str, float]) -> LogSource:
    """``data`` as an input description of an NPZ log without the ``held`` joints, its F/T
    sensors' signs as recorded, held out from 1.5 s on."""
    names = [str(name) for name in data["joint_names"]]
    logged = [k for k, name in enumerate(names) if name not in held]
    frames = [str(frame) for frame in data["ft_frames"]]
    np.savez(
        tmp_path / "log.npz",
        t=data["t"],
        q=data["q"][:, logged],
        **{f"ft_{frame}": data["ft_wrench"][:, s] for s, frame in enumerate(frames)},
    )
    description = {
        "streams": {"log": {"file": "log.npz", "time": "t", "time_unit": "s"}},
        "joints": {
            "stream": "log",
            "names": [names[k] for k in logged],
            "position": {"key": "q", "unit": "rad"},
            **({"held": held} if held else {}),
        },
        "ft_sensors": [
            {
                "frame": frame,
                "stream": "log",
                "key": f"ft_{frame}",
                "kind": "internal",
                "sign": "keep",
            }
            for frame in frames
        ],
        "held_out_from": 1.5,
    }
    path = tmp_path / "log.yaml"
    path.write_text(yaml.safe_dump(description, sort_keys=False))
    return LogSource(input=str(path))


def test_a_description_sets_the_held_out_part(recordings, tmp_path) -> None:
    """Its ``held_out_from`` sets the held-out fraction (not with ``holdout`` too); its
    loader's notes are findings, beside the filter's choice (cross-validated on the training
    part only)."""
    source = describe(tmp_path, recordings["fixed"], {})
    result = fit_whole_body(URDF, source, FIXED)
    assert result.document["holdout"]["fraction"] == pytest.approx(0.25, abs=0.02)
    notes = [f.kind for f in result.findings if f.severity == NOTE]
    assert "filter_choice" in notes and set(notes) <= {"log", "filter_choice"}
    assert result.document["differentiation"]["half_width"] in WHOLE_BODY_FILTER_CANDIDATES
    with pytest.raises(InputError, match="splits off its own held-out part"):
        fit_whole_body(URDF, source, FitWholeBodyOptions(base="fixed", holdout=0.3))


def test_a_held_joint_that_moves_fitted_rows_is_refused(recordings, tmp_path) -> None:
    """r_elbow not in the log (held) moves what the right arm's sensor measures: an input
    error naming both."""
    source = describe(tmp_path, recordings["fixed"], {"r_elbow": 0.1})
    with pytest.raises(InputError, match=r"r_arm_ft_sensor.*held joint\(s\) \['r_elbow'\]"):
        fit_whole_body(URDF, source, FIXED)


def test_a_floating_base_without_an_imu_names_the_fixed_base_in_the_users_terms(
    recordings, tmp_path
) -> None:
    """No IMU (a stand's NPZ, a description without ``imu``) and the default floating base:
    refused before the fit, naming the IMU and the fixed base rooted at the sole, as flags or as
    the description's key."""
    floating = FitWholeBodyOptions()
    imu = ("imu_frame", "imu_orientation", "imu_angular_velocity", "imu_linear_acceleration")
    stand = {k: v for k, v in recordings["fixed"].items() if k not in imu}
    with pytest.raises(InputError, match=r"needs an IMU .* --base fixed --fixed-frame SOLE") as e:
        fit_whole_body(URDF, npz(tmp_path, stand), floating)
    assert "imu_orientation" in str(e.value)  # the NPZ's keys, in the flags' terms
    with pytest.raises(InputError, match=r"imu: in the input description\), or fit a robot"):
        fit_whole_body(URDF, describe(tmp_path, stand, {}), floating)


def test_rooted_at_the_foot_in_the_air_is_refused_naming_the_stance(tmp_path) -> None:
    """iCub standing on its left sole, rooted at the right one: the IMU tilts it far from level,
    so the fit is refused before it runs, naming the frame and --fixed-frame; at the left sole
    no such refusal."""
    from inertia_id_ros.sim.whole_body_robots import icub_stance

    source = npz(tmp_path, icub_stance(seed=3).record(2.0, 100.0))
    options = FitWholeBodyOptions(base="fixed", filter_half_width=0.1, method="ols")
    wrong = fit_whole_body(URDF, source, replace(options, fixed_frame="r_sole"))
    assert wrong.estimate is None and wrong.refused
    (finding,) = [f for f in wrong.findings if f.kind == "stance_tilt"]
    assert finding.subject == "frame 'r_sole'" and "--fixed-frame" in finding.message
    right = fit_whole_body(URDF, source, replace(options, fixed_frame="l_sole"))
    assert not any(f.kind == "stance_tilt" for f in right.findings)


def test_joints_still_within_their_noise_are_named_with_the_rank_without_them(
    recordings, tmp_path
) -> None:
    """Two joints logged still (encoder noise about a constant): an ``effectively_planar`` note
    names them, with the rank of the rows with them held below the fit's; the JSON lists them."""
    data = dict(recordings["fixed"])
    names = [str(name) for name in data["joint_names"]]
    still = ["l_elbow", "r_elbow"]
    q = data["q"].copy()
    rng = np.random.default_rng(0)
    for name in still:
        k = names.index(name)
        q[:, k] = q[:, k].mean() + 1e-5 * rng.standard_normal(q.shape[0])
    data["q"] = q
    options = FitWholeBodyOptions(base="fixed", filter_half_width=0.1, method="ols")
    result = fit_whole_body(URDF, npz(tmp_path, data), options)
    (note,) = [f for f in result.findings if f.kind == "effectively_planar"]
    assert "joints l_elbow, r_elbow still" in note.message
    assert note.figures["rank"] < note.figures["rank_counting_noise"]
    assert result.document["still_joints"] == still
    plain = fit_whole_body(URDF, npz(tmp_path, recordings["fixed"]), options)
    assert plain.document["still_joints"] == []
    assert not any(f.kind == "effectively_planar" for f in plain.findings)
