"""F/T sensors' firmware calibration matrices: the ``matrix_SN*.txt`` files of IIT's FTSens
(the iCub's six-axis sensors), read, and written again with an in-situ calibration composed in.

The file holds, one value per line: the matrix ``Cs`` (6×6, row by row) in 1.15 fixed point
(four hex digits, two's complement), a ``1``, and the six full scales (N, then N m; integers).
``Cs = diag(1 / full_scale) C (2^15 - 1)``, where ``C`` maps the strain gauges' raw counts onto
the wrench the sensor reports (N, N m; forces then torques). Offsets are not in it: the
firmware's own tare removes them, so the in-situ offset stays in the calibration's YAML file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from inertia_id_ros.chain.ft_calibration import SensorCalibration
from inertia_id_ros.errors import DataError, ProblemError

MAX_RAW = 2**15 - 1
"""The largest raw strain-gauge count (16-bit signed)."""
FIXED_POINT = 2**15
"""A 1.15 fixed-point coefficient is its integer over this."""


@dataclass(frozen=True)
class FirmwareMatrix:
    """A sensor's firmware calibration: ``matrix`` (6, 6) from raw counts to the wrench it
    reports (N, N m per count), ``full_scale`` (6,) (N, N m)."""

    matrix: np.ndarray
    full_scale: np.ndarray

    def coefficients(self) -> np.ndarray:
        """(6, 6) ``Cs``, the matrix as the firmware holds it (each in [-1, 1) to fit)."""
        return self.matrix * MAX_RAW / self.full_scale[:, None]


def read_firmware_matrix(path: str | Path) -> FirmwareMatrix:
    """The matrix and full scales of the file ``path``; :class:`DataError` naming the file for
    one that is not 36 hex coefficients, a ``1`` and six positive full scales."""
    try:
        values = Path(path).read_text().split()
    except OSError as e:
        raise DataError(f"{path}: cannot read the firmware matrix: {e}") from None
    if len(values) < 43:
        raise DataError(
            f"{path}: {len(values)} values; a firmware matrix file has 43 (36 hex coefficients, "
            "a 1, six full scales)"
        )
    try:
        counts = np.array([int(v, 16) for v in values[:36]], dtype=float)
        full_scale = np.array([float(v) for v in values[37:43]])
    except ValueError as e:
        raise DataError(f"{path}: not a firmware matrix file: {e}") from None
    if values[36] != "1" or not np.all(full_scale > 0):
        raise DataError(f"{path}: expected '1' then six positive full scales after the matrix")
    coefficients = np.where(counts >= FIXED_POINT, counts - 2 * FIXED_POINT, counts) / FIXED_POINT
    matrix = coefficients.reshape(6, 6) * full_scale[:, None] / MAX_RAW
    return FirmwareMatrix(matrix, full_scale)


def firmware_matrix_text(firmware: FirmwareMatrix) -> str:
    """The file's text (CRLF lines, as the sensor's tools write it). Raises
    :class:`ProblemError` when a coefficient leaves the 1.15 range, naming the full scale that
    would hold it."""
    counts = np.round(firmware.coefficients() * FIXED_POINT)
    beyond = np.flatnonzero(np.any((counts < -FIXED_POINT) | (counts >= FIXED_POINT), axis=1))
    if beyond.size:
        needed = np.abs(firmware.matrix).max(axis=1) * MAX_RAW / (1.0 - 1.0 / FIXED_POINT)
        axes = ", ".join(
            f"axis {i + 1}: {firmware.full_scale[i]:g} -> at least {np.ceil(needed[i]):g}"
            for i in beyond
        )
        raise ProblemError(
            f"the calibrated matrix does not fit the firmware's 1.15 coefficients; raise the "
            f"full scales ({axes})"
        )
    lines = [f"{int(c) & 0xFFFF:04X}" for c in counts.reshape(-1)]
    lines += ["1", *(f"{int(np.ceil(s))}" for s in firmware.full_scale)]
    return "\r\n".join(lines) + "\r\n"


def recalibrated(firmware: FirmwareMatrix, calibration: SensorCalibration) -> FirmwareMatrix:
    """``firmware`` with ``calibration``'s matrix composed in (its offset left out): raw counts
    to the calibrated wrench, the same full scales."""
    return FirmwareMatrix(calibration.matrix @ firmware.matrix, firmware.full_scale)


def write_recalibrated_firmware_matrix(current: str | Path, calibration: SensorCalibration) -> Path:
    """Read the sensor's ``current`` firmware matrix file, write it recalibrated beside it as
    ``<name>_insitu<suffix>``; that path."""
    current = Path(current)
    text = firmware_matrix_text(recalibrated(read_firmware_matrix(current), calibration))
    out = current.with_name(f"{current.stem}_insitu{current.suffix}")
    out.write_text(text, newline="")
    return out
