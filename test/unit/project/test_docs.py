"""The documentation: the generated parameter reference is current, the site builds without a
warning, and the README's relative links resolve."""

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _generator():
    spec = importlib.util.spec_from_file_location(
        "gen_parameter_reference", ROOT / "tools" / "gen_parameter_reference.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_parameter_reference_is_generated_from_the_table():
    generator = _generator()
    committed = generator.OUTPUT.read_text(encoding="utf-8")
    assert committed == generator.render(), (
        f"{generator.OUTPUT.relative_to(ROOT)} is not what PARAMETERS in "
        f"inertia_id_ros/modes/parameters.py gives; regenerate it with: {generator.COMMAND}"
    )


def test_parameter_reference_lists_every_parameter_once():
    from inertia_id_ros.modes.parameters import PARAMETERS

    text = _generator().render()
    names = re.findall(r"^\| `([a-z_0-9]+)` \|", text, flags=re.MULTILINE)
    assert names == [p.name for p in PARAMETERS]


def _mkdocs() -> str | None:
    beside_python = Path(sys.executable).with_name("mkdocs")
    if beside_python.exists():
        return str(beside_python)
    return shutil.which("mkdocs")


def test_site_builds_strictly_without_warnings(tmp_path):
    mkdocs = _mkdocs()
    if mkdocs is None:
        pytest.skip(
            "mkdocs is not installed (it is pinned in requirements-test.txt; "
            "bash tools/setup_env.sh installs it)"
        )
    result = subprocess.run(
        [
            mkdocs,
            "build",
            "--strict",
            "--config-file",
            str(ROOT / "mkdocs.yml"),
            "--site-dir",
            str(tmp_path / "site"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": str(Path(mkdocs).parent) + ":/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    warnings = [line for line in output.splitlines() if "WARNING" in line]
    assert not warnings, "\n".join(warnings)
    assert (tmp_path / "site" / "reference" / "parameters" / "index.html").exists()


# [text](target) or [text]: target, outside code spans and blocks; images too.
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _relative_link_targets(markdown: str) -> list[str]:
    text = re.sub(r"```.*?```", "", markdown, flags=re.DOTALL)
    text = re.sub(r"`[^`\n]*`", "", text)
    targets = []
    for target in _LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL, or an anchor in the README itself
        targets.append(target.split("#", 1)[0])
    return targets


def test_readme_relative_links_resolve():
    targets = _relative_link_targets((ROOT / "README.md").read_text(encoding="utf-8"))
    assert targets, "the README links into docs/"
    missing = [t for t in targets if not (ROOT / t).exists()]
    assert not missing, f"README.md links to missing files: {missing}"


def test_relative_link_parser():
    markdown = (
        '[a](docs/a.md) ![b](docs/b.png "title") [c](https://x.org) [d](#top) '
        "`[e](not/a/link.md)`\n```\n[f](nor/this.md)\n```\n[g](docs/g.md#part)"
    )
    assert _relative_link_targets(markdown) == ["docs/a.md", "docs/b.png", "docs/g.md"]
