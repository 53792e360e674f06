"""A simulated joint-trajectory controller: the robot's motion follows trajectory commands.

:class:`CommandFollower` is a :data:`~inertia_id_ros.sim.payload.Trajectory` (``t -> (q, dq,
ddq)``) for the simulators. Until the first command it plays its ``initial`` motion (the
simulator's built-in one, or rest). Each command (points with positions, velocities and
accelerations at stamps) takes over as joint_trajectory_controller does: from the controller's
current reference state at the command's start (or its arrival, if later) through the command's
later points, by quintic Hermite interpolation (:meth:`ExcitationTrajectory.sample`); after the
last point the reference holds its position. The robot tracks the reference ``lag`` s late:
``(q, dq, ddq)(t) = reference(t - lag)``, which keeps the three mutually consistent.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from inertia_id_ros.errors import TrajectoryError
from inertia_id_ros.motion.trajectory import ExcitationTrajectory
from inertia_id_ros.sim.payload import Trajectory

DEFAULT_TRACKING_LAG_SEC = 0.02
"""How late the simulated robot follows its reference (s)."""


def at_rest(q: Sequence[float]) -> Trajectory:
    """The motion that stays at ``q`` (n,)."""
    pose = np.asarray(q, dtype=float)

    def motion(t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = np.atleast_1d(np.asarray(t, dtype=float)).size
        return np.tile(pose, (n, 1)), np.zeros((n, pose.size)), np.zeros((n, pose.size))

    return motion


class CommandFollower:
    """The motion of joints ``joint_names`` following commands; see the module docstring.
    Thread-safe: commands may arrive while another thread samples the motion (at times after
    those already sampled: a command never changes the past)."""

    def __init__(
        self, initial: Trajectory, joint_names: Sequence[str], lag: float = DEFAULT_TRACKING_LAG_SEC
    ) -> None:
        if not (np.isfinite(lag) and lag >= 0.0):
            raise ValueError(f"lag must be finite and >= 0 (s), got {lag!r}")
        self.initial = initial
        self.joint_names = tuple(joint_names)
        self.lag = float(lag)
        self._segments: list[tuple[float, ExcitationTrajectory]] = []
        """(reference time at which it takes over (s), its motion from there)."""
        self._lock = threading.Lock()

    @property
    def commands(self) -> int:
        """Commands followed so far."""
        return len(self._segments)

    def command(
        self,
        t_arrival: float,
        t_start: float,
        times: np.ndarray,
        q: np.ndarray,
        dq: np.ndarray,
        ddq: np.ndarray,
    ) -> bool:
        """Follow a command that arrived at ``t_arrival`` (s, the motion's time), starting at
        ``t_start`` (s) with points at ``t_start + times`` (K,) of positions, velocities and
        accelerations (K, n), columns in ``joint_names`` order. False (ignored) when it has no
        point after it takes over."""
        q, dq, ddq = (
            np.asarray(a, dtype=float).reshape(-1, len(self.joint_names)) for a in (q, dq, ddq)
        )
        t_switch = max(float(t_arrival), float(t_start))
        stamps = float(t_start) + np.asarray(times, dtype=float).reshape(-1)
        later = stamps > t_switch + 1e-9
        if not later.any():
            return False
        with self._lock:
            q0, dq0, ddq0 = (a[0] for a in self._reference(np.array([t_switch])))
            try:
                segment = ExcitationTrajectory(
                    np.concatenate([[0.0], stamps[later] - t_switch]),
                    self.joint_names,
                    np.vstack([q0, q[later]]),
                    np.vstack([dq0, dq[later]]),
                    np.vstack([ddq0, ddq[later]]),
                )
            except TrajectoryError:
                return False
            self._segments.append((t_switch, segment))
        return True

    def _reference(self, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The controller's reference at times ``tau`` (N,) (lock held). Before the first
        command: the initial motion, ``lag`` s ahead (so the robot plays it on time)."""
        q, dq, ddq = (np.array(a, dtype=float) for a in self.initial(tau + self.lag))
        for t_switch, segment in self._segments:
            rows = tau >= t_switch
            if not rows.any():
                continue
            local = tau[rows] - t_switch
            inside = local <= segment.duration
            sq, sdq, sddq = segment.sample(local[inside])
            index = np.flatnonzero(rows)
            q[index[inside]], dq[index[inside]], ddq[index[inside]] = sq, sdq, sddq
            q[index[~inside]], dq[index[~inside]], ddq[index[~inside]] = segment.q[-1], 0.0, 0.0
        return q, dq, ddq

    def __call__(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The robot's ``(q, dq, ddq)`` (N, n) at times ``t`` (N,) (s)."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        with self._lock:
            return self._reference(t - self.lag)
