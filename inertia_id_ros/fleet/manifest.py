"""A fleet's manifest (docs/reference/fleet-manifest.md): per robot its URDF, its mode and the
mode's options, and its runs (NPZ/CSV files, bags or input descriptions, each with a timestamp
and optionally the tool it carried), listed or found by a glob. YAML (``robots:``, a list of
robots) or CSV (one row per run: ``robot,urdf,mode,sensor_frame,path,time,tool``). Paths are
relative to the manifest's folder."""

from __future__ import annotations

import csv
import glob as globbing
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from inertia_id_ros.errors import InputError

MODES = ("payload", "links")
"""The modes a fleet's robot can have: ``payload`` (a wrist F/T sensor: the payload and the
sensor's offsets, :func:`~inertia_id_ros.jobs.fit_payload.fit_payload`) and ``links`` (joint
torques: links and joint friction, :func:`~inertia_id_ros.jobs.fit_links.fit_links`)."""
DEFAULT_TOOL = "-"
"""The tool of a run that names none."""
CSV_COLUMNS = ("robot", "urdf", "mode", "sensor_frame", "path", "time", "tool")
"""A CSV manifest's columns (``sensor_frame`` and ``tool`` may be empty)."""
_STAMP_IN_NAME = re.compile(r"(\d{4}-\d{2}-\d{2}(?:[T_ ]\d{2}[:-]?\d{2}(?:[:-]?\d{2})?)?)")


@dataclass(frozen=True)
class Run:
    """One recorded run: ``path`` (absolute), its ``time`` (UTC, ISO 8601), the ``tool`` it
    carried (payload histories are compared per tool)."""

    path: str
    time: str
    tool: str = DEFAULT_TOOL

    def key(self, manifest_dir: Path) -> str:
        """The run's name in the store: its path relative to the manifest's folder."""
        return os.path.relpath(self.path, manifest_dir)


@dataclass(frozen=True)
class Robot:
    """One robot: ``name``, ``urdf`` (a file, or an example-robot-data name such as ``panda``),
    ``mode`` (of :data:`MODES`), ``sensor_frame`` (mode ``payload``), ``options`` (the mode's job
    options by field name) and its ``runs`` in time order."""

    name: str
    urdf: str
    mode: str
    sensor_frame: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    runs: tuple[Run, ...] = ()


@dataclass(frozen=True)
class Manifest:
    """A fleet: its ``robots`` and the ``folder`` its paths are relative to."""

    robots: tuple[Robot, ...]
    folder: Path


def read_manifest(path: str | Path) -> Manifest:
    """The manifest at ``path`` (``.yaml``/``.yml`` or ``.csv``); an :class:`InputError` naming
    the problem for a bad one."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such manifest")
    if path.suffix.lower() == ".csv":
        robots = _read_csv(path)
    else:
        robots = _read_yaml(path)
    names = [r.name for r in robots]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InputError(f"{path}: robots named twice: {duplicates}")
    return Manifest(tuple(robots), path.parent.resolve())


def _read_yaml(path: Path) -> list[Robot]:
    import yaml

    try:
        document = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise InputError(f"{path}: not YAML: {e}") from None
    if not isinstance(document, dict) or not isinstance(document.get("robots"), list):
        raise InputError(f"{path}: a manifest is a mapping with a list 'robots'")
    return [_robot(path, entry) for entry in document["robots"]]


def _robot(path: Path, entry: object) -> Robot:
    """A robot of a YAML manifest's ``entry``."""
    if not isinstance(entry, dict) or "name" not in entry:
        raise InputError(f"{path}: each robot is a mapping with a 'name', got {entry!r}")
    name = str(entry["name"])
    unknown = sorted(
        set(entry) - {"name", "urdf", "mode", "sensor_frame", "options", "runs", "glob"}
    )
    if unknown:
        raise InputError(f"{path}: robot {name!r}: unknown keys {unknown}")
    runs = [_run(path, name, r) for r in entry.get("runs") or []]
    if "glob" in entry:
        runs += _globbed(path.parent, str(entry["glob"]))
    robot = Robot(
        name,
        str(entry.get("urdf", "")),
        str(entry.get("mode", "")),
        entry.get("sensor_frame"),
        dict(entry.get("options") or {}),
        tuple(sorted(runs, key=lambda r: r.time)),
    )
    check_robot(path, robot)
    return robot


