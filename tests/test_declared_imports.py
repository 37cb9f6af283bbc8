"""Every third-party package the sources import is declared in pyproject.toml (issue 34: PIL
arrived only through torchvision and matplotlib), as a dependency or an optional extra."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = [*project["dependencies"],
                    *(r for extra in project["optional-dependencies"].values() for r in extra)]
    return {re.split(r"[<>=!~\[ ;]", r, maxsplit=1)[0].lower().replace("_", "-")
            for r in requirements}


def _imported() -> dict[str, str]:
    """Top-level module -> a file importing it, for every import in src/ (functions too)."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "src").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], str(path.relative_to(ROOT)))
    return found


def test_every_imported_package_is_declared() -> None:
    declared = _declared()
    owners = packages_distributions()
    missing = []
    for module, where in _imported().items():
        if module in sys.stdlib_module_names or module == "shortcutlab":
            continue
        dists = {d.lower().replace("_", "-") for d in owners.get(module, [module])}
        if not dists & declared:
            missing.append(f"{module} ({'/'.join(sorted(dists))}, e.g. {where})")
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"
    assert "pillow" in declared
