"""BLAS/OpenMP threads of the entry points: one by default, INERTIA_ID_THREADS overrides, the
libraries' own variables are left alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from inertia_id_ros.errors import InputError
from inertia_id_ros.threads import (
    DEFAULT_THREADS,
    LIBRARY_DEFAULTS,
    LIBRARY_VARIABLES,
    THREADS_VARIABLE,
    apply_threads_option,
    configured_threads,
    limit_threads,
)


def test_one_thread_unless_told_otherwise():
    assert DEFAULT_THREADS == 1
    assert configured_threads({}) == 1
    assert configured_threads({THREADS_VARIABLE: " 3 "}) == 3
    assert configured_threads({THREADS_VARIABLE: "2", "OPENBLAS_NUM_THREADS": "4"}) == 2


def test_the_users_library_variables_are_kept():
    environ = {"OMP_NUM_THREADS": "4"}
    assert configured_threads(environ) is None
    assert limit_threads(environ) is None
    assert environ == {"OMP_NUM_THREADS": "4"}


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_an_invalid_count_names_the_variable(value):
    with pytest.raises(InputError, match=f"{THREADS_VARIABLE}='{value}'"):
        configured_threads({THREADS_VARIABLE: value})


def test_limit_threads_sets_the_variables_for_what_loads_later():
    environ: dict[str, str] = {THREADS_VARIABLE: "2"}
    assert limit_threads(environ) == 2
    assert all(environ[variable] == "2" for variable in LIBRARY_VARIABLES)


def test_a_threads_option_count_overrides_the_library_variables():
    environ = {"OPENBLAS_NUM_THREADS": "4"}
    assert apply_threads_option("2", environ) == 2
    assert environ[THREADS_VARIABLE] == "2"
    assert all(environ[variable] == "2" for variable in LIBRARY_VARIABLES)


@pytest.mark.parametrize("environ", [{}, {"OMP_NUM_THREADS": "4"}])
def test_the_threads_option_default_imposes_nothing(environ):
    before = dict(environ)
    assert apply_threads_option(LIBRARY_DEFAULTS, environ) is None
    assert environ == before


def test_an_invalid_threads_option_names_the_variable():
    with pytest.raises(InputError, match=f"{THREADS_VARIABLE}='two'"):
        apply_threads_option("two", {})


def _blas_threads_after_limit(extra_env: dict[str, str]) -> list[int]:
    """Thread counts threadpoolctl reports in a fresh process that loaded numpy and scipy
    (multi-threaded by default) and then called :func:`limit_threads`."""
    script = (
        "import numpy, scipy.linalg, json\n"
        "from threadpoolctl import threadpool_info\n"
        "from inertia_id_ros.threads import limit_threads\n"
        "limit_threads()\n"
        "print(json.dumps([i['num_threads'] for i in threadpool_info()"
        " if i['user_api'] == 'blas' and i['threading_layer'] != 'disabled']))"
    )
    env = {k: v for k, v in os.environ.items() if k not in (*LIBRARY_VARIABLES, THREADS_VARIABLE)}
    out = subprocess.run(
        [sys.executable, "-c", script],
        env={**env, **extra_env},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out)


def test_libraries_loaded_before_the_limit_obey_it():
    assert set(_blas_threads_after_limit({})) == {1}
    if (os.cpu_count() or 1) >= 2:
        assert set(_blas_threads_after_limit({THREADS_VARIABLE: "2"})) == {2}
