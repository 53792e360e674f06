"""The whole-body mode's evaluation of its results (``Mode.evaluate``): the rows it predicts agree
with the fit's own held-out errors (``chain.whole_body_fit.prediction_errors``), the result's
links and offsets read by name, its fixed base's tilt kept (not the held-out IMU's); a bag is
refused (it does not name its sensors' kinds)."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_id_ros import modes
from inertia_id_ros.chain.whole_body_fit import prediction_errors
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.errors import InputError
from inertia_id_ros.formats.whole_body_log import read_whole_body_file, whole_body_inputs
from inertia_id_ros.offline.validation import DataSource
from inertia_id_ros.sim.whole_body_robots import icub_fixed
from inertia_id_ros.sim.whole_body_simulator import write_recording


def test_the_predicted_rows_are_the_fits_held_out_errors(tmp_path):
    npz = tmp_path / "icub.npz"
    write_recording(str(npz), icub_fixed(seed=1), 1.0, 50.0, with_effort=True)
    urdf = str(example_robot_urdf("icub"))
    held_out = DataSource(str(npz))
    model, samples = whole_body_inputs(
        read_whole_body_file(npz), urdf, "fixed", half_width=held_out.half_width, imu_tilt="check"
    )
    rng = np.random.default_rng(0)
    thetas = model.link_prior * (1.0 + 0.1 * rng.uniform(-1.0, 1.0, (len(model.links), 1)))
    offsets = {frame: rng.normal(0.0, 0.5, 6).tolist() for frame in model.offset_sensors}
    result = {
        "mode": "whole_body",
        "base": "fixed",
        "bodies": [{"name": n, "theta": t.tolist()} for n, t in zip(model.links, thetas)],
        "sensor_offsets": offsets,
    }
    x = np.concatenate(
        [thetas[[model.links.index(b) for b in model.bodies]].ravel()]
        + [np.asarray(offsets[frame]) for frame in model.offset_sensors]
    )
    mode = modes.result_mode(result)
    predictions = mode.evaluate(result, held_out, urdf, None)
    assert set(predictions) == {"fit", "urdf", "urdf_offsets"}
    fit = predictions["fit"]
    expected = prediction_errors(model, x, samples)
    for group, force in expected.force.items():
        columns = [fit.channels.index(f"{group}.{c}") for c in ("fx", "fy", "fz")]
        error = fit.measured[:, columns] - fit.predicted[:, columns]
        assert np.sqrt(np.mean(error**2)) == pytest.approx(force, rel=1e-9), group
    with pytest.raises(InputError, match="a bag does not"):
        mode.evaluate(result, DataSource(str(tmp_path / "bag"), bag=True), urdf, None)
