"""pip build of inertia_id_ros: the Python package plus its rosidl-generated interfaces.

In a ROS 2 workspace, colcon builds this package with CMakeLists.txt (package.xml's build type is
ament_cmake). pip runs the same CMakeLists.txt with ``INERTIA_ID_INTERFACES_ONLY=ON`` against the
ROS 2 wheels installed in the target environment (install ``requirements-build.txt`` first and use
``pip install --no-build-isolation``), then ships:

- the generated Python modules (``inertia_id_ros/msg``, ``inertia_id_ros/srv`` and the typesupport
  extension modules) inside the package; an editable install writes them into the source tree;
- the generated C/C++ libraries into ``<prefix>/lib`` and the ament index and interface files
  into ``<prefix>/share``, where the ROS 2 wheels keep theirs (their bootstrapper puts
  ``<prefix>/lib`` on the library path), as data files of the wheel or, for an editable
  install, copied there directly.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

PACKAGE = "inertia_id_ros"
ROOT = Path(__file__).resolve().parent
BUILD = ROOT / "build" / "rosidl"
INTERFACE_SOURCES = ("CMakeLists.txt", "package.xml", "msg", "srv", "cmake")
BUILD_COMMANDS = {"build", "build_py", "bdist_wheel", "editable_wheel", "install", "develop"}


def _cmake() -> str:
    """The cmake of this environment (the PyPI wheel) if there is one, else the system's."""
    candidate = Path(sys.prefix) / "bin" / "cmake"
    found = str(candidate) if candidate.exists() else shutil.which("cmake")
    if found is None:
        raise RuntimeError("cmake not found: pip install -r requirements-build.txt first")
    return found


def build_interfaces() -> Path:
    """Generate and build the interfaces with rosidl (CMake); return the staging install prefix.

    The sources are staged outside the repository root because CMake refuses targets whose include
    directories lie inside the source directory, and the virtual environment is at ``.venv/``.
    """
    source, binary, prefix = BUILD / "src", BUILD / "build", BUILD / "install"
    for name in INTERFACE_SOURCES:
        src, dst = ROOT / name, source / name
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True)
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    env = dict(os.environ, AMENT_PREFIX_PATH=sys.prefix)
    cmake = _cmake()
    print(f"inertia_id_ros: building interfaces with rosidl in {binary}", flush=True)
    subprocess.run(
        [
            cmake,
            "-S",
            str(source),
            "-B",
            str(binary),
            f"-DCMAKE_PREFIX_PATH={sys.prefix}",
            f"-DPython3_EXECUTABLE={sys.executable}",
            f"-DCMAKE_INSTALL_PREFIX={prefix}",
            "-DINERTIA_ID_INTERFACES_ONLY=ON",
            "-DBUILD_TESTING=OFF",
            "-DCMAKE_BUILD_TYPE=Release",
        ],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    subprocess.run(
        [cmake, "--build", str(binary), "--parallel", str(os.cpu_count() or 1)],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    subprocess.run(
        [cmake, "--install", str(binary)], check=True, env=env, stdout=subprocess.DEVNULL
    )
    return prefix


def generated_python_package(prefix: Path) -> Path:
    """Where rosidl installed the generated Python package below ``prefix``."""
    purelib = sysconfig.get_path("purelib", vars={"base": str(prefix), "platbase": str(prefix)})
    return Path(purelib) / PACKAGE


def copy_generated_python(prefix: Path, destination: Path) -> None:
    """Copy msg/, srv/ and the typesupport extension modules into ``destination``."""
    generated = generated_python_package(prefix)
    for item in generated.iterdir():
        if item.name in ("msg", "srv"):
            shutil.copytree(
                item,
                destination / item.name,
                dirs_exist_ok=True,
                ignore=shutil.ignore_patterns("__pycache__"),
            )
        elif item.suffix in (".so", ".c"):
            shutil.copy2(item, destination / item.name)


def data_files(prefix: Path) -> list[tuple[str, list[str]]]:
    """The generated libraries (lib/) and ament index and interface files (share/)."""
    entries: dict[str, list[str]] = {}
    for path in sorted((prefix / "lib").glob("lib*.so")):
        entries.setdefault("lib", []).append(str(path))
    for path in sorted((prefix / "share").rglob("*")):
        if path.is_file():
            entries.setdefault(str(path.parent.relative_to(prefix)), []).append(str(path))
    for folder in ("launch", "config"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file():
                target = Path("share") / PACKAGE / path.parent.relative_to(ROOT)
                entries.setdefault(str(target), []).append(str(path.relative_to(ROOT)))
    return sorted(entries.items())


_PREFIX: Path | None = build_interfaces() if BUILD_COMMANDS & set(sys.argv[1:]) else None


class BuildPyWithInterfaces(build_py):
    """build_py that adds the rosidl-generated modules (in place for an editable install)."""

    def run(self) -> None:
        """Build the Python modules, then put the generated interfaces beside them."""
        super().run()
        prefix = _PREFIX or build_interfaces()
        destination = ROOT if self.editable_mode else Path(self.build_lib)
        copy_generated_python(prefix, destination / PACKAGE)
        if self.editable_mode:
            # setuptools' editable wheels skip data_files (it asks the distribution for
            # `has_data`, which does not exist), so put the libraries in place directly.
            for target, files in data_files(prefix):
                (Path(sys.prefix) / target).mkdir(parents=True, exist_ok=True)
                for name in files:
                    shutil.copy2(ROOT / name, Path(sys.prefix) / target)


setup(
    name=PACKAGE,
    version="0.1.0",
    description="Online, physically consistent identification of payload and link inertial "
    "parameters for ROS 2",
    packages=find_packages(include=[PACKAGE, f"{PACKAGE}.*"]),
    package_data={PACKAGE: ["py.typed", "ros/fastdds_profiles.xml"]},
    data_files=data_files(_PREFIX) if _PREFIX is not None else [],
    python_requires=">=3.10",
    cmdclass={"build_py": BuildPyWithInterfaces},
    entry_points={
        "console_scripts": [
            "inertia-id-node = inertia_id_ros.entry:node",
            "inertia-id-sim = inertia_id_ros.entry:sim",
            "inertia-id = inertia_id_ros.cli:main",
        ]
    },
)
