"""Old module paths keep importing, with a :class:`DeprecationWarning`, as the module they moved
to (the same module object): ``import inertia_id_ros.estimator`` gives
``inertia_id_ros.online.payload_estimator``, ``import inertia_id_ros.io.data``
``inertia_id_ros.formats.data``. A package that is gone (``io``) imports as an empty package
whose old modules import as above. To be removed in a later release."""

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
    "excitation": "online.determination",
    "online.excitation": "online.determination",
    "links": "chain.links",
    "friction": "chain.friction",
    "actuators": "chain.actuators",
    "payload_from_torques": "chain.payload_from_torques",
    "data": "formats.data",
    "replay": "offline.replay",
    "report": "offline.report",
    "export": "formats.export",
    "simulation": "sim.payload",
    "torque_simulation": "sim.torques",
    "experiments": "sim",
    "experiments.traversaro2016": "sim.traversaro2016",
    "io.data": "formats.data",
    "io.recording": "formats.description",
    "io.whole_body": "formats.whole_body_log",
    "io.export": "formats.export",
    "io.ft_conventions": "formats.ft_conventions",
    "io.link_result": "formats.link_result",
    "io.prior": "formats.prior",
    "io.plausibility": "offline.plausibility",
    "io.validate": "offline.validation",
    "io.replay": "offline.replay",
    "io.report": "offline.report",
    "io.information": "offline.information",
    "io.keystore": "ros.keystore",
    "core.whole_body": "core.whole_body_model",
    "sim.whole_body": "sim.whole_body_simulator",
    "ros.parameters": "modes.parameters",
}
"""Old module name -> new one, both relative to ``inertia_id_ros``."""

GONE_PACKAGES = ("io",)
"""Old packages with no module of their own left (relative to ``inertia_id_ros``)."""

_PACKAGE = __name__.rsplit(".", 1)[0]


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``inertia_id_ros.<old>`` and loads it as the module it moved to."""

    def find_spec(self, fullname: str, path=None, target=None):
        """A spec for an old name, else ``None`` (the other finders look)."""
        prefix = _PACKAGE + "."
        old = fullname[len(prefix) :] if fullname.startswith(prefix) else ""
        if old in MOVED_MODULES:
            return importlib.machinery.ModuleSpec(fullname, self)
        if old in GONE_PACKAGES:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        """The new module (imported now), or an empty package for a gone one."""
        old = spec.name[len(_PACKAGE) + 1 :]
        if old in GONE_PACKAGES:
            module = ModuleType(spec.name)
            module.__path__ = []
            return module
        new = f"{_PACKAGE}.{MOVED_MODULES[old]}"
        warnings.warn(
            f"{spec.name} moved to {new}; import it from there", DeprecationWarning, stacklevel=3
        )
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """The module is the new one, already executed."""


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once): an old name must not be found by the
    path finder as a second copy of a module that moved out of a package still present."""
    if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _MovedModuleFinder())
