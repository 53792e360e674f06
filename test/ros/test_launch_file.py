"""``launch/identify.launch.py`` without ``launch``: its description read, and the node started
over DDS with the command line that ``launch_ros`` builds from that description.

The ROS 2 ``launch`` and ``launch_ros`` packages (and ``ros2launch``, the ``ros2 launch``
command) are not on PyPI: pip finds no ``ros-launch``, ``launch-ros`` or ``launch_ros``, and the
PyPI project named ``launch`` (0.1.3, 2017) is Flowdas' unrelated application launcher (no
``launch.actions``, no ``LaunchDescription``). So here:

- the launch file runs with stand-in modules ``launch``, ``launch.actions``,
  ``launch.substitutions``, ``launch_ros`` and ``launch_ros.actions`` whose classes only record
  their constructors' arguments (:class:`Recorded`): they read the description, they run nothing;
- the tests without processes check what the description names: the package and the executable
  that ``CMakeLists.txt`` installs under ``lib/inertia_id_ros/``, the node's name (the one the
  package's parameter files and ``inertia-id replay --params-file`` are keyed by), its
  parameters (the ``config`` file, then ``urdf_path``), the arguments and their defaults (the
  enclave ``inertia-id keystore create`` makes), and that every shipped configuration applies to
  the node whatever its ``namespace``;
- the DDS test starts the node with the command line that ``launch_ros``'s ``Node`` action (the
  same from Jazzy to Rolling) builds from the description for the arguments ``config``,
  ``urdf_path`` and ``namespace`` and the default ``enclave``: ``<executable> --ros-args
  --enclave /inertia_id --ros-args -r __node:=inertia_id -r __ns:=/<namespace> --params-file
  <config> --params-file <the urdf_path entry, written to a file keyed with the node's full
  name>`` (:func:`node_command`), and waits until the node is ready: its diagnostics count the
  peer's publishers on its input topics, which have matched its subscriptions; then the node's
  parameters, asked of its full name, are the config's and the URDF.

What cannot be tested without ``launch`` on the registry:

- ``ros2 launch inertia_id_ros identify.launch.py`` itself: finding the file in the package's
  share directory, parsing ``name:=value`` arguments, refusing a missing required argument
  (``config`` and ``urdf_path`` have no default), ``--show-args``;
- ``launch``'s evaluation of the description: the ``LaunchConfiguration`` substitutions and the
  arguments' defaults (here :func:`launch_arguments` and :func:`text`, dictionary look-ups),
  launch-wide configurations an including launch file may set (``PushRosNamespace``'s
  ``ros_namespace``, ``SetParameter``'s ``global_params``, ``SetRemap``), which
  :func:`node_command` does not add;
- ``launch_ros``'s own translation: ``ExecutableInPackage`` finding the executable through the
  ament index (here the source's ``scripts/inertia_id_node``, which ``CMakeLists.txt`` installs
  there, run with this interpreter rather than through its ``#!/usr/bin/env python3``), its
  YAML reading of the dictionary's values and the temporary file it writes for them (here
  written the same way by :func:`node_command`), its ``node_action`` extensions;
- ``launch``'s process handling: ``output="screen"`` (here the output goes to a log file), the
  SIGINT-then-SIGTERM escalation at shutdown (here SIGINT), ``emulate_tty``, respawn;
- the enclave under DDS-Security: the node gets ``--enclave /inertia_id`` as launch passes it
  (whether or not ``ROS_SECURITY_ENABLE`` is set, as launch does), but this test sets up no
  keystore; ``test_security.py`` runs the node in that enclave with one.
"""

from __future__ import annotations

import os
import re
import runpy
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from helpers.dds import spin_until, wait_until_inputs_matched
from helpers.paths import REPO
from helpers.processes import Process
from inertia_id_ros.core.robots import example_robot_urdf

pytestmark = pytest.mark.rate_insensitive  # no sample counted: outside the DDS groups

