#!/usr/bin/env bash
# Create .venv/ at the repository root and install inertia_id_ros with everything it needs from
# PyPI (ROS 2 Kilted wheels, pinocchio, cvxpy, ...). Idempotent: re-running only refreshes.
# Needs python3 (3.10+) with venv and a C/C++ toolchain for the rosidl build; as root on Debian or
# Ubuntu it installs the missing system packages itself.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v cc >/dev/null 2>&1 && command -v c++ >/dev/null 2>&1 && command -v make >/dev/null 2>&1 \
  || need_apt+=(build-essential)
python3 -c "import ensurepip, venv" >/dev/null 2>&1 || need_apt+=(python3-venv)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup_env: installing ${need_apt[*]} with apt-get"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "setup_env: please install: ${need_apt[*]} (e.g. sudo apt-get install ${need_apt[*]})" >&2
    exit 1
  fi
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
pip_install() { .venv/bin/python -m pip install --quiet --disable-pip-version-check "$@"; }
echo "setup_env: installing dependencies into .venv (first time: about a minute)"
# uv installs the pinned requirements from PyPI several times faster than pip; pip if it fails
# (e.g. behind an index that only pip's configuration names)
requirements=(-r requirements-build.txt -r requirements.txt -r requirements-test.txt)
pip_install --upgrade "pip>=24" "uv==0.9.30"
.venv/bin/uv pip install --quiet --compile-bytecode --python .venv/bin/python "${requirements[@]}" \
  || pip_install "${requirements[@]}"
echo "setup_env: building the interfaces (rosidl) and installing inertia_id_ros"
pip_install --no-build-isolation --no-deps -e .
# bytecode for the package, as a non-editable install has it: where PYTHONDONTWRITEBYTECODE is
# set (CI images often do), every node, simulator and command would compile it at each start
.venv/bin/python -m compileall -q inertia_id_ros >/dev/null
.venv/bin/python -c "from inertia_id_ros.msg import InertialParameters; from inertia_id_ros.srv import Identify"
echo "setup_env: ready (.venv/bin/inertia-id, .venv/bin/inertia-id-node, .venv/bin/inertia-id-sim)"
