"""Firmware calibration matrices (IIT FTSens ``matrix_SN*.txt``): read and written in their
1.15 fixed point, an in-situ calibration composed in, a matrix beyond the firmware's range and a
file that is not one refused, naming the fix."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_id_ros.chain.ft_calibration import SensorCalibration
from inertia_id_ros.errors import DataError, ProblemError
from inertia_id_ros.formats.firmware_matrix import (
    FIXED_POINT,
    FirmwareMatrix,
    firmware_matrix_text,
    read_firmware_matrix,
    recalibrated,
    write_recalibrated_firmware_matrix,
)

FULL_SCALE = np.array([1500.0, 1500.0, 2000.0, 30.0, 30.0, 20.0])


def factory(rng: np.random.Generator) -> FirmwareMatrix:
    """A plausible factory matrix: raw counts to N, N m, coefficients well inside [-1, 1)."""
    coefficients = 0.5 * np.eye(6) + 0.05 * rng.uniform(-1, 1, (6, 6))
    return FirmwareMatrix(coefficients * FULL_SCALE[:, None] / (2**15 - 1), FULL_SCALE)


def test_a_matrix_written_and_read_keeps_its_coefficients_to_the_last_bit(tmp_path):
    firmware = factory(np.random.default_rng(0))
    path = tmp_path / "matrix_SN001.txt"
    path.write_bytes(firmware_matrix_text(firmware).encode())
    lines = path.read_bytes().split(b"\r\n")
    assert len(lines) == 44 and lines[36] == b"1" and lines[37] == b"1500"
    assert all(len(line) == 4 for line in lines[:36])
    read = read_firmware_matrix(path)
    assert np.array_equal(read.full_scale, FULL_SCALE)
    step = FULL_SCALE[:, None] / (2**15 - 1) / FIXED_POINT  # N per count, one 1.15 step
    assert np.all(np.abs(read.matrix - firmware.matrix) <= 0.5 * step + 1e-15)
    assert firmware_matrix_text(read) == firmware_matrix_text(firmware)


def test_the_calibration_composed_in_maps_raw_counts_onto_the_calibrated_wrench(tmp_path):
    rng = np.random.default_rng(1)
    current = tmp_path / "matrix_SN002.txt"
    current.write_bytes(firmware_matrix_text(factory(rng)).encode())
    firmware = read_firmware_matrix(current)
    scale = FULL_SCALE[:, None] / FULL_SCALE[None, :]  # N per N m across the two blocks
    matrix = np.eye(6) + 0.04 * rng.uniform(-1, 1, (6, 6)) * scale
    calibration = SensorCalibration("l_leg_ft_sensor", matrix, np.arange(6.0))
    out = write_recalibrated_firmware_matrix(current, calibration)
    assert out.name == "matrix_SN002_insitu.txt"
    raw = rng.integers(-20000, 20000, size=(50, 6)).astype(float)
    calibrated = raw @ read_firmware_matrix(out).matrix.T
    wanted = calibration.apply(raw @ firmware.matrix.T) - calibration.offset  # no offset in it
    step = FULL_SCALE / (2**15 - 1) / FIXED_POINT  # N (N m) per count, one 1.15 step
    assert np.all(np.abs(calibrated - wanted) <= 6 * 20000 * 0.5 * step)  # rounding only


def test_a_matrix_beyond_the_fixed_point_range_or_a_bad_file_is_refused(tmp_path):
    firmware = factory(np.random.default_rng(2))
    with pytest.raises(ProblemError, match=r"raise the full scales \(axis 1: 1500 -> at least"):
        firmware_matrix_text(recalibrated(firmware, SensorCalibration("s", 2.2 * np.eye(6), 0)))
    bad = tmp_path / "matrix_SN003.txt"
    bad.write_text("\n".join(["7FFF"] * 36 + ["1", "10", "10", "10", "1", "1"]))
    with pytest.raises(DataError, match="a firmware matrix file has 43"):
        read_firmware_matrix(bad)
    bad.write_text("\n".join(["XYZW"] * 36 + ["1"] + ["10"] * 6))
    with pytest.raises(DataError, match="not a firmware matrix file"):
        read_firmware_matrix(bad)
