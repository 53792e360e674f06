"""Whitespace-delimited logs as data dumpers write them (:mod:`inertia_id_ros.formats.streams`):
groups of values in parentheses with a status word in brackets, and stamps that now and then
repeat (dropped with a note; a log mostly of repeats is refused)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from inertia_id_ros.errors import DataError
from inertia_id_ros.formats.description import InputDescription
from inertia_id_ros.formats.recording import load_recording

JOINTS = ("hip", "knee")


def write_dump(path: Path, stamps: np.ndarray) -> np.ndarray:
    """``counter stamp (q0 q1) [ok] (dq0 dq1) [ok]`` lines, positions in degrees; returns q."""
    q = np.column_stack([10.0 * np.sin(stamps), 5.0 * np.cos(stamps)])
    lines = [
        f"{k} {t:.6f} ({a:.6f} {b:.6f}) [ok] ({-a:.6f}  {b:.6f}) [ok]"
        for k, (t, (a, b)) in enumerate(zip(stamps, q))
    ]
    path.write_text("\n".join(lines) + "\n")
    return q


def describe(tmp_path: Path) -> InputDescription:
    header = ["n", "stamp", "q_hip", "q_knee", "v_hip", "v_knee"]
    data = {
        "streams": {
            "leg": {
                "file": "data.log",
                "time": "stamp",
                "time_unit": "s",
                "delimiter": " ",
                "header": header,
            }
        },
        "joints": {
            "names": list(JOINTS),
            "position": {"columns": "q_{joint}", "unit": "deg"},
        },
    }
    return InputDescription.from_mapping(data, tmp_path, "leg.yaml")


def test_bracketed_groups_read_and_repeated_stamps_dropped(tmp_path: Path) -> None:
    stamps = 1000.0 + np.arange(400) * 0.01
    stamps[[50, 51, 300]] = stamps[[49, 50, 299]]  # three repeats (two in a row)
    stamps[51] = stamps[49]
    q = write_dump(tmp_path / "data.log", stamps)
    recording = load_recording(describe(tmp_path), JOINTS)
    keep = np.r_[True, np.diff(stamps) != 0]
    assert recording.joint_states.n_samples == 397
    assert np.allclose(recording.joint_states.q, np.deg2rad(q[keep]), atol=1e-8)
    assert any("3 of 400 samples repeat the previous sample's stamp" in n for n in recording.notes)


def test_a_log_mostly_of_repeats_is_refused(tmp_path: Path) -> None:
    stamps = 1000.0 + np.repeat(np.arange(100) * 0.01, 3)
    write_dump(tmp_path / "data.log", stamps)
    with pytest.raises(DataError, match="200 of 300 samples repeat"):
        load_recording(describe(tmp_path), JOINTS)


def test_per_joint_maps_keyed_by_unknown_names_are_refused(tmp_path: Path) -> None:
    write_dump(tmp_path / "data.log", 1000.0 + np.arange(50) * 0.01)
    description = describe(tmp_path)
    group = description.joints[0]
    position = group.signals["position"]
    for key, value in (("sign", {"knee": -1.0, "ankle": -1.0}), ("gear_ratio", {"hips": 2.0})):
        signals = {"position": replace(position, **{key: value})}
        wrong = replace(description, joints=(replace(group, signals=signals),))
        with pytest.raises(DataError, match=rf"joints.position.{key}: no joint\(s\) \['"):
            load_recording(wrong, JOINTS)
    signals = {"position": replace(position, sign={"knee": -1.0})}
    flipped = load_recording(
        replace(description, joints=(replace(group, signals=signals),)), JOINTS
    )
    plain = load_recording(description, JOINTS)
    assert np.allclose(flipped.joint_states.q[:, 1], -plain.joint_states.q[:, 1])
    held = replace(description, held={"ankle": 0.0})
    with pytest.raises(
        DataError,
        match=r"held joints \['ankle'\] are not in the URDF \(its joints not in the log: foot\)",
    ):
        load_recording(held, (*JOINTS, "foot"))
