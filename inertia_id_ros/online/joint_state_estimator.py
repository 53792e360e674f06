"""The online estimators whose window's samples are the joint states themselves (the links, a
payload from joint torques): :class:`JointStateEstimator`."""

from __future__ import annotations

import numpy as np

from inertia_id_ros.online.estimator import ConfigT, OnlineEstimator
from inertia_id_ros.online.inputs import JOINT_STATE, JointStateValidator
from inertia_id_ros.online.window import SlidingWindow


class JointStateEstimator(OnlineEstimator[ConfigT, SlidingWindow]):
    """An online estimator whose window's samples are the joint states themselves, their efforts
    the measurement (the links, a payload from joint torques): the buffered joint states become
    rows once the filter's look-ahead covers them, ``rows_per_sample`` rows of ``n_params``
    columns each in a :class:`~inertia_id_ros.online.window.SlidingWindow`; ``_rows`` gets their
    efforts (N, n) as ``batch.measured``."""

    sample_kind = JOINT_STATE
    sample_name = "joint states"

    def __init__(
        self, config: ConfigT, joint_input: JointStateValidator, n_params: int, rows_per_sample: int
    ) -> None:
        window = SlidingWindow(
            config.window_sec, n_params, config.window_capacity, rows_per_sample=rows_per_sample
        )
        super().__init__(config, joint_input, window)
        self._t_consumed: float = -np.inf
        """Stamp of the newest joint state processed or dropped by :meth:`process`."""

    def _joint_accepted(self, t: np.ndarray) -> None:
        joints = self._joints
        pushed_out = len(joints) + t.size - joints.capacity
        if pushed_out > 0:  # the oldest are pushed out: count those not yet processed
            unprocessed = int(np.count_nonzero(joints["t"][:pushed_out] > self._t_consumed))
            self.dropped["overflow"] += unprocessed + max(pushed_out - len(joints), 0)

    def _pending_stamps(self, limit: int) -> np.ndarray:
        t_all = self._joints["t"]
        start = int(np.searchsorted(t_all, self._t_consumed, side="right"))
        return t_all[start : start + limit]

    def _take_samples(self, consumed: int, ready: np.ndarray) -> np.ndarray:
        joints = self._joints
        start = int(np.searchsorted(joints["t"], self._t_consumed, side="right"))
        effort = joints["effort"][start + ready].copy()
        self._t_consumed = float(joints["t"][start + consumed - 1])
        return effort

    def _pending_count(self) -> int:
        return len(self._joints) - int(
            np.searchsorted(self._joints["t"], self._t_consumed, side="right")
        )

    def _clear_pending(self) -> None:
        self._t_consumed = -np.inf
