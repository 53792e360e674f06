"""How many BLAS and OpenMP threads the CLI and the ROS processes use.

Every matrix this package factors or multiplies is small (a 4 x 4 LMI block per body, normal
equations of at most a few hundred columns, regressors of tens of thousands of rows by at most a
few hundred columns). A multi-threaded BLAS gains next to nothing on such work, and on a busy
machine its spinning threads compete with each other and with the other processes for the cores:
whole-body solves on a loaded 2-core machine took 10 to 100 times longer with the default thread
count than with one thread (``benchmarks/bench_threads.py`` measures it). So the entry points
(``inertia-id``, ``inertia-id-node``, ``inertia-id-sim``) call :func:`limit_threads` first, and
use one thread unless told otherwise.

Override: ``INERTIA_ID_THREADS=N`` (a whole number >= 1). A user who already sets
``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS`` or ``MKL_NUM_THREADS`` keeps that setting. Importing
the library (``import inertia_id_ros``) changes nothing: only the entry points call this (and the
scripts in ``benchmarks/``, so that they measure what users get; :func:`apply_threads_option`
for those with a ``--threads`` option).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import MutableMapping

from inertia_id_ros.errors import InputError

THREADS_VARIABLE = "INERTIA_ID_THREADS"
"""Environment variable that sets the BLAS/OpenMP thread count of the CLI and the ROS processes."""

DEFAULT_THREADS = 1
"""BLAS/OpenMP threads when neither :data:`THREADS_VARIABLE` nor a library's own variable is set."""

LIBRARY_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
"""The thread-count variables that OpenBLAS, OpenMP and MKL read when they load."""

LIBRARY_DEFAULTS = "default"
"""The ``--threads`` value (:func:`apply_threads_option`) that imposes no count: the libraries'
own defaults, or the user's own variables, apply."""


def configured_threads(environ: MutableMapping[str, str] = os.environ) -> int | None:
    """The thread count to impose: :data:`THREADS_VARIABLE` if set, else ``None`` when the user
    set one of :data:`LIBRARY_VARIABLES` (the libraries obey it already), else
    :data:`DEFAULT_THREADS`. Raises :class:`~inertia_id_ros.errors.InputError` (a ``ValueError``)
    naming the variable if its value is not a whole number >= 1."""
    value = environ.get(THREADS_VARIABLE, "").strip()
    if value:
        try:
            threads = int(value)
        except ValueError:
            threads = 0
        if threads < 1:
            raise InputError(f"{THREADS_VARIABLE}={value!r}: expected a whole number >= 1")
        return threads
    if any(environ.get(variable) for variable in LIBRARY_VARIABLES):
        return None
    return DEFAULT_THREADS


def limit_threads(environ: MutableMapping[str, str] = os.environ) -> int | None:
    """Impose :func:`configured_threads` on this process and its children: the libraries'
    variables for what loads later (and for child processes), and ``threadpoolctl`` for BLAS and
    OpenMP libraries already loaded. Returns the count imposed (``None``: the user's own
    variables apply)."""
    threads = configured_threads(environ)
    if threads is None:
        return None
    for variable in LIBRARY_VARIABLES:
        environ[variable] = str(threads)
    if environ is os.environ and any(name in sys.modules for name in ("numpy", "scipy")):
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=threads)
    return threads


def add_threads_option(parser: argparse.ArgumentParser) -> None:
    """A benchmark's ``--threads`` option: BLAS threads, 1 by default (as the node and the
    CLI); apply it with :func:`apply_threads_option` before numpy loads."""
    parser.add_argument(
        "--threads",
        default="1",
        help=f"BLAS threads (OPENBLAS_NUM_THREADS etc.; '{LIBRARY_DEFAULTS}' leaves them)",
    )


def apply_threads_option(value: str, environ: MutableMapping[str, str] = os.environ) -> int | None:
    """Apply a ``--threads`` option of a benchmark, before it loads numpy: a count ``N`` sets
    :data:`THREADS_VARIABLE` to it and calls :func:`limit_threads` (N threads, whatever the
    libraries' variables said); :data:`LIBRARY_DEFAULTS` imposes nothing. Returns the count
    imposed (``None``: none). Raises :class:`~inertia_id_ros.errors.InputError` naming the
    variable if ``N`` is not a whole number >= 1."""
    if value == LIBRARY_DEFAULTS:
        return None
    environ[THREADS_VARIABLE] = value
    return limit_threads(environ)
