"""The package's import order is part of its design: lower layers never import higher ones.

errors → ir/target/option/atomic_file → transform → te → schedule → lower → codegen → runtime → build → task
→ ops → measure → log → graph → tuner → rpc → cluster → graph_tuner → job → actions → actions.job_file →
commands (a module belongs to the most specific layer naming it).  The action modules of
``engine.actions`` (one per command) never import each other: only ``actions.job_file``, each
command's entry, imports them.  Only ``tunecli/commands/`` may import click, rich or the
plotting libraries (matplotlib, plotext), and engine code never imports the public faces
(``tunecli.te``, ``tunecli.autotvm``, ...).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "tunecli"

LAYERS = [
    ["tunecli.errors"],
    ["tunecli.engine.ir", "tunecli.engine.target", "tunecli.engine.option", "tunecli.engine.atomic_file"],
    ["tunecli.engine.transform"],
    ["tunecli.engine.te"],
    ["tunecli.engine.schedule"],
    ["tunecli.engine.lower"],
    ["tunecli.engine.codegen"],
    ["tunecli.engine.runtime"],
    ["tunecli.engine.build"],
    ["tunecli.engine.task"],
    ["tunecli.engine.ops"],
    ["tunecli.engine.measure"],
    ["tunecli.engine.log"],
    ["tunecli.engine.graph"],
    ["tunecli.engine.tuner"],
    ["tunecli.engine.rpc"],
    ["tunecli.engine.cluster"],
    ["tunecli.engine.graph_tuner"],
    ["tunecli.engine.job"],
    ["tunecli.engine.actions"],
    ["tunecli.engine.actions.job_file"],
    ["tunecli.commands"],
]
#: The package of the engine's actions (one module per command) and its entry module.
ACTIONS, ACTIONS_ENTRY = "tunecli.engine.actions", "tunecli.engine.actions.job_file"
FACES = ("tunecli.te", "tunecli.tir", "tunecli.topi", "tunecli.autotvm", "tunecli.rpc", "tunecli.target",
         "tunecli.nd", "tunecli.runtime", "tunecli.testing", "tunecli.relay", "tunecli.transform",
         "tunecli.contrib")


def _rank(module: str) -> int | None:
    """The layer of ``module``: the one with the longest prefix naming it (None outside every layer)."""
    found = [(len(p), rank) for rank, prefixes in enumerate(LAYERS) for p in prefixes
             if module == p or module.startswith(p + ".")]
    return max(found)[1] if found else None


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rsplit(".", 1)[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            found.extend((node.lineno, f"{module}.{alias.name}") for alias in node.names)
    return found


SOURCES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_imports_only_go_down_the_layers(path: Path) -> None:
    me = _module_name(path)
    my_rank = _rank(me)
    problems = []
    for lineno, target in _imports(path):
        top = target.split(".")[0]
        if top in ("click", "matplotlib", "plotext") or target.startswith("rich"):
            if not me.startswith("tunecli.commands"):
                problems.append(f"line {lineno}: {target} may only be imported in tunecli.commands")
        if my_rank is None or not target.startswith("tunecli"):
            continue
        if any(target == f or target.startswith(f + ".") for f in FACES):
            problems.append(f"line {lineno}: engine code imports the public face {target}")
            continue
        rank = _rank(target)
        if rank is not None and rank > my_rank:
            problems.append(f"line {lineno}: {me} (layer {my_rank}) imports {target} (layer {rank})")
    assert not problems, "\n".join(problems)


def test_no_two_engine_modules_share_a_file_name() -> None:
    """A file name names one concept; only an operator's generic and per-target modules may share one
    (``ops/nn/conv2d.py`` and ``ops/x86/conv2d.py``)."""
    engine = PACKAGE / "engine"
    seen: dict[str, list[str]] = {}
    for path in engine.rglob("*.py"):
        if path.name == "__init__.py" or path.relative_to(engine).parts[0] == "ops":
            continue
        seen.setdefault(path.name, []).append(str(path.relative_to(PACKAGE.parent)))
    repeated = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not repeated, f"engine modules sharing a file name: {repeated}"


def _action_module(module: str) -> str | None:
    """The action module ``module`` is or lies in (``tunecli.engine.actions.tune``), or None."""
    if not module.startswith(ACTIONS + "."):
        return None
    return ".".join(module.split(".")[:4])


@pytest.mark.parametrize("path", sorted((PACKAGE / "engine" / "actions").rglob("*.py")),
                         ids=lambda p: str(p.relative_to(PACKAGE / "engine" / "actions")))
def test_action_modules_never_import_each_other(path: Path) -> None:
    """An action may be a package of modules (``actions/tune/``): they import each other, no other action."""
    me = _module_name(path)
    if me in (ACTIONS, ACTIONS_ENTRY):
        return
    mine = _action_module(me)
    problems = [f"line {lineno}: {me} imports the action {target}" for lineno, target in _imports(path)
                if _action_module(target) not in (None, mine)]
    assert not problems, "\n".join(problems)