LAUNCH_FILE = REPO / "launch" / "identify.launch.py"
STAND_INS = ("launch", "launch.actions", "launch.substitutions", "launch_ros", "launch_ros.actions")
"""The modules of ``launch`` and ``launch_ros`` that the launch file may import from."""
NODE_KEYWORDS = {"package", "executable", "name", "namespace", "parameters", "ros_arguments"}
"""The ``Node`` arguments :func:`node_command` translates (``output`` only tells launch where
the output goes)."""


class Recorded:
    """A stand-in of a ``launch`` or ``launch_ros`` class: what its constructor was given."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args, self.kwargs = args, kwargs

    @property
    def kind(self) -> str:
        return type(self).__name__


def stand_in(name: str) -> ModuleType:
    """A module ``name`` whose every public attribute is a :class:`Recorded` subclass of that
    name (made on first use)."""
    module = ModuleType(name)

    def recording_class(attribute: str) -> type[Recorded]:
        if attribute.startswith("_"):
            raise AttributeError(attribute)
        made = type(attribute, (Recorded,), {"__module__": name})
        setattr(module, attribute, made)
        return made

    module.__getattr__ = recording_class  # type: ignore[method-assign]
    return module


@pytest.fixture(scope="module")
def description() -> list[Recorded]:
    """The entities of ``generate_launch_description()`` (read with the stand-ins, which are
    gone after)."""
    with pytest.MonkeyPatch.context() as patch:
        for name in STAND_INS:
            patch.setitem(sys.modules, name, stand_in(name))
        generated = runpy.run_path(str(LAUNCH_FILE))["generate_launch_description"]()
    assert generated.kind == "LaunchDescription"
    (entities,) = generated.args
    return list(entities)


def of_kind(entities: list[Recorded], kind: str) -> list[Recorded]:
    return [entity for entity in entities if entity.kind == kind]


def text(value: Any, arguments: dict[str, str]) -> str:
    """``value`` (a string, a ``LaunchConfiguration`` or a list of them) as launch substitutes
    it, with the launch ``arguments`` (name -> value)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        return "".join(text(part, arguments) for part in value)
    assert isinstance(value, Recorded) and value.kind == "LaunchConfiguration", (
        f"{value!r}: a substitution this test does not evaluate"
    )
    return arguments[value.args[0]]


def launch_arguments(entities: list[Recorded], given: dict[str, str]) -> dict[str, str]:
    """The value of each declared argument: ``given``, else its default; a required one must be
    given, and ``given`` names declared arguments only."""
    declared = {entity.args[0]: entity for entity in of_kind(entities, "DeclareLaunchArgument")}
    assert set(given) <= set(declared), set(given) - set(declared)
    values = {}
    for name, argument in declared.items():
        assert name in given or "default_value" in argument.kwargs, f"{name} is required"
        values[name] = given[name] if name in given else text(argument.kwargs["default_value"], {})
    return values


def installed_executable(package: str, executable: str) -> Path:
    """The source of ``lib/<package>/<executable>`` in a ROS install: ``scripts/<executable>``,
    which ``CMakeLists.txt`` installs there (``ros2 run``'s and ``launch_ros``'s place)."""
    cmake = (REPO / "CMakeLists.txt").read_text()
    assert re.search(rf"^project\({package}\)", cmake, re.M)
    assert f"<name>{package}</name>" in (REPO / "package.xml").read_text()
    installed = re.search(
        r"install\(PROGRAMS\s(.*?)DESTINATION lib/\$\{PROJECT_NAME\}\s*\)", cmake, re.S
    )
    assert installed and f"scripts/{executable}" in installed.group(1).split()
    script = REPO / "scripts" / executable
    assert os.access(script, os.X_OK), f"{script} is not executable"
    return script


