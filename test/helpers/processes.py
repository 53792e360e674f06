"""Child processes as users run them."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path


def console_script(name: str, module: str) -> list[str]:
    """``.venv/bin/<name>`` as users run it, else ``python -m module``."""
    script = Path(sys.executable).parent / name
    return [str(script)] if script.exists() else [sys.executable, "-m", module]


class Process:
    """A child process whose output goes to a log file, stopped with SIGINT."""

    def __init__(self, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.log_path = log
        self._log = open(log, "w")
        self.popen = subprocess.Popen(argv, env=env, stdout=self._log, stderr=subprocess.STDOUT)

    def output(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text()

    def alive(self) -> bool:
        return self.popen.poll() is None

    def exit_code(self, timeout: float) -> int | None:
        """The process's exit code once it ends within ``timeout`` s; ``None`` if it is still
        running then (for an assertion that shows its output instead of a bare timeout)."""
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, timeout: float = 10.0) -> int:
        if self.alive():
            self.popen.send_signal(signal.SIGINT)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self._log.close()
        return self.popen.returncode
