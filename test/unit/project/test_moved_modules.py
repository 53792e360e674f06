"""Old module paths import, with a DeprecationWarning, as the very module they moved to."""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest

from inertia_id_ros._moved import MOVED_MODULES


@pytest.mark.parametrize("old", sorted(MOVED_MODULES))
def test_an_old_path_is_the_new_module(old):
    new = importlib.import_module(f"inertia_id_ros.{MOVED_MODULES[old]}")
    sys.modules.pop(f"inertia_id_ros.{old}", None)  # warned at its first import only
    with pytest.warns(DeprecationWarning, match="moved to"):
        moved = importlib.import_module(f"inertia_id_ros.{old}")
    assert moved is new


def test_a_name_from_an_old_path_is_the_same_object():
    from inertia_id_ros.formats.data import JointStates

    with warnings.catch_warnings():  # warned once, on the first import
        warnings.simplefilter("ignore", DeprecationWarning)
        from inertia_id_ros.io.data import JointStates as old

    assert old is JointStates
