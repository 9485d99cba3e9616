"""The package shape ARCHITECTURE.md describes, checked on the source: packages import only the layers below them,
and nobody imports another module's private names (ours or a library's).

The expected layering is written here by hand (it is the design, not something read from the code); the imports
are read with ``ast`` from every module, including imports inside functions.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "evaluations"

#: lowest first: a package may import itself and the packages before it, never one after it
LAYERS = ["core", "models", "datasets", "judging", "results", "review", "index", "systems", "reports", "evaluators",
          "pipeline", "experiments", "scoring", "synth", "cli"]


def _imports() -> list[tuple[str, int, str, list[str]]]:
    """(module, line, imported module, imported names) for every absolute or relative import in the package."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        module = ".".join(parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = parts if is_package else parts[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    target = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    target = node.module or ""
                found.append((module, node.lineno, target, [a.name for a in node.names]))
            elif isinstance(node, ast.Import):
                found.extend((module, node.lineno, a.name, []) for a in node.names)
    return found


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "evaluations" and parts[1] in LAYERS else None


def test_every_package_is_in_a_layer():
    packages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert packages == set(LAYERS)
    loose = {p.name for p in PACKAGE.glob("*.py")} - {"__init__.py", "__main__.py"}
    assert not loose, f"modules outside every package: {sorted(loose)}"


def test_packages_import_only_lower_layers():
    upward = []
    for module, line, target, _ in _imports():
        here, there = _layer(module), _layer(target)
        if here and there and LAYERS.index(there) > LAYERS.index(here):
            upward.append(f"{module}:{line} imports {target}")
    assert not upward, "imports against the layering:\n" + "\n".join(upward)


def test_no_private_names_across_modules():
    private = []
    for module, line, target, names in _imports():
        ours = target.startswith("evaluations")
        for name in names:
            if not (name.startswith("_") and not name.startswith("__")):
                continue
            if not ours or _layer(target) != _layer(module) or target.split(".")[:3] != module.split(".")[:3]:
                private.append(f"{module}:{line} imports {target}.{name}")
        if not ours and any(p.startswith("_") and not p.startswith("__") for p in target.split(".")):
            private.append(f"{module}:{line} imports the private module {target}")
    assert not private, "private names imported:\n" + "\n".join(private)


def test_only_cli_imports_click():
    clicky = [f"{module}:{line}" for module, line, target, _ in _imports()
              if (target == "click" or target.startswith("click.")) and _layer(module) != "cli"]
    assert not clicky, "click imported outside cli/: " + ", ".join(clicky)


def test_no_import_cycles_between_modules():
    """No group of modules imports each other in a loop, counting imports inside functions (a deferred import
    hides a cycle from Python, not from a reader). Importing one's own package (its ``__init__``) is not counted."""
    graph: dict[str, set[str]] = {}
    modules = {m for m, _, _, _ in _imports()} | {
        ".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        for p in PACKAGE.rglob("*.py")}
    for module, _, target, names in _imports():
        for name in names or [""]:
            full = f"{target}.{name}" if name else target
            dest = full if full in modules else target
            if dest in modules and dest != module and not module.startswith(dest + "."):
                graph.setdefault(module, set()).add(dest)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(modules):
        if module not in index:
            visit(module)
    assert not cycles, f"modules importing each other in a loop: {cycles}"


#: judging's rooms, lowest first (ARCHITECTURE.md): a room imports itself and the rooms before it. The verdict
#: makers (basics … grounded) never import labels or validation.
JUDGING_ROOMS = ["basics", "correctness", "checkers", "grounded", "labels", "validation"]


def test_judging_rooms_import_only_lower_rooms():
    def room(module: str) -> str | None:
        parts = module.split(".")
        return parts[2] if len(parts) > 2 and parts[:2] == ["evaluations", "judging"] else None

    rooms = {p.name for p in (PACKAGE / "judging").iterdir() if (p / "__init__.py").is_file()}
    assert rooms == set(JUDGING_ROOMS)
    upward = [f"{module}:{line} imports {target}" for module, line, target, _ in _imports()
              if room(module) and room(target) and JUDGING_ROOMS.index(room(target)) > JUDGING_ROOMS.index(room(module))]
    assert not upward, "judging rooms importing against their order:\n" + "\n".join(upward)


def test_no_package_folder_holds_more_than_15_modules():
    crowded = {}
    for init in PACKAGE.rglob("__init__.py"):
        modules = [p for p in init.parent.glob("*.py") if p.name != "__init__.py"]
        if len(modules) > 15:
            crowded[str(init.parent.relative_to(PACKAGE.parent))] = len(modules)
    assert not crowded, crowded
