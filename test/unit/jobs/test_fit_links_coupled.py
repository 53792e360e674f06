"""fit-links on a coupled wrist logged motor side (:mod:`inertia_id_ros.sim.coupled_wrist`: the
Panda whose motor 7 turns with joints 6 and 7): the description's transmission gives the link
model motor 7's rotor inertia and friction, recovered within a few standard errors, and the
held-out torques of the coupled joints are predicted to their noise, unlike without them; the
result JSON carries the motor and reads back as the same model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from inertia_id_ros.chain.links import predict_torques
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.formats.link_result import read_link_result
from inertia_id_ros.formats.source import LogSource
from inertia_id_ros.jobs.fit_links import FitLinksOptions, LinksFit, fit_links
from inertia_id_ros.sim.coupled_wrist import (
    MOTOR7,
    CoupledWristLog,
    motor7_estimate,
    write_coupled_wrist_log,
)

FAST = FitLinksOptions(
    prior_weight=1e-6,
    coulomb_velocity=0.02,
    filter_half_width=0.05,
    torque_delay=0.0,
    estimate_tilt=False,
)
"""Every choice given: no cross-validation."""


@pytest.fixture(scope="module")
def log(tmp_path_factory) -> CoupledWristLog:
    return write_coupled_wrist_log(tmp_path_factory.mktemp("wrist"), duration=30.0)


@pytest.fixture(scope="module")
def fits(log: CoupledWristLog) -> tuple[LinksFit, LinksFit]:
    urdf = str(example_robot_urdf("panda"))
    coupled = fit_links(urdf, LogSource(input=str(log.description)), FAST)
    plain = fit_links(
        urdf, LogSource(data=str(log.joint_npz), held_out_from=log.held_out_from), FAST
    )
    return coupled, plain


def held_out_rms(log: CoupledWristLog, result: LinksFit) -> np.ndarray:
    assert result.estimate is not None and result.estimate.model is not None
    held = log.truth.subset(log.t >= log.held_out_from)
    error = predict_torques(result.estimate.model, result.estimate.fit.x, held) - held.efforts
    moving = np.abs(held.velocities) > 0.1
    return np.sqrt(np.sum(np.where(moving, error, 0.0) ** 2, axis=0) / moving.sum(axis=0))


def test_the_coupled_motors_terms_are_recovered(fits: tuple[LinksFit, LinksFit]) -> None:
    coupled, plain = fits
    assert coupled.estimate is not None and coupled.estimate.model is not None
    model = coupled.estimate.model
    assert [motor.name for motor in model.motors] == ["panda_joint7_motor"]
    values, std = motor7_estimate(model, coupled.estimate.fit.x, coupled.estimate.data)
    for term, true in MOTOR7.items():
        assert abs(values[term] - true) < 4.0 * std[term], (term, values[term], true, std[term])
        assert std[term] < 0.05 * true
    assert plain.estimate is not None and plain.estimate.model is not None
    assert plain.estimate.model.motors == ()


def test_the_coupled_joints_are_predicted_to_their_noise_only_with_the_motor(
    log: CoupledWristLog, fits: tuple[LinksFit, LinksFit]
) -> None:
    coupled, plain = (held_out_rms(log, fit) for fit in fits)
    noise = np.array([0.15, 0.15, 0.12, 0.12, 0.06, 0.06, 0.04])
    np.testing.assert_array_less(coupled, 1.15 * noise)
    assert plain[5] > 4.0 * coupled[5] and plain[6] > 4.0 * coupled[6]


def test_the_result_carries_the_motor_and_reads_back(
    tmp_path: Path, log: CoupledWristLog, fits: tuple[LinksFit, LinksFit]
) -> None:
    import json

    coupled, plain = fits
    document = coupled.document
    assert document["transmission"]["joints"][-2:] == ["panda_joint6", "panda_joint7"]
    (motor,) = document["motors"]
    assert motor["name"] == "panda_joint7_motor" and motor["gear_ratio"] == 80.0
    assert motor["rotor_inertia"] == pytest.approx(MOTOR7["rotor_inertia"], rel=0.05)
    assert "motors" not in plain.document and "transmission" not in plain.document
    assert any(line.startswith("panda_joint7_motor") for line in coupled.summary)
    assert not any("motor" in line for line in plain.summary)
    assert coupled.validation is not None and "fit" in coupled.validation.estimate
    path = tmp_path / "links.json"
    path.write_text(json.dumps(document))
    assert coupled.estimate is not None and coupled.estimate.model is not None
    model = coupled.estimate.model
    read = read_link_result(path, model)
    assert read.model.parameter_names == model.parameter_names
    held = log.truth.subset(slice(0, 200))
    np.testing.assert_allclose(
        predict_torques(read.model, read.x, held),
        predict_torques(model, coupled.estimate.fit.x, held),
        atol=1e-9,
    )
