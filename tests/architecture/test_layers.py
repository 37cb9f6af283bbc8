"""The package's layering (docs/architecture.md): no module imports a higher layer, and within a
layer only the declared dependencies exist. Imports inside functions count too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import shortcutlab

# Layer of each top-level package of shortcutlab (higher number = higher layer).
LAYERS: dict[str, int] = {
    "errors": 0, "utils": 0,
    "train": 1, "runner": 1, "stats": 1, "factor_analysis": 1,
    "diagvib": 2, "biasbed": 2, "vqa": 2, "imagenetx": 2,
    "cli": 3, "demo": 3,
    "__main__": 4,  # `python -m shortcutlab`: the command line
}
# Imports allowed between different packages of the same layer.
SAME_LAYER: set[tuple[str, str]] = {
    ("runner", "train"),     # a job carries its TrainConfig
    ("biasbed", "diagvib"),  # DiagViB-6 experiments are BiasBed datasets
    ("cli", "demo"),         # `shortcutlab demo` runs the demo package
    ("utils", "errors"),     # helpers raise the one error hierarchy
}
PACKAGE_ROOT = Path(shortcutlab.__file__).parent


def _package_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "shortcutlab":
        return None
    return parts[1] if len(parts) > 1 else ""


def violations(root: Path) -> list[str]:
    """Every import under ``root`` (a shortcutlab source tree) that breaks the layering."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        source = rel.parts[0].removesuffix(".py") if len(rel.parts) > 1 else rel.stem
        if source == "__init__":
            source = ""
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for module in targets:
                target = _package_of(module)
                if target is None or target == source or source == "" or target == "":
                    continue  # the root package holds only the version and imports nothing
                if target not in LAYERS or source not in LAYERS:
                    found.append(f"{rel}:{node.lineno} imports {module} (package not layered)")
                elif LAYERS[target] > LAYERS[source]:
                    found.append(f"{rel}:{node.lineno} imports {module}: upward "
                                 f"({source} is layer {LAYERS[source]}, {target} "
                                 f"layer {LAYERS[target]})")
                elif LAYERS[target] == LAYERS[source] and (source, target) not in SAME_LAYER:
                    found.append(f"{rel}:{node.lineno} imports {module}: same layer, "
                                 f"undeclared ({source} -> {target})")
    return found


def test_every_package_has_a_layer() -> None:
    packages = {p.name for p in PACKAGE_ROOT.iterdir() if p.is_dir() and p.name != "__pycache__"}
    modules = {p.stem for p in PACKAGE_ROOT.glob("*.py") if p.stem != "__init__"}
    assert packages | modules == set(LAYERS)


def test_the_root_package_imports_nothing_of_its_own() -> None:
    tree = ast.parse((PACKAGE_ROOT / "__init__.py").read_text(encoding="utf-8"))
    assert not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]


def test_no_module_imports_a_higher_layer() -> None:
    assert violations(PACKAGE_ROOT) == []


@pytest.mark.parametrize(
    ("where", "line", "expected"),
    [
        ("stats/compare.py", "from shortcutlab.diagvib import report", "upward"),
        ("utils/io.py", "    import shortcutlab.runner.jobs", "upward"),  # inside a function
        ("train/trainer.py", "from shortcutlab.stats import compare", "same layer"),
        ("diagvib/metrics.py", "from shortcutlab.cli import main", "upward"),
    ],
)
def test_the_checker_catches_a_planted_violation(
    tmp_path: Path, where: str, line: str, expected: str
) -> None:
    tree = tmp_path / "shortcutlab"
    target = tree / where
    target.parent.mkdir(parents=True)
    body = f"def f():\n{line}\n" if line.startswith(" ") else f"{line}\n"
    target.write_text(body, encoding="utf-8")
    (tree / "cli").mkdir()
    (tree / "cli" / "main.py").write_text("from shortcutlab.diagvib import report\n")
    found = violations(tree)
    assert len(found) == 1 and expected in found[0] and where in found[0]


# ------------------------------------------------------------------ engines know no benchmark
ENGINES = ("train", "runner", "stats", "factor_analysis")
# Words an engine must not use: a benchmark's factor and study names and a paper's baselines
# (models registered with their own algorithm, and those algorithms) as string values, and
# identifiers naming DiagViB-6 or its DiagViB-only notions.
BENCHMARK_IDENTIFIERS = {"benchmark_seed", "factor_classes"}
#: The papers' training presets, registered by their areas (the engine's own is "default").
PAPER_PRESETS = {"paper", "demo", "biasbed"}


