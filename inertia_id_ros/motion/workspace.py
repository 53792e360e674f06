"""Cartesian workspace limits of a joint motion: regions that chosen frames must stay in (no ROS).

A :class:`Workspace` is a list of limits, each a region and the URDF frames whose origins must stay
inside it, in the model's root frame (the robot's base; m, rad). The regions:

- ``half_space``: the points ``p`` with ``n . p <= d`` (``normal`` ``n``, ``offset`` ``d``; the
  normal need not be a unit vector). A table top at ``z = 0`` that the tool must stay 5 cm above
  is ``{normal: [0, 0, -1], offset: -0.05}`` (``-z <= -0.05``).
- ``box``: ``center`` and ``size`` (edge lengths), optionally turned by ``rpy`` (roll, pitch,
  yaw about the fixed x, y, z axes; rad); without ``rpy`` it is axis-aligned. ``min``/``max``
  corners may be given instead of ``center``/``size``.
- ``sphere``: ``center`` and ``radius``.

File format (YAML)::

    limits:
      - name: table            # optional; default "<region> <index>"
        frames: [panda_hand, panda_link7]
        half_space: {normal: [0, 0, -1], offset: -0.05}
      - name: cell
        frames: [panda_hand]
        box: {min: [-0.2, -0.6, 0.0], max: [0.9, 0.6, 1.2]}

:class:`WorkspaceChecker` checks a motion before it runs (:meth:`~WorkspaceChecker.check`, the
designed or the commanded trajectory, sampled) and one measured pose at a time while it runs
(:meth:`~WorkspaceChecker.check_pose`). Both return the first :class:`WorkspaceViolation`: the
limit, the frame, the time and by how much (m) the frame is outside.

The same regions (:func:`parse_region`) describe the obstacles of
:mod:`inertia_id_ros.motion.collision`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin
import yaml

from inertia_id_ros.core.robots import frame_id, joint_id
from inertia_id_ros.errors import ConfigError
from inertia_id_ros.motion.trajectory import ExcitationTrajectory

DEFAULT_CHECK_RATE_HZ = 100.0
"""Hz: samples per second of motion checked by :meth:`WorkspaceChecker.check`."""


# ---- regions ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class HalfSpace:
    """The points ``p`` (m) with ``normal . p <= offset``; ``normal`` (3,) is a unit vector."""

    normal: np.ndarray
    offset: float

    def excess(self, points: np.ndarray) -> np.ndarray:
        """(N,) distance (m) of ``points`` (N, 3) outside the region (<= 0: inside)."""
        return points @ self.normal - self.offset

    def describe(self) -> str:
        """The region in words, for messages."""
        n = self.normal
        return f"half-space {n[0]:.3g} x + {n[1]:.3g} y + {n[2]:.3g} z <= {self.offset:.4g} m"


@dataclass(frozen=True)
class Box:
    """A box of edge lengths ``size`` (3,) m centred at ``center`` (3,) m, its axes the columns
    of ``rotation`` (3, 3)."""

    center: np.ndarray
    size: np.ndarray
    rotation: np.ndarray

    def excess(self, points: np.ndarray) -> np.ndarray:
        """(N,) distance (m) of ``points`` (N, 3) outside the box; inside, minus the distance to
        the nearest face."""
        beyond = np.abs((points - self.center) @ self.rotation) - 0.5 * self.size
        outside = np.sqrt(np.square(np.maximum(beyond, 0.0)).sum(axis=1))
        return np.where(outside > 0.0, outside, beyond.max(axis=1))

    def describe(self) -> str:
        """The region in words, for messages."""
        c, s = self.center, self.size
        return (
            f"box of size [{s[0]:.3g}, {s[1]:.3g}, {s[2]:.3g}] m at "
            f"[{c[0]:.3g}, {c[1]:.3g}, {c[2]:.3g}] m"
        )


@dataclass(frozen=True)
class Sphere:
    """A ball of ``radius`` m centred at ``center`` (3,) m."""

    center: np.ndarray
    radius: float

    def excess(self, points: np.ndarray) -> np.ndarray:
        """(N,) distance (m) of ``points`` (N, 3) outside the ball (<= 0: inside)."""
        return np.linalg.norm(points - self.center, axis=1) - self.radius

    def describe(self) -> str:
        """The region in words, for messages."""
        c = self.center
        return f"sphere of radius {self.radius:.3g} m at [{c[0]:.3g}, {c[1]:.3g}, {c[2]:.3g}] m"


Region = HalfSpace | Box | Sphere
REGION_KINDS = ("half_space", "box", "sphere")
"""The keys that name a region in a workspace or environment file."""


def _vector(spec: Mapping[str, Any], key: str, where: str, size: int = 3) -> np.ndarray:
    if key not in spec:
        raise ConfigError(f"{where}: missing {key!r}")
    try:
        value = np.array(spec[key], dtype=float)
    except (TypeError, ValueError):
        value = np.empty(0)
    if value.shape != (size,) or not np.all(np.isfinite(value)):
        raise ConfigError(f"{where}: {key!r} must be {size} finite numbers, got {spec[key]!r}")
    return value


def _number(spec: Mapping[str, Any], key: str, where: str) -> float:
    value = spec.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
        raise ConfigError(f"{where}: {key!r} must be a finite number, got {value!r}")
    return float(value)


def parse_region(entry: Mapping[str, Any], where: str) -> tuple[str, Region]:
    """The one region of ``entry`` (a mapping with exactly one of :data:`REGION_KINDS`) and its
    kind; :class:`~inertia_id_ros.errors.ConfigError` naming ``where`` and the key otherwise."""
    kinds = [kind for kind in REGION_KINDS if kind in entry]
    if len(kinds) != 1:
        raise ConfigError(
            f"{where}: give exactly one of {', '.join(REGION_KINDS)}, got {sorted(entry)}"
        )
    kind = kinds[0]
    spec = entry[kind]
    where = f"{where} {kind}"
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{where}: must be a mapping, got {spec!r}")
    if kind == "half_space":
        normal = _vector(spec, "normal", where)
        length = float(np.linalg.norm(normal))
        if length == 0.0:
            raise ConfigError(f"{where}: 'normal' must not be zero")
        return kind, HalfSpace(normal / length, _number(spec, "offset", where) / length)
    if kind == "sphere":
        radius = _number(spec, "radius", where)
        if radius <= 0.0:
            raise ConfigError(f"{where}: 'radius' must be > 0 m, got {radius}")
        return kind, Sphere(_vector(spec, "center", where), radius)
    if "min" in spec or "max" in spec:
        low, high = _vector(spec, "min", where), _vector(spec, "max", where)
        center, size = 0.5 * (low + high), high - low
    else:
        center, size = _vector(spec, "center", where), _vector(spec, "size", where)
    if np.any(size <= 0.0):
        raise ConfigError(f"{where}: the box's edges must be > 0 m, got {size.tolist()}")
    rpy = _vector(spec, "rpy", where) if "rpy" in spec else np.zeros(3)
    return kind, Box(center, size, pin.rpy.rpyToMatrix(rpy))


def read_yaml_list(path: str | Path, key: str) -> list[Mapping[str, Any]]:
    """The list under ``key`` of the YAML file ``path`` (each entry a mapping);
    :class:`~inertia_id_ros.errors.ConfigError` naming the file otherwise."""
    try:
        document = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"{path}: cannot read it as YAML ({error})") from None
    entries = document.get(key) if isinstance(document, Mapping) else None
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{path}: needs a non-empty list {key!r}")
    for k, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{path}: {key}[{k}] must be a mapping, got {entry!r}")
    return entries


# ---- limits ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkspaceLimit:
    """The origins of ``frames`` must stay in ``region``; ``name`` for messages."""

    name: str
    frames: tuple[str, ...]
    region: Region


@dataclass(frozen=True)
class WorkspaceViolation:
    """Frame ``frame`` leaves the region of limit ``limit`` at ``time`` s (the trajectory's
    time, or a joint state's stamp) and is at most ``excess`` m outside it, at ``worst_time`` s
    and ``position`` (3,) m (root frame) over the checked samples."""

    limit: WorkspaceLimit
    frame: str
    time: float
    excess: float
    worst_time: float
    position: np.ndarray

    def __str__(self) -> str:
        p = self.position
        return (
            f"frame {self.frame} leaves workspace limit {self.limit.name!r} "
            f"({self.limit.region.describe()}) at t = {self.time:.3f} s, by "
            f"{self.excess:.3f} m at most (t = {self.worst_time:.3f} s, at "
            f"[{p[0]:.3f}, {p[1]:.3f}, {p[2]:.3f}] m)"
        )


@dataclass(frozen=True)
class Workspace:
    """The limits of a workspace file (module docstring)."""

    limits: tuple[WorkspaceLimit, ...]

    @classmethod
    def load_yaml(cls, path: str | Path) -> Workspace:
        """Read a workspace file; :class:`~inertia_id_ros.errors.ConfigError` names the file and
        the entry that is wrong."""
        limits = []
        for k, entry in enumerate(read_yaml_list(path, "limits")):
            where = f"{path}: limits[{k}]"
            frames = entry.get("frames")
            if isinstance(frames, str):
                frames = [frames]
            if (
                not isinstance(frames, list)
                or not frames
                or not all(isinstance(f, str) for f in frames)
            ):
                raise ConfigError(f"{where}: 'frames' must list URDF frame names, got {frames!r}")
            kind, region = parse_region(entry, where)
            limits.append(
                WorkspaceLimit(str(entry.get("name", f"{kind} {k}")), tuple(frames), region)
            )
        return cls(tuple(limits))


class WorkspaceChecker:
    """Checks frame positions of ``model`` (pinocchio, fixed base; joints not moved stay at
    their neutral positions) against ``workspace``; raises the model's
    :class:`~inertia_id_ros.errors.FrameNotFound` for a frame it lacks. Not thread-safe."""

    def __init__(self, model: pin.Model, workspace: Workspace) -> None:
        self.model, self.workspace = model, workspace
        self._data = model.createData()
        self._frames = sorted({name for limit in workspace.limits for name in limit.frames})
        self._frame_ids = [frame_id(model, name) for name in self._frames]
        self._checks = [
            (limit, name, self._frames.index(name))
            for limit in workspace.limits
            for name in limit.frames
        ]
        self._neutral = pin.neutral(model)
        self._columns: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray]] = {}

    def _layout(self, joint_names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Indices into q of ``joint_names``: for each, its first entry and whether it is
        continuous (cos, sin)."""
        key = tuple(joint_names)
        if key not in self._columns:
            joints = [self.model.joints[joint_id(self.model, name)] for name in key]
            wrong = [name for name, joint in zip(key, joints) if joint.nv != 1]
            if wrong:
                raise ConfigError(f"joints {wrong} have more than one degree of freedom")
            self._columns[key] = (
                np.array([joint.idx_q for joint in joints], dtype=int),
                np.array([joint.nq == 2 for joint in joints]),
            )
        return self._columns[key]

    def positions(self, joint_names: Sequence[str], Q: np.ndarray) -> np.ndarray:
        """(N, F, 3) positions (m, root frame) of the checked frames (sorted by name) at joint
        positions ``Q`` (N, n) of ``joint_names``."""
        Q = np.atleast_2d(np.asarray(Q, dtype=float))
        index, continuous = self._layout(joint_names)
        full = np.tile(self._neutral, (len(Q), 1))
        full[:, index[~continuous]] = Q[:, ~continuous]
        full[:, index[continuous]] = np.cos(Q[:, continuous])
        full[:, index[continuous] + 1] = np.sin(Q[:, continuous])
        out = np.empty((len(Q), len(self._frames), 3))
        model, data = self.model, self._data
        for i, q in enumerate(full):
            pin.forwardKinematics(model, data, q)
            for f, fid in enumerate(self._frame_ids):
                out[i, f] = pin.updateFramePlacement(model, data, fid).translation
        return out

    def first_violation(
        self, joint_names: Sequence[str], Q: np.ndarray, times: np.ndarray
    ) -> WorkspaceViolation | None:
        """The earliest sample of ``Q`` (N, n) at ``times`` (N,) s where a frame is outside its
        limit (the limit and frame of the largest excess at that sample, and their largest
        excess over all samples), or ``None``."""
        P = self.positions(joint_names, Q)
        checks = self._checks
        excess = np.column_stack([limit.region.excess(P[:, f]) for limit, _, f in checks])
        outside = np.flatnonzero(excess.max(axis=1) > 0.0)
        if outside.size == 0:
            return None
        first = int(outside[0])
        k = int(np.argmax(excess[first]))
        worst = int(np.argmax(excess[:, k]))
        limit, name, f = checks[k]
        return WorkspaceViolation(
            limit,
            name,
            float(times[first]),
            float(excess[worst, k]),
            float(times[worst]),
            P[worst, f].copy(),
        )

    def check(
        self, trajectory: ExcitationTrajectory, rate_hz: float = DEFAULT_CHECK_RATE_HZ
    ) -> WorkspaceViolation | None:
        """The first violation of the trajectory sampled at ``rate_hz`` or faster (its own
        samples and both ends included), or ``None``."""
        grid = np.linspace(
            0.0, trajectory.duration, max(int(np.ceil(trajectory.duration * rate_hz)), 1) + 1
        )
        times = np.union1d(grid, trajectory.t)
        return self.first_violation(trajectory.joint_names, trajectory.sample(times)[0], times)

    def check_pose(
        self, joint_names: Sequence[str], q: np.ndarray, stamp: float
    ) -> WorkspaceViolation | None:
        """The violation of one measured pose ``q`` (n,) of ``joint_names`` stamped ``stamp`` s
        (the run-time check, at the joint-state rate: stop and hold when it is not ``None``);
        :meth:`first_violation` of that one sample, with one forward kinematics."""
        index, continuous = self._layout(joint_names)
        q = np.asarray(q, dtype=float)
        full = self._neutral.copy()
        full[index] = np.where(continuous, np.cos(q), q)
        full[index[continuous] + 1] = np.sin(q[continuous])
        model, data = self.model, self._data
        pin.forwardKinematics(model, data, full)
        P = np.array(
            [pin.updateFramePlacement(model, data, fid).translation for fid in self._frame_ids]
        )
        worst, worst_excess = None, 0.0
        for limit, name, f in self._checks:
            excess = float(limit.region.excess(P[f : f + 1])[0])
            if excess > worst_excess:
                worst, worst_excess = (limit, name, f), excess
        if worst is None:
            return None
        limit, name, f = worst
        return WorkspaceViolation(limit, name, float(stamp), worst_excess, float(stamp), P[f])
