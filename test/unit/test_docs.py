"""The documentation: the generated parameter reference is current."""

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location(
        "gen_parameter_reference", ROOT / "tools" / "gen_parameter_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_parameter_reference_is_generated_from_the_table():
    generator = _generator()
    committed = generator.OUTPUT.read_text(encoding="utf-8")
    assert committed == generator.render(), (
        f"{generator.OUTPUT.relative_to(ROOT)} is not what PARAMETERS in "
        f"inertia_id_ros/ros/parameters.py gives; regenerate it with: {generator.COMMAND}")


def test_parameter_reference_lists_every_parameter_once():
    from inertia_id_ros.ros.parameters import PARAMETERS
    text = _generator().render()
    names = re.findall(r"^\| `([a-z_0-9]+)` \|", text, flags=re.MULTILINE)
    assert names == [p.name for p in PARAMETERS]