def _baseline_words() -> set[str]:
    from shortcutlab.train.models import implied_algorithm, list_models

    implied = {m: implied_algorithm(m) for m in list_models()}
    return {m for m, a in implied.items() if a} | {a for a in implied.values() if a}


def _benchmark_words() -> set[str]:
    from shortcutlab.diagvib.factors import FACTORS
    from shortcutlab.diagvib.spec import STUDIES

    return set(FACTORS) | set(STUDIES) | _baseline_words()


def benchmark_concepts(root: Path, packages: tuple[str, ...] = ENGINES) -> set[tuple[str, str]]:
    """(file, concept) for every benchmark concept an engine module under ``root`` names: a
    string value equal to a factor or study name, or an identifier naming DiagViB-6."""
    words = _benchmark_words()
    found: set[tuple[str, str]] = set()
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    if node.value.strip() in words:
                        found.add((rel, node.value.strip()))
                    continue
                name = (node.id if isinstance(node, ast.Name) else
                        node.attr if isinstance(node, ast.Attribute) else
                        node.arg if isinstance(node, ast.arg) else
                        node.name if isinstance(node, ast.FunctionDef | ast.ClassDef) else None)
                if name and ("diagvib" in name.lower() or name in BENCHMARK_IDENTIFIERS):
                    found.add((rel, name))
                found |= {(rel, preset) for preset in _paper_presets(node)}
    return found


def _named_preset(node: ast.AST) -> bool:
    name = (node.id if isinstance(node, ast.Name) else node.attr
            if isinstance(node, ast.Attribute) else "")
    return "preset" in name.lower()


def _paper_presets(node: ast.AST) -> set[str]:
    """Paper preset names used as presets at ``node``: ``preset="paper"``, ``x.preset ==
    "demo"``, ``PRESET = "biasbed"``, ``get_preset("paper")`` (a "paper" that means something
    else, e.g. an algorithm's option, is not one)."""
    values: list[ast.AST] = []
    if isinstance(node, ast.keyword) and node.arg and "preset" in node.arg.lower():
        values = [node.value]
    elif isinstance(node, ast.Compare) and any(map(_named_preset, [node.left, *node.comparators])):
        values = [node.left, *node.comparators]
    elif isinstance(node, ast.Assign) and any(map(_named_preset, node.targets)):
        values = [node.value]
    elif isinstance(node, ast.Call) and _named_preset(node.func):
        values = list(node.args)
    return {v.value for v in values if isinstance(v, ast.Constant) and v.value in PAPER_PRESETS}


def test_engines_name_no_benchmark_concept() -> None:
    assert benchmark_concepts(PACKAGE_ROOT) == set(), "an engine names a benchmark concept"


@pytest.mark.parametrize(
    ("line", "concept"),
    [
        ('PREDICTED = "texture"', "texture"),
        ("def f(job):\n    return job.benchmark_seed", "benchmark_seed"),
        ("from x import y\nis_diagvib = True", "is_diagvib"),
        ('STUDY = "CHGO"', "CHGO"),
        ('PRESET = "paper"', "paper"),
        ("from x import get_preset\nget_preset('demo')", "demo"),
        ('def f(config):\n    return config.preset == "biasbed"', "biasbed"),
        ('MODEL_ALGORITHMS = {"vae": "vae"}', "vae"),  # a paper's baseline
        ('if name == "asr_rn18":\n    pass', "asr_rn18"),
    ],
)
def test_the_concept_checker_catches_a_planted_name(tmp_path: Path, line: str,
                                                     concept: str) -> None:
    engine = tmp_path / "train"
    engine.mkdir()
    (engine / "fine.py").write_text('x = y.shape\nmode = "scale up"\n', encoding="utf-8")
    (engine / "planted.py").write_text(line + "\n", encoding="utf-8")
    assert benchmark_concepts(tmp_path) == {("train/planted.py", concept)}