def full_name(namespace: str, name: str) -> tuple[str, str]:
    """The ``__ns`` that ``launch_ros`` gives the node for its ``namespace`` argument, and the
    node's full name."""
    if namespace != "/":
        namespace = namespace.rstrip("/")
    namespace = namespace if namespace.startswith("/") else f"/{namespace}"
    return namespace, f"{namespace.rstrip('/')}/{name}"


def node_command(node: Recorded, arguments: dict[str, str], directory: Path) -> list[str]:
    """The command line of ``node`` as ``launch_ros``'s ``Node`` action builds it with the
    launch ``arguments``: the executable; ``--ros-args`` and its ``ros_arguments``; ``--ros-args``,
    the node's name and namespace remapped; each of its ``parameters`` as ``--params-file``, a
    dictionary written to a file in ``directory`` under the node's full name."""
    assert set(node.kwargs) - {"output"} <= NODE_KEYWORDS, set(node.kwargs) - NODE_KEYWORDS
    kwargs = node.kwargs
    package, executable = text(kwargs["package"], {}), text(kwargs["executable"], {})
    command = [sys.executable, str(installed_executable(package, executable))]
    if "ros_arguments" in kwargs:
        command += ["--ros-args", *(text(a, arguments) for a in kwargs["ros_arguments"])]
    name = text(kwargs["name"], arguments)
    namespace, node_name = full_name(text(kwargs.get("namespace", ""), arguments), name)
    command += ["--ros-args", "-r", f"__node:={name}", "-r", f"__ns:={namespace}"]
    for k, parameters in enumerate(kwargs.get("parameters", [])):
        if isinstance(parameters, dict):
            path = directory / f"launch_params_{k}.yaml"
            values = {
                text(key, arguments): yaml.safe_load(text(value, arguments))
                for key, value in parameters.items()
            }
            path.write_text(yaml.dump({node_name: {"ros__parameters": values}}))
        else:
            path = Path(text(parameters, arguments))
        assert path.is_file(), f"launch_ros skips a parameter file that does not exist: {path}"
        command += ["--params-file", str(path)]
    return command


# ---- the description --------------------------------------------------------------------------


def test_the_arguments_are_the_config_the_urdf_a_namespace_and_the_keystores_enclave(description):
    from inertia_id_ros.ros.keystore import NODE_ENCLAVE

    declared = {e.args[0]: e.kwargs for e in of_kind(description, "DeclareLaunchArgument")}
    assert set(declared) == {"config", "urdf_path", "namespace", "enclave"}
    assert (
        "default_value" not in declared["config"] and "default_value" not in declared["urdf_path"]
    )
    assert declared["namespace"]["default_value"] == ""
    assert declared["enclave"]["default_value"] == NODE_ENCLAVE
    assert all(kwargs["description"] for kwargs in declared.values())


def test_the_node_is_the_packages_installed_executable_with_the_config_and_the_urdf(description):
    """One node: the package's ``inertia_id_node``, installed under ``lib/inertia_id_ros/``;
    named as the parameter files key it; its parameters the ``config`` file, then ``urdf_path``;
    in the enclave; every argument the description uses is declared."""
    from inertia_id_ros.modes.parameters import NODE_NAME

    (node,) = of_kind(description, "Node")
    assert len(description) == len(of_kind(description, "DeclareLaunchArgument")) + 1
    assert (node.kwargs["package"], node.kwargs["executable"]) == (
        "inertia_id_ros",
        "inertia_id_node",
    )
    installed_executable("inertia_id_ros", "inertia_id_node")
    assert node.kwargs["name"] == NODE_NAME
    config, urdf = node.kwargs["parameters"]
    assert config.kind == "LaunchConfiguration" and config.args == ("config",)
    assert set(urdf) == {"urdf_path"} and urdf["urdf_path"].args == ("urdf_path",)
    assert node.kwargs["namespace"].args == ("namespace",)
    enclave, name = node.kwargs["ros_arguments"]
    assert enclave == "--enclave" and name.args == ("enclave",)
    declared = {e.args[0] for e in of_kind(description, "DeclareLaunchArgument")}
    used = set()
    for value in (*node.kwargs.values(), *urdf.values()):
        for part in value if isinstance(value, list) else [value]:
            if isinstance(part, Recorded) and part.kind == "LaunchConfiguration":
                used.add(part.args[0])
    assert used == declared


