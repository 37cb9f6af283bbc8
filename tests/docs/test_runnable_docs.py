"""Docs that run: every fenced block of README.md and docs/*.md whose info string says
``runnable`` (```` ```python runnable ```` or ```` ```bash runnable ````; add ``slow`` for a block
that takes 2 s or more, the suite's rule for `make test-fast`) is executed, each in a fresh
folder, so examples cannot rot. A block must be self-contained: it creates its inputs and runs
on the CPU.

A Python block runs as ``python -c`` would, in a child forked from an interpreter that imported
the blocks' libraries once and ran nothing else (``forkrun``), which saves a start-up of torch,
pandas and matplotlib per block. Bash blocks run in ``bash`` as written, with a ``shortcutlab``
first on ``PATH`` that runs each command the same way. Add ``fresh`` for a block that needs
brand-new interpreters (e.g. one that checks what is imported). The entry point's own start-up is
tested where it matters (tests/cli, tests/diagvib: real subprocesses)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.docs.forkrun import ForkServer

ROOT = Path(__file__).resolve().parents[2]
USER_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w+)((?:[ \t]+\w+)*)[ \t]*$")
TIMEOUT = 900


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    language: str
    flags: frozenset[str]
    code: str

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def runnable_blocks(path: Path) -> list[Block]:
    """The fenced blocks of ``path`` marked runnable, with the line of their opening fence."""
    blocks: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if match is None:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"),
                   len(lines))
        flags = frozenset(match.group(2).split())
        if "runnable" in flags:
            blocks.append(Block(path, i + 1, match.group(1), flags,
                                "\n".join(lines[i + 1:end]) + "\n"))
        i = end + 1
    return blocks


BLOCKS = [b for doc in USER_DOCS for b in runnable_blocks(doc)]


def test_parser_finds_marked_blocks_only(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text("```python\nnot run\n```\n\n```bash runnable slow\necho hi\n```\n"
                   "```python runnable\nprint(1)\n```\n")
    blocks = runnable_blocks(doc)
    assert [(b.language, sorted(b.flags), b.code, b.line) for b in blocks] == [
        ("bash", ["runnable", "slow"], "echo hi\n", 5), ("python", ["runnable"], "print(1)\n", 8)]


def test_every_area_has_runnable_docs() -> None:
    names = {b.path.name for b in BLOCKS}
    assert {"README.md", "own-model.md"} <= names, names
    assert sum(b.path.name == "own-model.md" for b in BLOCKS) >= 4  # the four tasks


@pytest.mark.parametrize("doc", USER_DOCS, ids=lambda p: p.name)
def test_user_docs_name_no_development_paths(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    assert not re.search(r"\.\./shared|/work/|\bshared/(papers|data)\b", text)


@pytest.mark.parametrize("doc", USER_DOCS, ids=lambda p: p.name)
def test_examples_import_from_the_area(doc: Path) -> None:
    """``from shortcutlab.diagvib import ...``, never a module path (helpers in utils aside)."""
    deep = re.findall(r"^\s*(?:from|import) (shortcutlab\.(?!utils\.)\w+\.[\w.]+)",
                      doc.read_text(encoding="utf-8"), flags=re.MULTILINE)
    assert not deep, f"{doc.name} imports module paths: {sorted(set(deep))}"


IMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import\b|import\s+([^#\n]+))", flags=re.MULTILINE)


def imported_modules(blocks: list[Block]) -> set[str]:
    """The modules the Python blocks import (``import a, b.c`` / ``from d.e import f``)."""
    found: set[str] = set()
    for block in blocks:
        if block.language == "python":
            for match in IMPORT.finditer(block.code):
                found.update(part.split()[0] for part in (match[1] or match[2]).split(","))
    return found


def _env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg",
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def test_imported_modules_are_read_from_python_blocks_only(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text("```python runnable\nimport numpy as np, os.path\n"
                   "    from pandas.api import types\nx = 1  # import nothing\n```\n"
                   "```bash runnable\nimport torch\n```\n")
    assert imported_modules(runnable_blocks(doc)) == {"numpy", "os.path", "pandas.api"}


# what the command line imports besides (the blocks' own imports are added)
CLI_PRELOAD = {"shortcutlab.cli.main", "shortcutlab.stats", "scipy.stats", "matplotlib.pyplot",
               "torch", "torchvision"}


@pytest.fixture(scope="module")
def fork_server() -> Iterator[Callable[[], ForkServer]]:
    """Started on first use: one per module and worker, preloading what the blocks and the
    command line import (modules the blocks write themselves, such as ``my_models``, are left
    out)."""
    started: list[ForkServer] = []

    def get() -> ForkServer:
        if not started:
            names = {n for n in imported_modules(BLOCKS) | CLI_PRELOAD
                     if importlib.util.find_spec(n.split(".")[0]) is not None}
            started.append(ForkServer(names, _env()))
        return started[0]

    yield get
    for server in started:
        server.close()


def test_fork_server_runs_like_python_c(fork_server: Callable[[], ForkServer],
                                        tmp_path: Path) -> None:
    """Same folder, import path, argv, ``__main__``, stdin, output and exit status as
    ``python -c``, for a clean exit, ``sys.exit(n)``, ``sys.exit(text)`` and an exception."""
    code = ("import sys, os, pathlib\n"
            "pathlib.Path('mine.py').write_text('X = 7\\n')\n"
            "import mine\n"
            "print(os.path.basename(os.getcwd()), sys.argv, __name__, mine.X,"
            " repr(sys.stdin.read()))\n"
            "def f(): pass\n"
            "print(sys.modules['__main__'].f is f, file=sys.stderr)\n")
    endings = ["", "sys.exit(3)\n", "sys.exit('bye')\n", "raise ValueError('no')\n"]
    server = fork_server()
    for i, ending in enumerate(endings):
        for how in ("fresh", "forked"):
            (tmp_path / how / str(i)).mkdir(parents=True)
        expected = subprocess.run([sys.executable, "-c", code + ending],
                                  cwd=tmp_path / "fresh" / str(i), env=_env(),
                                  capture_output=True, text=True, stdin=subprocess.DEVNULL)
        out, err = tmp_path / "out", tmp_path / "err"
        status = server.run(code + ending, tmp_path / "forked" / str(i), _env(), out, err, 60)
        assert (status, out.read_text(), err.read_text()) == (
            expected.returncode, expected.stdout, expected.stderr), ending
    assert [expected.returncode, "ValueError: no" in expected.stderr] == [1, True]


@pytest.mark.slow  # 2 s or more on 2 idle cores (make test-fast leaves it out)
def test_fork_server_runs_the_cli_like_its_script(fork_server: Callable[[], ForkServer],
                                                  tmp_path: Path) -> None:
    """A bash script calling ``shortcutlab`` and ``python`` prints the same and exits the same
    through the server's shims as through the installed script and interpreter: output, pipes,
    errors (exit 2), a model module looked up from the working directory, a usage error;
    ``python -c`` and ``python -`` with arguments, a script on stdin that exits with a message,
    and a form the shim hands to the real interpreter (``-m``)."""
    script = (
        "shortcutlab --version\n"
        "python -c 'import sys; print(sys.argv, __name__, sys.path[0] == \"\")' a b\n"
        "printf 'import sys\\nprint(sys.argv, __name__)\\nsys.exit(\"bye\")\\n' | python - x"
        " || echo \"exit $?\"\n"
        "python -m shortcutlab --version\n"
        "shortcutlab diagvib factors | head -3\n"
        "printf 'b,x,y\\na,1,2\\nc,3,4\\n' > s.csv\n"
        "shortcutlab stats compare s.csv --json | head -c 300; echo\n"
        "shortcutlab stats compare missing.csv || echo \"exit $?\"\n"
        "echo 'def f(n): raise SystemExit(\"built \" + str(n))' > mine.py\n"
        "shortcutlab diagvib run --model mine:f --study ZSO --pairs hue-shape --samples 0"
        " --scale 0.002 --epochs 1 --backend serial --out runs || echo \"exit $?\"\n"
        "shortcutlab stats nosuch\n")
    results = []
    for how, path in (("fresh", ""), ("forked", f"{fork_server().shim()}{os.pathsep}")):
        cwd = tmp_path / how
        cwd.mkdir()
        env = _env()
        env["PATH"] = path + env["PATH"]
        done = subprocess.run(["bash", "-uo", "pipefail", "-c", script], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=300)
        results.append((done.returncode, done.stdout, done.stderr.replace(str(cwd), "CWD")))
    assert results[0] == results[1]
    returncode, stdout, stderr = results[0]
    assert returncode == 2 and stdout.count("exit 2") == 2, (stdout, stderr)
    assert "['-c', 'a', 'b'] __main__ True" in stdout and "['-', 'x'] __main__" in stdout
    assert "exit 1" in stdout and "bye" in stderr
    assert '"df_convention": "textbook"' in stdout
    assert "model 'mine:f': building it failed" in stderr
    assert "No such command 'nosuch'" in stderr


def _run(block: Block, cwd: Path,
         fork_server: Callable[[], ForkServer]) -> subprocess.CompletedProcess[str]:
    env = _env()
    if block.language == "python" and "fresh" not in block.flags:
        out, err = cwd.parent / f"{cwd.name}.stdout", cwd.parent / f"{cwd.name}.stderr"
        status = fork_server().run(block.code, cwd, env, out, err, TIMEOUT)
        return subprocess.CompletedProcess([], status, out.read_text(), err.read_text())
    if "fresh" not in block.flags:  # bash: its shortcutlab commands run through the server
        env["PATH"] = f"{fork_server().shim()}{os.pathsep}{env['PATH']}"
    if block.language == "python":
        cmd = [sys.executable, "-c", block.code]
    elif block.language in ("bash", "sh", "shell"):
        cmd = ["bash", "-euo", "pipefail", "-c", block.code]
    else:
        raise AssertionError(f"{block.id}: cannot run a {block.language!r} block")
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT, check=False)


@pytest.mark.parametrize(
    "block",
    [pytest.param(b, marks=pytest.mark.slow) if "slow" in b.flags else b for b in BLOCKS],
    ids=lambda b: b.id,
)
def test_runnable_block(block: Block, tmp_path: Path,
                        fork_server: Callable[[], ForkServer]) -> None:
    cwd = tmp_path / "block"
    cwd.mkdir()
    result = _run(block, cwd, fork_server)
    assert result.returncode == 0, (
        f"{block.id} failed (exit {result.returncode}):\n{result.stdout[-3000:]}\n"
        f"{result.stderr[-3000:]}"
    )