# ------------------------------------------------------------------ no import circles
#: Module loops that stay, by design: a name is checked against a registry whose entries are
#: made of the checking module's own type. Each closes only inside a function (at a registry's
#: first lookup) or under TYPE_CHECKING, so importing one module never runs the other.
ALLOWED_CIRCLES = {
    # an ExperimentSpec checks its study against the study registry; the paper's studies
    # (registered at the first lookup) are made of specs
    frozenset({"diagvib/spec.py", "diagvib/studies.py"}),
    # a TrainConfig checks its preset and algorithm against their registries; presets are
    # validated as TrainConfigs, algorithms are built from one
    frozenset({"train/config.py", "train/presets.py", "train/algorithms/__init__.py",
               "train/algorithms/base.py"}),
}


def _module_files(root: Path) -> dict[str, str]:
    """Dotted module name -> file (relative to ``root``, the ``shortcutlab`` folder)."""
    files = {}
    for path in root.rglob("*.py"):
        rel = path.relative_to(root)
        parts = ["shortcutlab", *rel.with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        files[".".join(parts)] = rel.as_posix()
    return files


def import_circles(root: Path) -> set[frozenset[str]]:
    """The files under ``root`` that import each other in a loop (strongly connected groups of
    two or more), every import counted: inside functions and under TYPE_CHECKING too. ``from
    package import module`` leads to the module."""
    from scipy.sparse import coo_array
    from scipy.sparse.csgraph import connected_components

    files = _module_files(root)
    names = sorted(set(files.values()))
    index = {name: i for i, name in enumerate(names)}
    edges = set()
    for rel in files.values():
        for node in ast.walk(ast.parse((root / rel).read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in files
                           else node.module for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            edges |= {(index[rel], index[files[t]]) for t in targets
                      if t in files and files[t] != rel}
    if not edges:
        return set()
    rows, cols = zip(*sorted(edges), strict=True)
    graph = coo_array(([1] * len(rows), (rows, cols)), shape=(len(names), len(names)))
    _, labels = connected_components(graph, directed=True, connection="strong")
    groups: dict[int, set[str]] = {}
    for name, label in zip(names, labels, strict=True):
        groups.setdefault(int(label), set()).add(name)
    return {frozenset(g) for g in groups.values() if len(g) > 1}


def test_no_import_circles_but_the_registries() -> None:
    assert import_circles(PACKAGE_ROOT) == ALLOWED_CIRCLES


def test_the_circle_finder_finds_a_planted_loop(tmp_path: Path) -> None:
    tree = tmp_path / "shortcutlab"
    (tree / "utils").mkdir(parents=True)
    (tree / "utils" / "__init__.py").write_text("")
    (tree / "utils" / "a.py").write_text("from shortcutlab.utils import b\n")
    (tree / "utils" / "b.py").write_text("def f():\n    from shortcutlab.utils.c import x\n")
    (tree / "utils" / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                         "    import shortcutlab.utils.a\n")
    (tree / "utils" / "d.py").write_text("import shortcutlab.utils.a\n")
    assert import_circles(tree) == {frozenset({"utils/a.py", "utils/b.py", "utils/c.py"})}


# ------------------------------------------------------------------ private names stay home
def private_imports(root: Path) -> list[str]:
    """``from shortcutlab.x import _name`` anywhere under ``root``: a name used by another
    module is part of its module's interface, so it carries no leading underscore."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("shortcutlab"):
                found += [f"{path.relative_to(root)}:{node.lineno} {node.module}.{a.name}"
                          for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    return found


def test_no_module_imports_another_modules_private_name() -> None:
    assert private_imports(PACKAGE_ROOT) == []


def test_the_private_import_finder_finds_one(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("from shortcutlab.utils.io import _x, y\n"
                                   "from shortcutlab import __version__\n"
                                   "def f():\n    from shortcutlab.b import _z\n")
    assert private_imports(tmp_path) == ["a.py:1 shortcutlab.utils.io._x",
                                         "a.py:4 shortcutlab.b._z"]


# ------------------------------------------------------------------ the engines' module map
def test_the_architecture_page_maps_every_module_of_train_and_runner() -> None:
    """docs/architecture.md's "Inside the two engines" table names each module of ``train`` and
    ``runner`` (``train/algorithms/`` as one package), and no module that is gone."""
    import re

    page = (PACKAGE_ROOT.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = page.split("## Inside the two engines", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`((?:train|runner)/[\w/]+(?:\.py|/))`", section))
    present = {f"{package}/{p.name}" for package in ("train", "runner")
               for p in (PACKAGE_ROOT / package).glob("*.py") if p.name != "__init__.py"}
    present.add("train/algorithms/")
    assert named == present
