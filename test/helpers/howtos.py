"""The how-to pages' shell commands, run as written: the blocks of a page, what each command must
exit with, the figures the page quotes (``docs/figures.yaml``), and a runner shared by the docs
test (``test/unit/project/test_howtos.py``) and ``benchmarks/run_docs.py``.

A page's ```` ```bash ```` blocks run in order in one empty folder (with the repository's
``config/`` in it, and the repository as ``inertia_id_ros/``: the folder that holds a clone),
each command as ``bash -c`` with ``.venv/bin/`` the running interpreter's ``bin/`` (a
here-document is one command). A comment on the line before a block's fence says how the test
takes it::

    <!-- docs-test: skip (needs the ros2 command line) -->   never run; the reason is shown
    <!-- docs-test: long -->                                  run by benchmarks/run_docs.py only
    <!-- docs-test: until-stopped -->  each command runs until Ctrl-C: it must start and stay up
                                       for UNTIL_STOPPED_SEC without an error, then end on SIGINT

A command ending in ``&`` runs in the background until the page's last command has run (then it
gets SIGINT). A command's trailing comment ``# exit N`` is the exit code it must give (else 0). A
figure the page quotes is written ``<!-- fig NAME -->VALUE<!-- /fig -->``: ``docs/figures.yaml``
says which command prints it (a regular expression on its output) and its tolerance;
``benchmarks/run_docs.py --write`` regenerates the values from a run.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted((REPO / "docs" / "how-to").glob("*.md")) + [REPO / "README.md"]
FIGURES = REPO / "docs" / "figures.yaml"
VENV_BIN = Path(sys.executable).parent

_BLOCK = re.compile(r"(?:<!-- docs-test: (?P<mark>[^>]*?) -->\n)?```bash\n(?P<body>.*?)```", re.S)
_FIGURE = re.compile(r"<!-- fig (?P<name>[\w.]+) -->(?P<value>[^<]*)<!-- /fig -->")
_EXIT = re.compile(r"#.*\bexit (\d+)\b")
_HEREDOC = re.compile(r"<<-?\s*'?(?P<end>\w+)'?")
UNTIL_STOPPED_SEC = 2.0
"""How long a command that runs until stopped must stay up after it has said it is running (its
first ``[INFO]`` line; at most :data:`START_TIMEOUT_SEC` after its start) (s)."""
START_TIMEOUT_SEC = 30.0
ERRORS = ("Traceback (most recent call last)", "[ERROR]")
"""What must not appear in the output of a command that runs until stopped."""


@dataclass(frozen=True)
class Command:
    """One command of a page: its ``text`` as written (continuation lines joined), the ``exit``
    code it must give, its block and position (from 0)."""

    text: str
    exit: int
    block: int
    index: int


@dataclass(frozen=True)
class Block:
    """A bash block: its commands and the test's ``mark`` (``""``, ``"long"``, ``"skip (...)"``)."""

    commands: tuple[Command, ...]
    mark: str

    @property
    def skipped(self) -> bool:
        """Never run (the mark gives the reason)."""
        return self.mark.startswith("skip")


def page_name(page: Path) -> str:
    """``how-to/replay-bag.md`` or ``README.md``."""
    return str(page.relative_to(REPO / "docs")) if "docs" in page.parts else page.name


def blocks(page: Path) -> list[Block]:
    """The bash blocks of ``page`` in order."""
    found = []
    for number, match in enumerate(_BLOCK.finditer(page.read_text(encoding="utf-8"))):
        lines = [line for line in _command_lines(match["body"]) if _strip_comment(line)]
        commands = tuple(
            Command(_strip_comment(line), _expected_exit(line), number, k)
            for k, line in enumerate(lines)
        )
        found.append(Block(commands, (match["mark"] or "").strip()))
    return found


def _command_lines(body: str) -> list[str]:
    """A block's commands: continuation lines joined; a here-document (``<<'EOF'`` ... ``EOF``)
    kept whole, with its lines."""
    lines, out = body.replace("\\\n", " ").splitlines(), []
    while lines:
        line = lines.pop(0)
        heredoc = _HEREDOC.search(line)
        if heredoc:
            end = lines.index(heredoc["end"])
            line, lines = "\n".join([line, *lines[: end + 1]]), lines[end + 1 :]
        out.append(line)
    return out


def _strip_comment(line: str) -> str:
    """``line`` without its trailing comment (a ``#`` after whitespace, outside quotes); a
    here-document as it is."""
    if "\n" in line:
        return line
    quote = ""
    for k, char in enumerate(line):
        if char in "'\"":
            quote = "" if quote == char else (quote or char)
        elif char == "#" and not quote and (k == 0 or line[k - 1].isspace()):
            return line[:k].strip()
    return line.strip()


def _expected_exit(line: str) -> int:
    match = _EXIT.search(line[len(_strip_comment(line)) :])
    return int(match[1]) if match else 0


