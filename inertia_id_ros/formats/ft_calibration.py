"""F/T calibration files: what ``inertia-id calibrate-ft`` writes and the fits apply to readings.

A YAML file::

    ft_calibration:
      date: 2026-11-29T01:30:00Z          # when it was fitted
      source: log.npz                     # the recording it was fitted on
      sensors:
        - frame: l_leg_ft_sensor          # the sensor's URDF frame
          kind: full                      # full (6x6) or gains
          matrix: [[...], ...]            # 6x6: wrench = matrix @ logged + offset
          offset: [fx, fy, fz, tx, ty, tz]  # N, N m
          matrix_std: [[...], ...]        # standard errors (optional)
          offset_std: [...]               # (optional)
          lambda: [...]                   # regularisation per output axis (optional)

``matrix`` maps the wrench as logged (the sensor's own sign convention, through the factory
calibration) onto the calibrated wrench, in the same convention and frame
(:func:`apply_ft_calibration`).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from inertia_id_ros.chain.ft_calibration import (
    FTCalibration,
    SensorCalibration,
    check_calibration_matrix,
)
from inertia_id_ros.errors import DataError, ProblemError


def ft_calibration_document(
    calibrations: Mapping[str, FTCalibration], source: str
) -> dict[str, Any]:
    """The file's content for ``calibrations`` by frame, fitted on ``source``."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    sensors = [
        {
            "frame": frame,
            "kind": c.kind,
            "matrix": c.matrix.tolist(),
            "offset": c.offset.tolist(),
            "matrix_std": c.matrix_std.tolist(),
            "offset_std": c.offset_std.tolist(),
            "lambda": c.lambdas.tolist(),
            "samples": c.n_samples,
        }
        for frame, c in calibrations.items()
    ]
    return {"ft_calibration": {"date": now, "source": source, "sensors": sensors}}


def write_ft_calibration(path: str | Path, document: dict[str, Any]) -> None:
    """Write ``document`` (:func:`ft_calibration_document`) as YAML to ``path``."""
    import yaml

    Path(path).write_text(yaml.safe_dump(document, default_flow_style=None, sort_keys=False))


def read_ft_calibration(path: str | Path) -> dict[str, SensorCalibration]:
    """The calibrations of the file ``path`` by frame. Raises :class:`DataError` naming the file
    and the entry for a file that is not one, a matrix that is not 6×6, finite and invertible, an
    offset that is not 6 finite numbers, or a frame given twice."""
    import yaml

    source = str(path)
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as e:
        raise DataError(f"{source}: cannot read the F/T calibration: {e}") from None
    table = data.get("ft_calibration") if isinstance(data, dict) else None
    sensors = table.get("sensors") if isinstance(table, dict) else None
    if not isinstance(sensors, list) or not sensors:
        raise DataError(
            f"{source}: not an F/T calibration (expected 'ft_calibration: sensors: [...]', as "
            "inertia-id calibrate-ft writes)"
        )
    return calibrations_of(sensors, source)


def calibrations_of(sensors: list[Any], source: str) -> dict[str, SensorCalibration]:
    """The calibrations by frame of a file's ``sensors`` entries (``source`` names the file in
    the :class:`DataError` of an entry that is not one)."""
    out: dict[str, SensorCalibration] = {}
    for i, entry in enumerate(sensors):
        if not isinstance(entry, dict) or not isinstance(entry.get("frame"), str):
            raise DataError(f"{source}: sensor {i} has no 'frame'")
        frame = entry["frame"]
        if frame in out:
            raise DataError(f"{source}: sensor {frame!r} is calibrated twice")
        try:
            matrix = check_calibration_matrix(
                np.asarray(entry.get("matrix"), dtype=float), "'matrix'"
            )
        except (ProblemError, ValueError, TypeError) as e:
            raise DataError(f"{source}: {frame}: {e}") from None
        try:
            offset = np.asarray(entry.get("offset"), dtype=float)
        except (ValueError, TypeError):
            offset = np.zeros(0)
        if offset.shape != (6,) or not np.all(np.isfinite(offset)):
            raise DataError(f"{source}: {frame}: 'offset' must be 6 finite numbers (N, N m)")
        out[frame] = SensorCalibration(frame, matrix, offset)
    return out


def apply_ft_calibration(
    frames: Sequence[str],
    wrenches: np.ndarray,
    calibrations: Mapping[str, SensorCalibration],
    source: str,
) -> np.ndarray:
    """(N, S, 6) ``wrenches`` of the sensors ``frames`` (S,) with ``calibrations`` applied (a
    sensor without one unchanged). Raises :class:`DataError` when a calibrated frame is not a
    sensor of the recording (``source`` names the file)."""
    unknown = [f for f in calibrations if f not in frames]
    if unknown:
        raise DataError(
            f"{source}: the F/T calibration names {unknown}, not sensors of the recording "
            f"({list(frames)})"
        )
    out = np.array(wrenches, dtype=float)
    for k, frame in enumerate(frames):
        if frame in calibrations:
            out[:, k] = calibrations[frame].apply(out[:, k])
    return out
