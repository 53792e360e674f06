"""Old module paths (before the ``core``/``online``/``chain``/``io``/``sim`` layout) keep
importing, with a :class:`DeprecationWarning`, as the module they moved to (the same module
object): ``import inertia_id_ros.estimator`` gives ``inertia_id_ros.online.payload_estimator``.
To be removed in a later release."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType

MOVED_MODULES: dict[str, str] = {
    "inertia": "core.inertia",
    "regressors": "core.regressors",
    "kinematics": "core.kinematics",
    "filtering": "core.filtering",
    "covariance": "core.covariance",
    "robots": "core.robots",
    "window": "online.window",
    "estimator": "online.payload_estimator",
    "link_estimator": "online.link_estimator",
    "tare": "online.tare",
    "change_detection": "online.change_detection",
    "excitation": "online.excitation",
    "links": "chain.links",
    "friction": "chain.friction",
    "actuators": "chain.actuators",
    "payload_from_torques": "chain.payload_from_torques",
    "data": "io.data",
    "replay": "io.replay",
    "report": "io.report",
    "export": "io.export",
    "simulation": "sim.payload",
    "torque_simulation": "sim.torques",
    "experiments": "sim",
    "experiments.traversaro2016": "sim.traversaro2016",
}
"""Old module name -> new one, both relative to ``inertia_id_ros``."""

_PACKAGE = __name__.rsplit(".", 1)[0]


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``inertia_id_ros.<old>`` and loads it as the module it moved to."""

    def find_spec(self, fullname: str, path=None, target=None):
        prefix = _PACKAGE + "."
        if fullname.startswith(prefix) and fullname[len(prefix) :] in MOVED_MODULES:
            return importlib.machinery.ModuleSpec(fullname, self)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = f"{_PACKAGE}.{MOVED_MODULES[spec.name[len(_PACKAGE) + 1 :]]}"
        warnings.warn(
            f"{spec.name} moved to {new}; import it from there", DeprecationWarning, stacklevel=3
        )
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """The module is the new one, already executed."""


def install() -> None:
    """Put the finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedModuleFinder())
