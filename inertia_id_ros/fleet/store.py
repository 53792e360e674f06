"""Where a fleet's results live: a database (SQLite by default, or a PostgreSQL server).

SQLite is the standard library's ``sqlite3`` (a file); a PostgreSQL server is reached by its URL
(``postgresql://...``, through ``psycopg``). Three tables:

- ``runs``: one row per run (robot, run, time, tool, mode, status, error, findings as JSON, the
  package's version, the run's time to identify in s);
- ``parameters``: one row per run and parameter (value and standard error, SI units);
- ``pooled``: one row per robot, tool and parameter: its history's pooled estimate
  (:mod:`inertia_id_ros.fleet.drift`).

Each run is written in one transaction as it completes (:meth:`Store.record`): an interrupted
fleet loses none of the runs already written."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inertia_id_ros.errors import InputError
from inertia_id_ros.fleet.tasks import RunOutcome, RunRecord

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS runs (
        robot TEXT NOT NULL, run TEXT NOT NULL, time TEXT NOT NULL, tool TEXT NOT NULL,
        mode TEXT NOT NULL, status TEXT NOT NULL, error TEXT NOT NULL, findings TEXT NOT NULL,
        version TEXT NOT NULL, elapsed DOUBLE PRECISION NOT NULL, PRIMARY KEY (robot, run))""",
    """CREATE TABLE IF NOT EXISTS parameters (
        robot TEXT NOT NULL, run TEXT NOT NULL, name TEXT NOT NULL,
        value DOUBLE PRECISION NOT NULL, std DOUBLE PRECISION, PRIMARY KEY (robot, run, name))""",
    """CREATE TABLE IF NOT EXISTS pooled (
        robot TEXT NOT NULL, tool TEXT NOT NULL, name TEXT NOT NULL,
        value DOUBLE PRECISION NOT NULL, std DOUBLE PRECISION, runs INTEGER NOT NULL,
        PRIMARY KEY (robot, tool, name))""",
)
"""The tables (SQL both SQLite and PostgreSQL take)."""
DEFAULT_STORE = "fleet.sqlite"
"""The default database: an SQLite file beside where the command runs."""


@dataclass(frozen=True)
class History:
    """One parameter's history on one robot, in time order: the runs' ``runs``, ``times``,
    ``tools``, ``values`` and standard errors ``stds``."""

    robot: str
    name: str
    runs: tuple[str, ...]
    times: tuple[str, ...]
    tools: tuple[str, ...]
    values: tuple[float, ...]
    stds: tuple[float, ...]


