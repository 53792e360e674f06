"""Self-collision distances of a joint motion: pinocchio's collision geometry (coal) of a URDF over
the pairs an SRDF leaves (its ``disable_collisions`` removed), with their gradients.

Every mesh is replaced by its convex hull: the hull contains the mesh, so its distance is a lower
bound of the mesh's (conservative), and convex distances (GJK) are about a hundred times faster
than mesh ones, fast enough for the design's optimiser. A negative distance is a penetration
depth; its gradient (from EPA's witness points) is approximate, while that of a positive distance
is exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import coal
import numpy as np
import pinocchio as pin

from inertia_id_ros.core.robots import configuration, example_robot_data_dir, joint_id, load_model
from inertia_id_ros.errors import ProblemError
from inertia_id_ros.motion.trajectory import ExcitationTrajectory

DEFAULT_CHECK_RATE_HZ = 50.0
"""Hz: configurations checked per second of motion by :meth:`SelfCollisionChecker.clearance`."""


@dataclass(frozen=True)
class Clearance:
    """The smallest distance (m; negative: penetration) between two collision bodies over the
    checked samples, the two geometry names and the time (s) it occurs."""

    distance: float
    pair: tuple[str, str]
    time: float


class SelfCollisionChecker:
    """Distances between the collision geometries (convex hulls) of ``urdf_path`` (meshes found
    through ``package_dirs``, plus example-robot-data's root and the directories pinocchio
    searches) over the pairs that ``srdf_path`` does not disable. Joints not named by the caller
    stay at their neutral position. Not thread-safe."""

    def __init__(self, urdf_path: str | Path, srdf_path: str | Path,
                 package_dirs: Sequence[str | Path] | None = None) -> None:
        self.model = load_model(urdf_path)
        dirs = [str(d) for d in package_dirs or ()]
        try:
            dirs.append(str(example_robot_data_dir().parent.parent))
        except FileNotFoundError:
            pass
        try:
            self.geometry = pin.buildGeomFromUrdf(self.model, str(urdf_path),
                                                  pin.GeometryType.COLLISION, package_dirs=dirs)
        except (RuntimeError, ValueError) as e:
            raise ProblemError(f"cannot load the collision geometry of {urdf_path}: {e}") from None
        if not self.geometry.geometryObjects:
            raise ProblemError(f"{urdf_path} has no collision geometry")
        for obj in self.geometry.geometryObjects:
            if isinstance(obj.geometry, coal.BVHModelBase):
                obj.geometry.buildConvexRepresentation(False)
                obj.geometry = obj.geometry.convex
        self.geometry.addAllCollisionPairs()
        if not Path(srdf_path).is_file():
            raise ProblemError(f"SRDF file {str(srdf_path)!r} does not exist")
        pin.removeCollisionPairs(self.model, self.geometry, str(srdf_path))
        if not self.geometry.collisionPairs:
            raise ProblemError("no collision pairs are left to check")
        self._data = self.model.createData()
        self._geometry_data = pin.GeometryData(self.geometry)
        self._pairs = [(p.first, p.second) for p in self.geometry.collisionPairs]

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
            pairs[i] = pin.computeDistances(self.model, self._data, self.geometry,
                                            self._geometry_data,
                                            self._configuration(joint_names, q))
            distances[i] = results[int(pairs[i])].min_distance
        return distances, pairs

    def distances(self, joint_names: Sequence[str], Q: np.ndarray) -> np.ndarray:
        """(N, n_pairs) distances (m) at joint positions ``Q`` (N, n) of ``joint_names``."""
        out = np.empty((len(Q), self.n_pairs))
        for i, q in enumerate(Q):
            pin.computeDistances(self.model, self._data, self.geometry, self._geometry_data,
                                 self._configuration(joint_names, q))
            out[i] = [r.min_distance for r in self._geometry_data.distanceResults]
        return out

    def near(self, joint_names: Sequence[str], Q: np.ndarray, threshold: float
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
            near_pairs = [k for k, r in enumerate(gdata.distanceResults)
                          if r.min_distance < threshold]
            for k in near_pairs:
                result = pin.computeDistance(geometry, gdata, int(k))
                jacobians = []
                for obj_index, point in ((self._pairs[k][0], result.getNearestPoint1()),
                                         (self._pairs[k][1], result.getNearestPoint2())):
                    joint = geometry.geometryObjects[obj_index].parentJoint
                    J = pin.getJointJacobian(model, data, joint, world)
                    lever = point - data.oMi[joint].translation
                    jacobians.append(J[:3] - pin.skew(lever) @ J[3:])
                samples.append(i)
                pairs.append(k)
                values.append(result.min_distance)
                gradients.append((result.normal @ (jacobians[1] - jacobians[0]))[columns])
        n = len(joint_names)
        return (np.array(samples, dtype=int), np.array(pairs, dtype=int), np.array(values),
                np.array(gradients).reshape(-1, n))

    def clearance(self, trajectory: ExcitationTrajectory,
                  rate_hz: float = DEFAULT_CHECK_RATE_HZ) -> Clearance:
        """Smallest distance over the trajectory sampled at ``rate_hz`` (both ends included)."""
        times = np.linspace(0.0, trajectory.duration,
                            max(int(np.ceil(trajectory.duration * rate_hz)), 1) + 1)
        positions, _, _ = trajectory.sample(times)
        distances, pairs = self._closest(trajectory.joint_names, positions)
        i = int(np.argmin(distances))
        return Clearance(float(distances[i]), self.pair_names(int(pairs[i])), float(times[i]))
