"""Driving the online estimators in-process; measuring their bodies."""

from __future__ import annotations

import numpy as np

from inertia_id_ros.sim.payload import PANDA_HOME


def rms_radius(theta: np.ndarray) -> float:
    """RMS distance (m) of a body's mass from its frame's origin, ``sqrt(tr(S) / m)`` (``S`` the
    second moments of ``theta`` (10,)): what a sphere about the origin bounds on average."""
    from inertia_id_ros.offline.volumes import second_moments

    return float(np.sqrt(np.trace(second_moments(theta)) / theta[0]))


def solve_while_feeding(estimator, add_sample, n: int, allowed: tuple[str, ...]) -> int:
    """Call ``add_sample(k)`` for ``k < n`` from a producer thread while this thread processes
    and solves ``estimator``; halfway the producer waits for a successful solve, so the rest
    arrives while solves run, however the threads are scheduled. Every failed solve must have a
    reason in ``allowed``; returns the successful solves (> 0); re-raises the producer's error."""
    import threading

    from inertia_id_ros.errors import EstimateUnavailable

    failures: list[BaseException] = []
    solved = threading.Event()

    def produce() -> None:
        try:
            for k in range(n):
                if k == n // 2 and not solved.wait(timeout=60.0):
                    raise TimeoutError("no successful solve within 60 s")
                add_sample(k)
        except BaseException as error:  # noqa: BLE001 - re-raised below
            failures.append(error)

    producer = threading.Thread(target=produce)
    producer.start()
    solves = 0
    while producer.is_alive():
        estimator.process()
        try:
            estimator.solve()
        except EstimateUnavailable as why:
            assert why.reason in allowed, why
        else:
            solves += 1
            solved.set()
    producer.join()
    if failures:
        raise failures[0]
    assert solves > 0
    estimator.process()
    return solves


def block_window_rows() -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
    """3 s of random rows for a :class:`~inertia_id_ros.online.window.BlockWindow` of 5 columns:
    stamps ``t`` (30,) at 10 Hz, rows (30, 3, 5) of which rows 1 and 2 touch only columns 3 and
    4, measurements (30, 3), and those two row groups."""
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(30, 3, 5))
    rows[:, 1:, :3] = 0.0
    f = rng.normal(size=(30, 3))
    groups = [(np.array([0]), np.arange(5)), (np.array([1, 2]), np.array([3, 4]))]
    return np.arange(30) * 0.1, rows, f, groups


T0 = 1000.0  # s, first stamp


def turn_joint_7(t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """From the home pose (flange down), only joint 7 turns, about the vertical: gravity stays
    fixed in the sensor frame, so the data cannot tell the offset from the weight."""
    t = np.atleast_1d(t)
    q = np.tile(PANDA_HOME, (t.size, 1))
    dq, ddq = np.zeros_like(q), np.zeros_like(q)
    q[:, 6] += 1.5 * np.sin(0.8 * t)
    dq[:, 6] = 1.2 * np.cos(0.8 * t)
    ddq[:, 6] = -0.96 * np.sin(0.8 * t)
    return q, dq, ddq