def page_figures(page: Path) -> dict[str, str]:
    """The figures ``page`` quotes: name -> the value as written."""
    return {m["name"]: m["value"] for m in _FIGURE.finditer(page.read_text(encoding="utf-8"))}


def figure_table() -> dict[str, dict]:
    """``docs/figures.yaml``: name -> {page, block, command, pattern, scale, format, tolerance,
    value}."""
    return yaml.safe_load(FIGURES.read_text(encoding="utf-8")) or {}


@dataclass
class Outcome:
    """What a command did: exit code, output (stdout and stderr), seconds."""

    command: Command
    code: int
    output: str
    seconds: float


@dataclass
class PageRun:
    """A page's commands run in ``folder``: their outcomes, and the blocks left out."""

    page: Path
    folder: Path
    outcomes: list[Outcome] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)


def run_page(page: Path, folder: Path, long: bool = False, timeout: float = 600.0) -> PageRun:
    """Run ``page``'s blocks in order in ``folder`` (created; ``config/`` copied in), the
    ``long`` ones too when asked; stops at the first command that exits otherwise than the
    page says."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copytree(REPO / "config", folder / "config", dirs_exist_ok=True)
    clone = folder / "inertia_id_ros"  # "the folder that holds your clone"
    if not clone.exists():
        clone.symlink_to(REPO)
    env = dict(os.environ, PATH=f"{VENV_BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    run = PageRun(page, folder)
    background: list[subprocess.Popen] = []
    try:
        for block in blocks(page):
            if block.skipped or (block.mark == "long" and not long):
                run.left_out.append(f"block {block.commands[0].block}: {block.mark}")
                continue
            for command in block.commands:
                text = command.text.replace(".venv/bin/", f"{VENV_BIN}/")
                if text.endswith("&"):
                    background.append(_start(text[:-1], folder, env))
                    continue
                run_command = _until_stopped if block.mark == "until-stopped" else _to_the_end
                started = time.perf_counter()
                code, output = run_command(text, folder, env, timeout)
                run.outcomes.append(Outcome(command, code, output, time.perf_counter() - started))
                if code != command.exit:
                    return run
    finally:
        for process in background:
            _stop(process)
    return run


def _start(text: str, folder: Path, env: dict) -> subprocess.Popen:
    log = open(folder / f"background_{time.monotonic_ns()}.log", "w")  # the child writes it
    return subprocess.Popen(
        ["bash", "-c", f"exec {text}"],
        cwd=folder,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _stop(process: subprocess.Popen) -> int:
    """SIGINT to ``process``'s group, SIGKILL if it has not ended 30 s later; its exit code."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)
    try:
        return process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        return process.wait()


def _to_the_end(text: str, folder: Path, env: dict, timeout: float) -> tuple[int, str]:
    done = subprocess.run(
        ["bash", "-c", text], cwd=folder, env=env, capture_output=True, text=True, timeout=timeout
    )
    return done.returncode, done.stdout + done.stderr


def _until_stopped(text: str, folder: Path, env: dict, timeout: float) -> tuple[int, str]:
    """Start ``text``, let it run until it has said so and :data:`UNTIL_STOPPED_SEC` more, stop
    it with SIGINT: its exit code (-1 if it ended by itself, or an error was printed) and
    output."""
    log = folder / f"until_stopped_{time.monotonic_ns()}.log"
    with open(log, "w") as out:
        process = subprocess.Popen(
            ["bash", "-c", f"exec {text}"],
            cwd=folder,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        started = time.monotonic()
        while process.poll() is None and time.monotonic() - started < START_TIMEOUT_SEC:
            if "[INFO]" in log.read_text():
                break
            time.sleep(0.2)
        time.sleep(UNTIL_STOPPED_SEC)
        ended = process.poll() is not None
        code = _stop(process)
    output = log.read_text()
    return (-1 if ended or any(e in output for e in ERRORS) else code), output


def figure_value(run: PageRun, name: str, spec: dict) -> float | None:
    """The figure ``name`` as the run printed it (``None``: its command did not run)."""
    for outcome in run.outcomes:
        if (outcome.command.block, outcome.command.index) == (spec["block"], spec["command"]):
            match = re.search(spec["pattern"], outcome.output)
            if match is None:
                raise AssertionError(
                    f"{name}: {spec['pattern']!r} not in the output of "
                    f"{outcome.command.text!r}:\n{outcome.output[-2000:]}"
                )
            return float(match[1]) * float(spec.get("scale", 1.0))
    return None


def within(value: float, quoted: float, tolerance: str) -> bool:
    """Whether ``value`` is within ``tolerance`` (``"10%"`` relative, or absolute) of
    ``quoted``."""
    if tolerance.endswith("%"):
        return abs(value - quoted) <= abs(quoted) * float(tolerance[:-1]) / 100.0
    return abs(value - quoted) <= float(tolerance)
