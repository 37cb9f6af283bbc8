"""Docs that run: every fenced block of README.md and docs/*.md whose info string says
``runnable`` (```` ```python runnable ```` or ```` ```bash runnable ````; add ``slow`` for a block
that takes minutes) is executed, each in a fresh folder, so examples cannot rot. A block must
be self-contained: it creates its inputs and runs on the CPU."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

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


def _run(block: Block, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
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
def test_runnable_block(block: Block, tmp_path: Path) -> None:
    result = _run(block, tmp_path)
    assert result.returncode == 0, (
        f"{block.id} failed (exit {result.returncode}):\n{result.stdout[-3000:]}\n"
        f"{result.stderr[-3000:]}"
    )
