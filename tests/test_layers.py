"""The architecture the folders draw: harness/ in sub-packages by stage of a run, imports one way.

Every import counts, those inside functions too: an import made late still ties two modules. The
rule (docs/architecture.md): a sub-package imports only from those below it in LAYERS; engines/
and workloads/ import nothing from harness/; no two project modules import each other, directly or
round a circle.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harness", "engines", "workloads")
# Top to bottom: each imports only from the layers after it. The modules at harness/'s root
# (errors, units, the version) are the floor every layer may stand on.
LAYERS = ("harness.commands", "harness.cluster", "harness.report", "harness.judging", "harness.running", "harness.planning", "harness.envs",
          "harness.analysis", "harness.store", "harness.machine", "harness.measure", "harness", "engines",
          "workloads")


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def imports(name: str, path: Path, known: dict) -> set[str]:
    """The project modules `name` imports anywhere in its file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            wanted = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            wanted = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in wanted:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name and target.split(".")[0] in PACKAGES:
                targets.add(target)
    return targets


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def layer(module: str) -> str:
    return next(top for top in LAYERS if module == top or module.startswith(top + "."))


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle_between_project_modules():
    assert circles(graph()) == []


def test_each_layer_imports_only_the_layers_below_it(capsys):
    edges = graph()
    uphill, drawn = [], {}
    for source, targets in sorted(edges.items()):
        for target in sorted(targets):
            upper, lower = layer(source), layer(target)
            if upper != lower:
                drawn.setdefault(upper, set()).add(lower)
            if LAYERS.index(lower) < LAYERS.index(upper):
                uphill.append(f"{source} -> {target}")
    with capsys.disabled():
        print("\nthe sub-package graph (each imports from):")
        for upper in LAYERS:
            below = sorted(drawn.get(upper, ()), key=LAYERS.index)
            print(f"  {upper:<18} {', '.join(below) or '-'}")
    assert uphill == []


@pytest.mark.parametrize("package", ["engines", "workloads"])
def test_engines_and_workloads_import_nothing_from_the_harness(package):
    edges = graph()
    assert [f"{s} -> {t}" for s, targets in edges.items() if s.split(".")[0] == package
            for t in targets if t.split(".")[0] == "harness"] == []


def test_no_source_file_is_over_400_lines():
    sources = [p for p in ROOT.glob("*/**/*") if p.suffix in (".py", ".hpp", ".cpp")
               and p.relative_to(ROOT).parts[0] in (*PACKAGES, "burtorch_ext", "tests", "benchmarks")]
    assert {str(p.relative_to(ROOT)): n for p in sources if (n := len(p.read_text().splitlines())) > 400} == {}


def test_judging_never_reaches_up_into_the_report():
    """Verdicts are reached below the pages that show them: a judging module that imports report/ would let
    a renderer decide what a claim's verdict is."""
    edges = graph()
    assert [f"{s} -> {t}" for s, targets in edges.items() if layer(s) == "harness.judging"
            for t in targets if layer(t) == "harness.report"] == []
