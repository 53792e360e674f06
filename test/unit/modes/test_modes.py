"""The modes' registry (``inertia_id_ros.modes``) and one home per default: the node declares the
library's defaults; the layers import only downward.

The properties every mode must have are parametrized over the registry (``modes.modes()``, and
each mode's ``methods`` over the solvers' registry): a newly registered mode is tested without an
edit here but for its minimal configuration (:data:`MINIMAL`), which the tests ask for by name.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
from pathlib import Path

import pytest

from helpers.layers import LAYERS, layer_rank
from helpers.paths import REPO
from inertia_id_ros import modes
from inertia_id_ros.core.robots import example_robot_urdf
from inertia_id_ros.errors import ConfigError, StartupError
from inertia_id_ros.modes import Mode, ParameterSpec
from inertia_id_ros.modes.parameters import (
    PARAMETERS,
    build_session,
    settings_from_parameters,
    validate_change,
)
from inertia_id_ros.motion.design import DEFAULT_MAX_ACCELERATION
from inertia_id_ros.motion.run import RunConfig
from inertia_id_ros.online.change_detection import ChangeDetectorConfig
from inertia_id_ros.online.estimator import OnlineEstimatorConfig
from inertia_id_ros.online.link_estimator import LinkEstimatorConfig
from inertia_id_ros.online.link_session import link_session
from inertia_id_ros.online.payload_estimator import EstimatorConfig
from inertia_id_ros.online.payload_session import (
    payload_session,
    payload_torque_session,
)
from inertia_id_ros.online.payload_torque_estimator import PayloadTorqueEstimatorConfig
from inertia_id_ros.online.session import Session
from inertia_id_ros.online.whole_body_config import WholeBodyEstimatorConfig
from inertia_id_ros.online.whole_body_session import whole_body_session
from inertia_id_ros.solvers import METHODS

DECLARED = {p.name: p.default for p in PARAMETERS}
CONFIGS = {
    "payload": EstimatorConfig,
    "links": LinkEstimatorConfig,
    "whole_body": WholeBodyEstimatorConfig,
    "payload_torques": lambda: PayloadTorqueEstimatorConfig(frame="panda_link8"),
}
"""Each package mode's estimator configuration (the library's defaults)."""


def test_the_node_declares_the_library_defaults():
    """Every node parameter that the library also has takes the library's default: the
    estimators' configurations, the change detector, the excitation run, the session factories
    (whose keyword arguments are the node's parameters of the same names)."""
    library = {
        "window_sec": OnlineEstimatorConfig.window_sec,
        "method": OnlineEstimatorConfig.method,
        "max_input_rate_hz": inspect.signature(Session).parameters["max_input_rate_hz"].default,
        "estimate_offset": EstimatorConfig.estimate_offset,
        "payload_change_threshold": ChangeDetectorConfig.threshold,
        "prior_weight": LinkEstimatorConfig.prior_weight,
        "sensor_timeout_sec": WholeBodyEstimatorConfig.sensor_timeout_sec,
        "sample_rate_hz": WholeBodyEstimatorConfig.max_sample_rate_hz,
        "excite_max_acceleration": DEFAULT_MAX_ACCELERATION,
        **{
            f"excite_{field}": getattr(RunConfig, field)
            for field in (
                "max_start_distance",
                "ramp_velocity",
                "joint_state_timeout",
                "max_tracking_error",
            )
        },
    }
    assert {name: DECLARED[name] for name in library} == library
    factories = {
        "payload": payload_session,
        "links": link_session,
        "whole_body": whole_body_session,
        "payload_torques": payload_torque_session,
    }
    registered = {mode.name for mode in modes.modes()}
    assert set(factories) == set(CONFIGS) == registered, "each mode's session factory and config"
    for mode, factory in factories.items():
        defaults = {
            name: parameter.default
            for name, parameter in inspect.signature(factory).parameters.items()
            if parameter.default not in (None, inspect.Parameter.empty)
        }
        assert (
            defaults.pop("weighting")
            == CONFIGS[mode]().weighting
            == modes.get(mode).default_weighting
        ), mode  # the node's "": the mode's default
        for name in set(defaults) & set(DECLARED):
            assert defaults[name] == DECLARED[name], (mode, name)
    own = {p.name: p.default for p in modes.get("payload_torques").parameters}
    torques = inspect.signature(payload_torque_session).parameters
    assert {name: own[f"torques_{name}"] for name in ("estimate_offset", "filter_half_width")} == {
        name: torques[name].default for name in ("estimate_offset", "filter_half_width")
    }
    assert own["torques_change_threshold"] == torques["payload_change_threshold"].default
    assert own["torques_detect_change"] == torques["detect_payload_change"].default


PANDA, ICUB = str(example_robot_urdf("panda")), str(example_robot_urdf("icub"))
MINIMAL = {
    "payload": {"urdf_path": PANDA, "sensor_frame": "panda_link8"},
    "links": {"urdf_path": PANDA, "joints": ["panda_joint2"]},
    "whole_body": {"urdf_path": ICUB, "base": "fixed", "imu_topic": "", "use_efforts": True},
    "payload_torques": {"urdf_path": PANDA, "torques_frame": "panda_link8"},
}
"""Each registered mode's minimal valid configuration: the node's parameters it requires, the
others at their defaults."""

REGISTERED = pytest.mark.parametrize("mode", modes.modes(), ids=lambda mode: mode.name)
"""Parametrize a test over every mode registered when the tests are collected."""


def minimal(mode: Mode) -> dict:
    """``mode``'s minimal configuration (:data:`MINIMAL`), with ``mode`` set."""
    assert mode.name in MINIMAL, f"mode {mode.name!r}: give its minimal configuration in MINIMAL"
    return {"mode": mode.name, **MINIMAL[mode.name]}


@REGISTERED
def test_every_mode_builds_its_session_with_the_library_defaults(mode: Mode):
    """A node started with a mode's minimal configuration runs that mode's session with the
    estimator's default configuration: the node's defaults are the library's."""
    session = build_session(settings_from_parameters(minimal(mode)))
    config = session.estimator.config
    defaults = {f.name: f.default for f in dataclasses.fields(config)}
    for field in (
        "window_sec",
        "method",
        "weighting",
        "estimate_offset",
        "prior_weight",
        "sensor_timeout_sec",
        "max_sample_rate_hz",
        "filter_half_width",
    ):
        if field in defaults:
            assert getattr(config, field) == defaults[field], field


@REGISTERED
def test_every_mode_reads_its_parameters_defaults(mode: Mode):
    """The node reads every mode's values, whichever is selected (the others' parameters at
    their defaults): a mode's defaults pass its :meth:`~inertia_id_ros.modes.Mode.read_settings`
    (a required parameter is refused by its ``check_settings``, with the mode selected)."""
    assert mode.read_settings({p.name: p.default for p in mode.parameters}) is not None


@REGISTERED
def test_every_mode_describes_its_parameters_under_its_title(mode: Mode):
    """The parameter reference lists a mode's parameters under its title: each description
    starts with ``title + ": "``; the node declares each one with the mode's spec, and the
    ``mode`` parameter's description names the mode and what it identifies."""
    assert mode.title.endswith(" mode") and mode.summary
    names = [p.name for p in mode.parameters]
    assert len(set(names)) == len(names), names
    declared = {p.name: p for p in PARAMETERS}
    for spec in mode.parameters:
        assert spec.description.startswith(f"{mode.title}: "), spec
        assert declared[spec.name] == spec
    assert f"'{mode.name}' ({mode.summary})" in declared["mode"].description


@REGISTERED
def test_every_mode_runs_each_of_its_methods_and_refuses_the_others(mode: Mode):
    """At start-up and at run time, a mode takes each method of its ``methods`` (registered
    ones) and refuses every other registered method, naming the parameter and the mode's
    problems."""
    assert mode.methods and set(mode.methods) <= set(METHODS), mode.methods
    settings = settings_from_parameters(minimal(mode))
    problems = mode.title.removesuffix(" mode").lower()
    for method in METHODS:
        if method in mode.methods:
            assert settings_from_parameters({**minimal(mode), "method": method}).method == method
            assert validate_change(settings, {"method": method}, (1, 1)).method == method
        else:
            refusal = f"'{method}' does not solve {problems} problems"
            with pytest.raises(StartupError, match=f"'method': {refusal}"):
                settings_from_parameters({**minimal(mode), "method": method})
            with pytest.raises(ValueError, match=refusal):
                validate_change(settings, {"method": method}, (1, 1))


def test_the_registry_lists_the_package_modes_and_their_commands():
    assert [m.name for m in modes.modes()][:4] == [
        "payload",
        "links",
        "whole_body",
        "payload_torques",
    ]
    from inertia_id_ros.cli import COMMANDS

    names = [c.__name__.rsplit(".", 1)[-1] for c in COMMANDS]
    assert names[:3] == ["fit_payload", "fit_links", "fit_whole_body"]
    assert all(
        c in names
        for m in modes.modes()[:4]
        for c in [command.rsplit(".", 1)[-1] for command in m.commands]
    )
    assert all(m.has_replay for m in modes.modes()[:4])
    with pytest.raises(ConfigError, match="unknown mode 'magic'"):
        modes.get("magic")
    with pytest.raises(ConfigError, match="cannot import"):
        modes.get("no_such_module_here:Mode")
    with pytest.raises(ConfigError, match="is not a Mode"):
        modes.get("inertia_id_ros.options:TARGETS")
    with pytest.raises(ConfigError, match="registered already"):
        modes.register(type(modes.get("links"))())


@pytest.fixture(autouse=True)
def registry_restored(monkeypatch):
    """Modes a test registers are gone after it (the parameter reference and the other tests
    in the same process see the package's modes only)."""
    monkeypatch.setattr(modes.base, "_REGISTRY", dict(modes.base._REGISTRY))
    monkeypatch.setattr(modes.base, "_IMPORTED", dict(modes.base._IMPORTED))


class _Toy(Mode):
    """A mode defined here: its parameter joins the node's table once it is named."""

    name = "toy_registry"
    title = "Toy mode"
    summary = "nothing"
    parameters = (ParameterSpec("toy_value", 2.0, "Toy mode: a value > 0."),)
    default_weighting = "none"
    methods = ("ols",)
    wiring = "nowhere:ToyIO"

    def read_settings(self, values):
        if not values["toy_value"] > 0:
            raise StartupError(f"parameter 'toy_value' must be > 0, got {values['toy_value']}")
        return values["toy_value"]

    def build_session(self, settings):
        raise StartupError("the toy has no session")


def test_a_mode_named_by_its_import_path_adds_its_parameters_and_rules():
    path = f"{__name__}:_Toy"
    with pytest.raises(StartupError, match="'toy_value'"):  # unknown until the mode is named
        settings_from_parameters({"mode": "links", "joints": ["j"], "toy_value": 1.0})
    settings = settings_from_parameters({"mode": path, "method": "ols", "toy_value": 3.0})
    assert settings.mode == "toy_registry" and settings.mode_settings == 3.0
    assert settings.weighting == "none" and modes.get(path) is modes.get("toy_registry")
    with pytest.raises(StartupError, match="'method': 'lmi' does not solve toy problems"):
        settings_from_parameters({"mode": path})
    with pytest.raises(StartupError, match="'toy_value' must be > 0"):
        settings_from_parameters({"mode": path, "method": "ols", "toy_value": -1.0})
    # a package mode's values are checked with the toy selected, and the toy's with another
    with pytest.raises(StartupError, match="'prior_weight'"):
        settings_from_parameters({"mode": path, "method": "ols", "prior_weight": -1.0})
    with pytest.raises(StartupError, match="'toy_value'"):
        settings_from_parameters({"mode": "links", "joints": ["j"], "toy_value": -1.0})


def test_two_modes_may_share_a_parameter_only_with_one_spec():
    from inertia_id_ros.modes.parameters import node_parameters

    class Clash(_Toy):
        name = "toy_clash"
        parameters = (ParameterSpec("body_name", "other", "Toy mode: clashes."),)

    modes.register(Clash())
    with pytest.raises(ConfigError, match="'body_name' is declared twice"):
        node_parameters()


def test_architecture_checklist_names_the_parts_of_a_mode():
    """docs/architecture.md ends with the checklist for adding a mode; every ``Mode`` member it
    names exists."""
    text = (REPO / "docs" / "architecture.md").read_text()
    checklist = text[text.rindex("## Adding a mode") :]
    members = set(re.findall(r"`Mode\.(\w+)`", checklist))
    assert {"parameters", "read_settings", "build_session", "wiring"} <= members
    assert all(hasattr(Mode, member) or member in Mode.__annotations__ for member in members)
    assert re.findall(r"^- \[ \]", checklist, flags=re.MULTILINE), "no checklist items"


# ---- layers ---------------------------------------------------------------------------------


def test_the_layers_import_only_downward():
    package = REPO / "inertia_id_ros"
    upward = []
    for path in package.rglob("*.py"):
        parts = path.relative_to(package).parts
        if len(parts) < 2 or parts[0] in ("msg", "srv"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = (
                    [f"{node.module}.{a.name}" for a in node.names]
                    if node.module == "inertia_id_ros"
                    else [node.module]
                )
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                if name.startswith("inertia_id_ros.") and layer_rank(
                    name.split(".")[1]
                ) > layer_rank(parts[0]):
                    upward.append(f"{Path(*parts)} imports {name}")
    assert not upward, upward
    assert {
        layer_rank(p.name)
        for p in package.iterdir()
        if p.is_dir() and (p / "__init__.py").exists() and p.name not in ("msg", "srv")
    } == set(range(1, len(LAYERS) + 1)), "a package outside the layers"