@pytest.mark.parametrize(
    "config",
    sorted(p.name for p in (REPO / "config").glob("*.yaml") if "ros__parameters" in p.read_text()),
)
def test_every_shipped_config_applies_to_the_launched_node_in_any_namespace(description, config):
    """The launch file's ``namespace`` puts the node at ``/<namespace>/inertia_id``: a config
    keyed ``inertia_id`` (that is ``/inertia_id``) would not apply there, and the node would
    start without it. Keys ``/**`` or ``/**/inertia_id`` apply in every namespace."""
    from inertia_id_ros.modes.parameters import parameters_from_file

    (node,) = of_kind(description, "Node")
    keys = set(yaml.safe_load((REPO / "config" / config).read_text()))
    assert keys and keys <= {"/**", f"/**/{node.kwargs['name']}"}, keys
    assert parameters_from_file(REPO / "config" / config, node.kwargs["name"])


# ---- the node, started as launch starts it ----------------------------------------------------


def test_the_node_starts_as_the_description_says_and_serves_under_its_full_name(
    ros_env, rclpy_context, description, tmp_path
):
    """``panda_payload.yaml`` and the Panda's URDF, in the namespace ``launch_test``: the node is
    ready (its diagnostics count the peer's publishers on the config's input topics, matched both
    ways), it is ``/launch_test/inertia_id`` on the graph (its inputs node beside it under its
    own name), its parameters are the config's and the URDF, and it ends quietly on SIGINT."""
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    from rclpy.parameter_client import AsyncParameterClient
    from sensor_msgs.msg import JointState

    from inertia_id_ros.modes.parameters import parameters_from_file

    config = REPO / "config" / "panda_payload.yaml"
    urdf = str(example_robot_urdf("panda"))
    arguments = launch_arguments(
        description, {"config": str(config), "urdf_path": urdf, "namespace": "launch_test"}
    )
    (node,) = of_kind(description, "Node")
    command = node_command(node, arguments, tmp_path)
    assert command[2:5] == ["--ros-args", "--enclave", "/inertia_id"]
    _, name = full_name("launch_test", node.kwargs["name"])
    expected = parameters_from_file(config, node.kwargs["name"])
    process = Process(command, ros_env, tmp_path / "inertia_id_node.log")
    peer = rclpy.create_node("inertia_id_launch_peer")
    try:
        inputs = [
            peer.create_publisher(JointState, expected["joint_states_topic"], 10),
            peer.create_publisher(WrenchStamped, expected["wrench_topic"], 10),
        ]
        wait_until_inputs_matched(peer, inputs, node=process)
        graph = peer.get_node_names_and_namespaces
        assert spin_until(peer, lambda: ("inertia_id_inputs", "/launch_test") in graph(), 10.0), (
            graph(),
            process.output()[-3000:],
        )
        assert graph().count(("inertia_id", "/launch_test")) == 1, graph()
        client = AsyncParameterClient(peer, name)
        assert client.wait_for_services(timeout_sec=10.0), process.output()[-3000:]
        names = ["urdf_path", "sensor_frame", "window_sec", "method"]
        future = client.get_parameters(names)
        rclpy.spin_until_future_complete(peer, future, timeout_sec=10.0)
        values = [rclpy.parameter.parameter_value_to_python(v) for v in future.result().values]
        assert values == [urdf, *(expected[n] for n in names[1:])]
    finally:
        peer.destroy_node()
        code = process.stop()
    output = process.output()
    assert code == 0, output[-3000:]
    assert "Traceback" not in output and "WARN" not in output, output[-3000:]