class Store:
    """A fleet's database (see the module docstring), from a URL or path :func:`open_store`."""

    def __init__(self, connection: Any, placeholder: str, url: str) -> None:
        self._db = connection
        self._mark = placeholder
        self.url = url
        with self._transaction() as cursor:
            for statement in SCHEMA:
                cursor.execute(statement)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection."""
        self._db.close()

    def _sql(self, statement: str) -> str:
        return statement.replace("?", self._mark)

    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        cursor = self._db.cursor()
        try:
            yield cursor
            self._db.commit()
        except BaseException:
            self._db.rollback()
            raise
        finally:
            cursor.close()

    def _rows(self, statement: str, args: Iterable[object] = ()) -> list[tuple[Any, ...]]:
        with self._transaction() as cursor:
            cursor.execute(self._sql(statement), tuple(args))
            return list(cursor.fetchall())

    def stored(self) -> set[tuple[str, str]]:
        """``(robot, run)`` of every stored run."""
        return {(r, k) for r, k in self._rows("SELECT robot, run FROM runs")}

    def record(self, outcome: RunOutcome) -> None:
        """Store ``outcome`` (replacing the run's earlier result), in one transaction."""
        key = (outcome.robot, outcome.run)
        with self._transaction() as cursor:
            for table in ("parameters", "runs"):
                cursor.execute(self._sql(f"DELETE FROM {table} WHERE robot = ? AND run = ?"), key)
            cursor.execute(
                self._sql("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
                (
                    *key,
                    outcome.time,
                    outcome.tool,
                    outcome.mode,
                    outcome.status,
                    outcome.error,
                    json.dumps(list(outcome.findings)),
                    outcome.version,
                    outcome.elapsed,
                ),
            )
            cursor.executemany(
                self._sql("INSERT INTO parameters VALUES (?, ?, ?, ?, ?)"),
                [(*key, p.name, p.value, _finite(p.std)) for p in outcome.parameters],
            )

    def runs(self, robot: str | None = None) -> list[RunRecord]:
        """The stored runs (of ``robot``), by robot and time."""
        where, args = ("WHERE robot = ?", (robot,)) if robot else ("", ())
        rows = self._rows(f"SELECT * FROM runs {where} ORDER BY robot, time, run", args)
        return [
            RunRecord(r[0], r[1], r[2], r[3], r[4], r[5], r[6], tuple(json.loads(r[7])), r[8], r[9])
            for r in rows
        ]

    def robots(self) -> list[str]:
        """The robots with stored runs, by name."""
        return [r for (r,) in self._rows("SELECT DISTINCT robot FROM runs ORDER BY robot")]

    def histories(self, robot: str) -> list[History]:
        """Every parameter's history on ``robot`` (its identified runs, in time order)."""
        rows = self._rows(
            "SELECT p.name, p.run, r.time, r.tool, p.value, p.std FROM parameters p "
            "JOIN runs r ON r.robot = p.robot AND r.run = p.run WHERE p.robot = ? "
            "ORDER BY p.name, r.time, p.run",
            (robot,),
        )
        by_name: dict[str, list[tuple[Any, ...]]] = {}
        for name, run, time, tool, value, std in rows:
            std = float("nan") if std is None else std
            by_name.setdefault(name, []).append((run, time, tool, value, std))
        return [
            History(
                robot,
                name,
                *(tuple(column) for column in zip(*runs)),
            )
            for name, runs in by_name.items()
        ]

    def record_pooled(self, robot: str, rows: Iterable[tuple[str, str, float, float, int]]) -> None:
        """Replace ``robot``'s pooled estimates by ``rows``: ``(tool, name, value, std, runs)``."""
        with self._transaction() as cursor:
            cursor.execute(self._sql("DELETE FROM pooled WHERE robot = ?"), (robot,))
            cursor.executemany(
                self._sql("INSERT INTO pooled VALUES (?, ?, ?, ?, ?, ?)"),
                [(robot, *row) for row in rows],
            )

    def pooled(self, robot: str) -> list[tuple[str, str, float, float, int]]:
        """``robot``'s pooled estimates: ``(tool, name, value, std, runs)``."""
        return [
            (t, n, v, s, k)
            for t, n, v, s, k in self._rows(
                "SELECT tool, name, value, std, runs FROM pooled WHERE robot = ? "
                "ORDER BY name, tool",
                (robot,),
            )
        ]


def _finite(value: float) -> float | None:
    """``value``, or ``None`` (SQL NULL) when it is not finite."""
    return value if value == value and abs(value) != float("inf") else None


def open_store(url: str = DEFAULT_STORE) -> Store:
    """The database at ``url``: ``postgresql://user@host/db`` (or ``postgres://``) a PostgreSQL
    server; ``sqlite:///path`` or a plain path an SQLite file (created when missing)."""
    if url.startswith(("postgresql://", "postgres://")):
        try:
            import psycopg
        except ImportError:
            raise InputError(f"{url}: PostgreSQL needs the psycopg package") from None
        try:
            connection = psycopg.connect(url)
        except psycopg.Error as e:
            raise InputError(f"{url}: cannot connect: {str(e).strip()}") from None
        return Store(connection, "%s", url)
    import sqlite3

    path = url.removeprefix("sqlite:///") if url.startswith("sqlite:") else url
    if not Path(path).parent.is_dir():
        raise InputError(f"{url}: no folder {Path(path).parent}")
    return Store(sqlite3.connect(path, timeout=30.0), "?", url)
