"""Input validation shared by the online estimators: stamps, clock resets, joint states.

Every check raises :class:`~inertia_id_ros.errors.SampleRejected` with a machine-readable
``reason`` (the estimators count drops by it); nothing here holds state beyond the last accepted
stamp, and nothing is thread-safe (the estimators call it under their lock).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from inertia_id_ros.errors import SampleRejected

JOINT_STATE = "joint_state"
"""Input kind: a joint state (counter key of ``received``/``processed``)."""
WRENCH = "wrench"
"""Input kind: an F/T wrench."""


class ClockResetDetector:
    """Tells a reset of an input's clock (a driver restart, a looped bag, simulated time reset)
    from stale or misordered samples: stamps more than ``clock_jump_sec`` (s) older than the
    newest accepted one are a reset once they have gone on, increasing, for ``clock_jump_sec`` of
    their own time; until then they are dropped as ``out_of_order``, like a stale burst."""

    def __init__(self, clock_jump_sec: float) -> None:
        self.clock_jump_sec = clock_jump_sec
        self._first: float | None = None
        self._previous: float | None = None

    def in_step(self) -> None:
        """Samples in the input's current time base arrived: forget a stale run."""
        self._first = self._previous = None

    def is_reset(self, t: float, newest: float | None) -> bool:
        """Whether the sample stamped ``t`` (s) starts afresh (``newest``: the input's newest
        accepted stamp)."""
        if newest is None or not np.isfinite(t) or t >= newest - self.clock_jump_sec:
            self.in_step()
            return False
        if self._first is None or self._previous is None or t <= self._previous:
            self._first = t
        self._previous = t
        if t - self._first >= self.clock_jump_sec:
            self._first = self._previous = None
            return True
        return False


def check_stamp(t: float, last: float | None, what: str) -> None:
    """Raise :class:`SampleRejected` unless the stamp ``t`` (s) is finite and newer than ``last``
    (the previous accepted stamp of the same input; reasons ``non_finite``, ``duplicate_stamp``,
    ``out_of_order``)."""
    if not np.isfinite(t):
        raise SampleRejected("non_finite", f"{what} stamp is {t}")
    if last is not None and t == last:
        raise SampleRejected("duplicate_stamp", f"{what} stamp {t:.6f} s repeats the previous one")
    if last is not None and t < last:
        raise SampleRejected(
            "out_of_order", f"{what} stamp {t:.6f} s is older than the previous {last:.6f} s"
        )


def passes_at_once(
    t: np.ndarray,
    values: np.ndarray,
    width: int,
    frame_ids: Sequence[str | None],
    expected_frame: str | None,
    last: float | None,
) -> bool:
    """Whether ``N`` samples, stamps ``t`` (N,) (s), ``values`` (N, width), ``frame_ids`` (N,)
    (``None``: not given), pass every per-sample check at once: finite, stamps increasing and
    newer than ``last`` (s), every frame given ``expected_frame`` (``None``: not checked). A
    batch that does not goes sample by sample, for each rejection's reason."""
    n = t.size
    return bool(
        n > 0
        and values.shape == (n, width)
        and len(frame_ids) == n
        and np.isfinite(t).all()
        and np.all(np.diff(t) > 0)
        and (last is None or t[0] > last)
        and np.isfinite(values).all()
        and (expected_frame is None or all(f is None or f == expected_frame for f in frame_ids))
    )


def rejections(
    add: Callable[..., object], *columns: Sequence[object] | np.ndarray
) -> list[SampleRejected]:
    """``add(*sample)`` for each sample of ``columns`` (N entries each) in turn: the
    rejections it raised, in order."""
    rejected = []
    for sample in zip(*columns):
        try:
            add(*sample)
        except SampleRejected as why:
            rejected.append(why)
    return rejected


def check_vector(x: np.ndarray, size: int, what: str) -> np.ndarray:
    """``x`` as a float vector of ``size`` values; raises :class:`SampleRejected`
    (``length_mismatch``, ``non_finite``) naming ``what``."""
    x = np.asarray(x, dtype=float).reshape(-1)
    if x.size != size:
        raise SampleRejected("length_mismatch", f"{what} has {x.size} values, need {size}")
    if not np.isfinite(x).all():
        raise SampleRejected("non_finite", f"{what} has NaN or Inf values")
    return x


def check_frame(frame_id: str | None, expected: str, what: str) -> None:
    """Raise :class:`SampleRejected` (``wrong_frame``) when ``frame_id`` is given (not
    ``None``) and is not ``expected``."""
    if frame_id is not None and frame_id != expected:
        raise SampleRejected("wrong_frame", f"{what} in frame {frame_id!r}, expected {expected!r}")