def _run(path: Path, robot: str, entry: object) -> Run:
    if not isinstance(entry, dict) or "path" not in entry or "time" not in entry:
        raise InputError(f"{path}: robot {robot!r}: each run needs a 'path' and a 'time'")
    return Run(
        str((path.parent / str(entry["path"])).resolve()),
        _iso(path, entry["time"]),
        str(entry.get("tool", DEFAULT_TOOL)),
    )


def _iso(path: Path, value: object) -> str:
    """``value`` (an ISO 8601 string or a YAML timestamp) as a UTC ISO 8601 string."""
    try:
        stamp = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    except ValueError:
        raise InputError(f"{path}: {value!r} is not an ISO 8601 time") from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=timezone.utc)
    return stamp.astimezone(timezone.utc).isoformat()


def _globbed(folder: Path, pattern: str) -> list[Run]:
    """The runs matching ``pattern`` (relative to ``folder``): timed by the date in their name
    (``2026-01-05``, ``2026-01-05T02:00``, ``2026-01-05_020000``), else by their modification
    time."""
    runs = []
    for match in sorted(globbing.glob(str(folder / pattern))):
        found = _STAMP_IN_NAME.search(Path(match).name)
        if found:
            text = re.sub(r"[_ ]", "T", found.group(1))
            digits = re.sub(r"\D", "", text)
            stamp = datetime.strptime(digits + "0" * (14 - len(digits)), "%Y%m%d%H%M%S")
            time = stamp.replace(tzinfo=timezone.utc).isoformat()
        else:
            time = datetime.fromtimestamp(os.path.getmtime(match), timezone.utc).isoformat()
        runs.append(Run(str(Path(match).resolve()), time))
    return runs


def _read_csv(path: Path) -> list[Robot]:
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows or set(CSV_COLUMNS[:3] + ("path", "time")) - set(rows[0]):
        raise InputError(f"{path}: a CSV manifest has the columns {', '.join(CSV_COLUMNS)}")
    by_robot: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        by_robot.setdefault(row["robot"], []).append(row)
    robots = []
    for name, runs in by_robot.items():
        first = runs[0]
        robot = Robot(
            name,
            first["urdf"],
            first["mode"],
            first.get("sensor_frame") or None,
            {},
            tuple(
                sorted(
                    (
                        Run(
                            str((path.parent / r["path"]).resolve()),
                            _iso(path, r["time"]),
                            r.get("tool") or DEFAULT_TOOL,
                        )
                        for r in runs
                    ),
                    key=lambda r: r.time,
                )
            ),
        )
        check_robot(path, robot)
        robots.append(robot)
    return robots


def check_robot(path: Path, robot: Robot) -> None:
    """Refuse a robot without a URDF, with an unknown mode, a payload robot without its sensor
    frame, or options its mode's job does not take (:class:`InputError`)."""
    where = f"{path}: robot {robot.name!r}"
    if not robot.urdf:
        raise InputError(f"{where}: no 'urdf'")
    if robot.mode not in MODES:
        raise InputError(f"{where}: mode must be one of {', '.join(MODES)}, got {robot.mode!r}")
    if robot.mode == "payload" and not robot.sensor_frame:
        raise InputError(f"{where}: mode payload needs a 'sensor_frame'")
    known = {f.name for f in fields(options_class(robot.mode))}
    unknown = sorted(set(robot.options) - known)
    if unknown:
        raise InputError(f"{where}: options {unknown} are not among {sorted(known)}")


def options_class(mode: str) -> type:
    """The options dataclass of ``mode``'s job."""
    if mode == "payload":
        from inertia_id_ros.jobs.fit_payload import FitPayloadOptions

        return FitPayloadOptions
    from inertia_id_ros.jobs.fit_links import FitLinksOptions

    return FitLinksOptions
