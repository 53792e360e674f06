"""Collision distances of a joint motion, with their gradients: pinocchio's collision geometry
(coal) of a URDF, between its links over the pairs an SRDF leaves (its ``disable_collisions``
removed: self-collision), and between its links and the obstacles of an environment file.

Environment file (YAML): obstacles fixed in the model's root frame (m, rad), each a region of
:func:`~inertia_id_ros.motion.workspace.parse_region` (``half_space``: the solid ``n . p <= d``,
e.g. a table top at ``z = 0`` is ``{normal: [0, 0, 1], offset: 0}``; ``box``; ``sphere``), and
``ignore``: links that may touch it (e.g. what stands on it)::

    obstacles:
      - name: table
        half_space: {normal: [0, 0, 1], offset: 0.0}
      - name: fence
        box: {center: [0.0, -0.7, 0.5], size: [2.0, 0.05, 1.0]}
        ignore: []

Geometry fixed to the root (on no moving joint, e.g. a fixed base on the table) is never paired
with an obstacle: no motion changes that distance.

Every mesh is replaced by its convex hull: the hull contains the mesh, so its distance is a lower
bound of the mesh's (conservative), and convex distances (GJK) are about a hundred times faster
than mesh ones, fast enough for the design's optimiser. A negative distance is a penetration
depth; its gradient (from EPA's witness points) is approximate, while that of a positive distance
is exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import coal
import numpy as np
import pinocchio as pin

from inertia_id_ros.core.robots import configuration, example_robot_data_dir, joint_id, load_model
from inertia_id_ros.errors import ConfigError, ProblemError
from inertia_id_ros.motion.trajectory import ExcitationTrajectory
from inertia_id_ros.motion.workspace import Box, HalfSpace, Region, parse_region, read_yaml_list

DEFAULT_CHECK_RATE_HZ = 50.0
"""Hz: configurations checked per second of motion by :meth:`CollisionChecker.clearance`."""


@dataclass(frozen=True)
class Clearance:
    """The smallest distance (m; negative: penetration) between two collision bodies over the
    checked samples, the two geometry names and the time (s) it occurs."""

    distance: float
    pair: tuple[str, str]
    time: float

    def shortfall(self, margin: float) -> str:
        """Why this clearance fails ``margin`` (m), in words; ``""`` when it meets it."""
        if self.distance >= margin:
            return ""
        close = (
            f"overlap by {-1e3 * self.distance:.1f} mm"
            if self.distance < 0.0
            else f"come within {1e3 * self.distance:.1f} mm"
        )
        return (
            f"{self.pair[0]} and {self.pair[1]} {close} at t = {self.time:.2f} s, "
            f"{1e3 * (margin - self.distance):.1f} mm closer than the collision margin "
            f"{1e3 * margin:g} mm"
        )


@dataclass(frozen=True)
class Obstacle:
    """A fixed obstacle ``region`` (root frame) named ``name``; the links in ``ignore`` may touch
    it."""

    name: str
    region: Region
    ignore: tuple[str, ...] = field(default=())


def load_environment(path: str | Path) -> tuple[Obstacle, ...]:
    """The obstacles of an environment file (module docstring);
    :class:`~inertia_id_ros.errors.ConfigError` names the file and the entry that is wrong."""
    obstacles = []
    for k, entry in enumerate(read_yaml_list(path, "obstacles")):
        where = f"{path}: obstacles[{k}]"
        ignore = entry.get("ignore", [])
        if not isinstance(ignore, list) or not all(isinstance(n, str) for n in ignore):
            raise ConfigError(f"{where}: 'ignore' must list link names, got {ignore!r}")
        kind, region = parse_region(entry, where)
        obstacles.append(Obstacle(str(entry.get("name", f"{kind} {k}")), region, tuple(ignore)))
    return tuple(obstacles)


def _obstacle_geometry(region: Region) -> tuple[coal.CollisionGeometry, pin.SE3]:
    """The coal shape of ``region`` and its placement in the root frame."""
    if isinstance(region, HalfSpace):  # coal's half-space is the solid n . p <= d
        return coal.Halfspace(region.normal, region.offset), pin.SE3.Identity()
    if isinstance(region, Box):
        return coal.Box(*region.size), pin.SE3(region.rotation, region.center)
    return coal.Sphere(region.radius), pin.SE3(np.eye(3), region.center)


class CollisionChecker:
    """Distances between the collision geometries (convex hulls) of ``urdf_path`` (meshes found
    through ``package_dirs``, plus example-robot-data's root and the directories pinocchio
    searches) over the pairs that ``srdf_path`` does not disable (no SRDF: no self-collision
    pairs), and between them and the ``obstacles`` (module docstring). Joints not named by the
    caller stay at their neutral position. Not thread-safe."""

    def __init__(
        self,
        urdf_path: str | Path,
        srdf_path: str | Path | None,
        package_dirs: Sequence[str | Path] | None = None,
        obstacles: Sequence[Obstacle] = (),
    ) -> None:
        self.model = load_model(urdf_path)
        dirs = [str(d) for d in package_dirs or ()]
        try:
            dirs.append(str(example_robot_data_dir().parent.parent))
        except FileNotFoundError:
            pass
        try:
            self.geometry = pin.buildGeomFromUrdf(
                self.model, str(urdf_path), pin.GeometryType.COLLISION, package_dirs=dirs
            )
        except (RuntimeError, ValueError) as e:
            raise ProblemError(f"cannot load the collision geometry of {urdf_path}: {e}") from None
        if not self.geometry.geometryObjects:
            raise ProblemError(f"{urdf_path} has no collision geometry")
        for obj in self.geometry.geometryObjects:
            if isinstance(obj.geometry, coal.BVHModelBase):
                obj.geometry.buildConvexRepresentation(False)
                obj.geometry = obj.geometry.convex
        if srdf_path is not None:
            if not Path(srdf_path).is_file():
                raise ProblemError(f"SRDF file {str(srdf_path)!r} does not exist")
            self.geometry.addAllCollisionPairs()
            pin.removeCollisionPairs(self.model, self.geometry, str(srdf_path))
        self._add_obstacles(obstacles)
        if not self.geometry.collisionPairs:
            raise ProblemError("no collision pairs are left to check")
        self._data = self.model.createData()
        self._geometry_data = pin.GeometryData(self.geometry)
        self._pairs = [(p.first, p.second) for p in self.geometry.collisionPairs]

    def _add_obstacles(self, obstacles: Sequence[Obstacle]) -> None:
        """Fix ``obstacles`` to the root and pair each with every moving link it does not
        ignore."""
        robot = list(enumerate(self.geometry.geometryObjects))
        links = {self.model.frames[obj.parentFrame].name for _, obj in robot}
        for obstacle in obstacles:
            unknown = sorted(set(obstacle.ignore) - links)
            if unknown:
                raise ConfigError(
                    f"obstacle {obstacle.name!r} ignores {unknown}, which carry no "
                    f"collision geometry (links: {sorted(links)})"
                )
            shape, placement = _obstacle_geometry(obstacle.region)
            index = self.geometry.addGeometryObject(
                pin.GeometryObject(obstacle.name, 0, 0, placement, shape)
            )
            for k, obj in robot:
                if (
                    obj.parentJoint != 0
                    and self.model.frames[obj.parentFrame].name not in obstacle.ignore
                ):
                    self.geometry.addCollisionPair(pin.CollisionPair(k, index))

    @property
    def n_pairs(self) -> int:
        """Number of collision pairs checked."""
        return len(self._pairs)

    def pair_names(self, k: int) -> tuple[str, str]:
        """Names of the two geometries of pair ``k``."""
        objects = self.geometry.geometryObjects
        return objects[self._pairs[k][0]].name, objects[self._pairs[k][1]].name

    def _configuration(self, joint_names: Sequence[str], q: np.ndarray) -> np.ndarray:
        return configuration(self.model, dict(zip(joint_names, np.asarray(q).tolist())))

    def _closest(self, joint_names: Sequence[str], Q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per sample of ``Q`` (N, n): the smallest distance (N,) and its pair (N,)."""
        distances, pairs = np.empty(len(Q)), np.empty(len(Q), dtype=int)
        results = self._geometry_data.distanceResults
        for i, q in enumerate(Q):
            pairs[i] = pin.computeDistances(
                self.model,
                self._data,
                self.geometry,
                self._geometry_data,
                self._configuration(joint_names, q),
            )
            distances[i] = results[int(pairs[i])].min_distance
        return distances, pairs

    def distances(self, joint_names: Sequence[str], Q: np.ndarray) -> np.ndarray:
        """(N, n_pairs) distances (m) at joint positions ``Q`` (N, n) of ``joint_names``."""
        out = np.empty((len(Q), self.n_pairs))
        for i, q in enumerate(Q):
            pin.computeDistances(
                self.model,
                self._data,
                self.geometry,
                self._geometry_data,
                self._configuration(joint_names, q),
            )
            out[i] = [r.min_distance for r in self._geometry_data.distanceResults]
        return out

    def near(
        self, joint_names: Sequence[str], Q: np.ndarray, threshold: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every (sample, pair) closer than ``threshold`` (m): sample indices (K,), pair indices
        (K,), distances (K,) and their gradients (K, n) w.r.t. the positions of ``joint_names``
        (``d' = normal . (v_2 - v_1)`` at the nearest points)."""
        columns = [self.model.joints[joint_id(self.model, name)].idx_v for name in joint_names]
        model, data, geometry, gdata = self.model, self._data, self.geometry, self._geometry_data
        world = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
        samples, pairs, values, gradients = [], [], [], []
        closest, _ = self._closest(joint_names, Q)
        for i in np.flatnonzero(closest < threshold):
            q = self._configuration(joint_names, Q[i])
            pin.computeJointJacobians(model, data, q)
            pin.computeDistances(model, data, geometry, gdata, q)
            near_pairs = [
                k for k, r in enumerate(gdata.distanceResults) if r.min_distance < threshold
            ]
            for k in near_pairs:
                result = pin.computeDistance(geometry, gdata, int(k))
                jacobians = []
                for obj_index, point in (
                    (self._pairs[k][0], result.getNearestPoint1()),
                    (self._pairs[k][1], result.getNearestPoint2()),
                ):
                    joint = geometry.geometryObjects[obj_index].parentJoint
                    J = pin.getJointJacobian(model, data, joint, world)
                    lever = point - data.oMi[joint].translation
                    jacobians.append(J[:3] - pin.skew(lever) @ J[3:])
                samples.append(i)
                pairs.append(k)
                values.append(result.min_distance)
                gradients.append((result.normal @ (jacobians[1] - jacobians[0]))[columns])
        n = len(joint_names)
        return (
            np.array(samples, dtype=int),
            np.array(pairs, dtype=int),
            np.array(values),
            np.array(gradients).reshape(-1, n),
        )

    def clearance(
        self, trajectory: ExcitationTrajectory, rate_hz: float = DEFAULT_CHECK_RATE_HZ
    ) -> Clearance:
        """Smallest distance over the trajectory sampled at ``rate_hz`` (both ends included)."""
        times = np.linspace(
            0.0, trajectory.duration, max(int(np.ceil(trajectory.duration * rate_hz)), 1) + 1
        )
        positions, _, _ = trajectory.sample(times)
        distances, pairs = self._closest(trajectory.joint_names, positions)
        i = int(np.argmin(distances))
        return Clearance(float(distances[i]), self.pair_names(int(pairs[i])), float(times[i]))