@dataclass(frozen=True)
class JointStateSample:
    """A validated joint state: stamp ``t`` (s); positions ``q`` (n,) (rad, m), velocities ``dq``
    (n,) or ``None``, raw efforts ``effort`` (n,) or ``None``, in the validator's joint order."""

    t: float
    q: np.ndarray
    dq: np.ndarray | None
    effort: np.ndarray | None


class JointStateValidator:
    """Validates joint states (any joint order) for the joints ``joint_names`` of a model whose
    joints are ``model_joint_names``; remembers the last accepted stamp. Not thread-safe.

    ``ignore_unknown``: joints absent from the model are ignored instead of rejected;
    ``use_velocity``: keep measured velocities (else they are dropped unchecked); ``need_effort``:
    a joint state without efforts is rejected (reason ``missing_effort``); without it efforts
    are dropped unchecked.
    """

    def __init__(
        self,
        joint_names: Sequence[str],
        model_joint_names: Iterable[str],
        ignore_unknown: bool = False,
        use_velocity: bool = True,
        need_effort: bool = False,
    ) -> None:
        self.joint_names = tuple(joint_names)
        self._model_joint_names = frozenset(model_joint_names)
        self.ignore_unknown = ignore_unknown
        self.use_velocity = use_velocity
        self.need_effort = need_effort
        self.last_t: float | None = None
        self._index_cache: dict[tuple[str, ...], np.ndarray] = {}

    def reset(self) -> None:
        """Forget the last stamp (any stamp is accepted next)."""
        self.last_t = None

    def _indices(self, names: tuple[str, ...]) -> np.ndarray:
        """Positions in ``names`` of :attr:`joint_names` (cached per name list)."""
        indices = self._index_cache.get(names)
        if indices is not None:
            return indices
        position = {}
        for i, name in enumerate(names):
            if name in position:
                raise SampleRejected("duplicate_joint", f"joint {name!r} appears twice")
            position[name] = i
        unknown = [name for name in names if name not in self._model_joint_names]
        if unknown and not self.ignore_unknown:
            raise SampleRejected("unknown_joint", f"joint(s) {unknown} are not in the robot model")
        missing = [name for name in self.joint_names if name not in position]
        if missing:
            raise SampleRejected(
                "missing_joint",
                f"joint state lacks joint(s) {missing} (needed: {list(self.joint_names)})",
            )
        indices = np.array([position[name] for name in self.joint_names], dtype=int)
        if len(self._index_cache) < 16:
            self._index_cache[names] = indices
        return indices

    def validate(
        self,
        t: float,
        names: Sequence[str],
        q: np.ndarray,
        dq: np.ndarray | None = None,
        effort: np.ndarray | None = None,
    ) -> JointStateSample:
        """The joint state ``(t (s), names, q, dq, effort)`` (``dq``, ``effort``: ``None`` or
        empty when absent) reordered to :attr:`joint_names`; records ``t`` as the last stamp.

        Raises :class:`SampleRejected` with reason ``non_finite``, ``length_mismatch``,
        ``duplicate_joint``, ``unknown_joint``, ``missing_joint``, ``missing_effort``,
        ``duplicate_stamp`` or ``out_of_order``.
        """
        t = float(t)
        names = tuple(names)
        q = np.asarray(q, dtype=float).reshape(-1)
        dq, effort = (
            None if v is None or len(v) == 0 else np.asarray(v, dtype=float).reshape(-1)
            for v in (dq, effort)
        )
        sizes = [v.size for v in (q, dq, effort) if v is not None]
        if any(size != len(names) for size in sizes):
            raise SampleRejected(
                "length_mismatch",
                f"{len(names)} names, {q.size} positions, "
                f"{0 if dq is None else dq.size} velocities, "
                f"{0 if effort is None else effort.size} efforts",
            )
        indices = self._indices(names)
        if self.need_effort and effort is None:
            raise SampleRejected("missing_effort", f"joint state at {t:.6f} s has no efforts")
        q = q[indices]
        dq = dq[indices] if dq is not None and self.use_velocity else None
        effort = effort[indices] if effort is not None and self.need_effort else None
        if not all(np.isfinite(v).all() for v in (q, dq, effort) if v is not None):
            raise SampleRejected("non_finite", f"joint state at {t:.6f} s has NaN or Inf values")
        check_stamp(t, self.last_t, "joint state")
        self.last_t = t
        return JointStateSample(t, q, dq, effort)
