"""A fleet's runs identified on Dask distributed (``inertia-id fleet run``): one task per run
(:func:`~inertia_id_ros.fleet.tasks.identify_run`), on a local cluster of worker processes by
default or on an existing cluster given by its scheduler's address. The coordinating process
submits a bounded window of tasks, stores each outcome as it completes (one transaction) and
forgets it: its memory does not grow with the fleet. Runs already stored are skipped unless
``redo``; a run whose worker died (Dask retries it on another worker first) is left unstored for
the next run of the command. Then each robot's histories are pooled
(:func:`~inertia_id_ros.fleet.drift.pool_robot`).

Why Dask distributed: it runs Python functions as tasks on worker processes on one machine or on
a cluster with the same code (``LocalCluster`` or a scheduler's address), reschedules the tasks of
a worker that dies, and installs from PyPI in a few megabytes of pure Python (Ray brings a
hundreds-of-megabytes binary runtime for the same use here)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from inertia_id_ros.errors import InputError
from inertia_id_ros.fleet.manifest import Manifest
from inertia_id_ros.fleet.store import Store
from inertia_id_ros.fleet.tasks import OK, RunTask, identify_run

if TYPE_CHECKING:
    from distributed import Client


@dataclass(frozen=True)
class EngineOptions:
    """How to run a fleet: ``workers`` local worker processes (``None``: one per CPU), or the
    ``scheduler`` address of an existing Dask cluster (``tcp://host:8786``); ``redo`` runs
    already stored; ``window`` tasks queued per worker (the coordinator holds at most
    ``window * workers`` runs at once)."""

    workers: int | None = None
    scheduler: str | None = None
    redo: bool = False
    window: int = 4

    def __post_init__(self) -> None:
        if self.workers is not None and self.workers < 1:
            raise InputError(f"--workers must be >= 1, got {self.workers}")


@dataclass(frozen=True)
class FleetProgress:
    """Where a fleet's run stands: runs ``done`` (stored, failed ones included), of them
    ``failed`` (an error or a refusal), ``left`` to do, ``elapsed`` s since the first task was
    submitted and the estimated seconds ``eta`` left (``None`` before the first run ends)."""

    done: int
    failed: int
    left: int
    elapsed: float
    eta: float | None

    def line(self) -> str:
        """One line for people."""
        eta = "?" if self.eta is None else f"{self.eta:.0f} s"
        return f"{self.done} done ({self.failed} failed), {self.left} left, about {eta} left"


@dataclass(frozen=True)
class FleetRun:
    """What a fleet's run did: ``skipped`` runs already stored, the last :class:`FleetProgress`
    (``left``: runs not stored, e.g. their worker died), ``workers`` used and ``run_seconds``
    (the sum of the runs' own times, s)."""

    skipped: int
    progress: FleetProgress
    workers: int
    run_seconds: float


def fleet_tasks(manifest: Manifest, stored: set[tuple[str, str]], redo: bool) -> list[RunTask]:
    """One task per run of ``manifest`` not in ``stored`` (every run with ``redo``)."""
    tasks = []
    for robot in manifest.robots:
        for run in robot.runs:
            key = run.key(manifest.folder)
            if redo or (robot.name, key) not in stored:
                tasks.append(
                    RunTask(
                        robot.name,
                        key,
                        run.path,
                        run.time,
                        run.tool,
                        robot.mode,
                        robot.urdf,
                        robot.sensor_frame,
                        dict(robot.options),
                    )
                )
    return tasks


@contextmanager
def dask_client(options: EngineOptions) -> Iterator[Client]:
    """A client of the cluster at ``options.scheduler``, or of a local cluster of
    ``options.workers`` single-threaded worker processes (closed on leaving)."""
    import logging

    from distributed import Client, LocalCluster

    if options.scheduler is not None:
        try:
            client = Client(options.scheduler, timeout=10)
        except (OSError, TimeoutError) as e:
            raise InputError(f"{options.scheduler}: no Dask scheduler there ({e})") from None
        with client:
            yield client
        return
    with (
        LocalCluster(
            n_workers=options.workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",  # a free port (None still takes 8787: two clusters clash)
            silence_logs=logging.ERROR,
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


def run_fleet(
    manifest: Manifest,
    store: Store,
    options: EngineOptions = EngineOptions(),
    progress: Callable[[FleetProgress], None] | None = None,
) -> FleetRun:
    """Identify ``manifest``'s runs not yet in ``store`` on Dask, storing each as it ends, then
    pool each robot's histories; ``progress`` is told after each run."""
    from inertia_id_ros.fleet.drift import pool_robot

    tasks = fleet_tasks(manifest, store.stored(), options.redo)
    skipped = sum(len(r.runs) for r in manifest.robots) - len(tasks)
    with dask_client(options) as client:
        workers = max(1, len(client.scheduler_info(n_workers=-1)["workers"]))
        state = _Tally(len(tasks))
        if tasks:
            _drain(client, tasks, store, options.window * workers, state, progress)
    for robot in manifest.robots:
        pool_robot(store, robot.name)
    return FleetRun(skipped, state.progress(), workers, state.run_seconds)


class _Tally:
    """Counts of a fleet's run as it goes."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self.failed, self.lost = total, 0, 0, 0
        self.run_seconds = 0.0
        self.start = time.perf_counter()

    def progress(self) -> FleetProgress:
        elapsed = time.perf_counter() - self.start
        left = self.total - self.done
        eta = elapsed / self.done * (left - self.lost) if self.done else None
        return FleetProgress(self.done, self.failed, left, elapsed, eta)


def _drain(
    client: Client,
    tasks: list[RunTask],
    store: Store,
    window: int,
    tally: _Tally,
    progress: Callable[[FleetProgress], None] | None,
) -> None:
    """Run ``tasks`` with at most ``window`` submitted at once, storing each outcome."""
    from distributed import as_completed

    pending = iter(tasks)

    def submit() -> Any:
        task = next(pending, None)
        return None if task is None else client.submit(identify_run, task, pure=False)

    queue = as_completed([f for f in (submit() for _ in range(window)) if f is not None])
    for future in queue:
        try:
            outcome = future.result()
        except Exception:  # the worker died (Dask's retries exhausted): left for a re-run
            tally.lost += 1
        else:
            store.record(outcome)
            tally.done += 1
            tally.failed += outcome.status != OK
            tally.run_seconds += outcome.elapsed
        future.release()
        following = submit()
        if following is not None:
            queue.add(following)
        if progress is not None:
            progress(tally.progress())
