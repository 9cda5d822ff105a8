"""The package's layering, read from the source with `ast` (every import statement, at module
level or inside a function): no import cycle between the package's modules, and nothing below
the command layer (`commands/`, `cli.py`, `__main__.py`, `mlproject.py`) imports the command
layer. The MLflow adapters that still take their option handling from `commands/` are listed in
`REMAINING_LAYER_IMPORTS`: the list may only shrink (the test fails on a new entry, and on an
entry that no longer exists, so that it is removed from the list). Task packages are peers: none
imports another."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "extracteval"
COMMAND_LAYER = ("extracteval.commands", "extracteval.cli", "extracteval.__main__", "extracteval.mlproject")

# (importing module, imported command module) still to move below the command layer
REMAINING_LAYER_IMPORTS: set[tuple[str, str]] = set()


def _modules() -> dict[str, Path]:
    out = {}
    for f in sorted(SRC.rglob("*.py")):
        parts = list(f.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package modules `name` imports anywhere in its source (`from a.b import c` is `a.b.c`
    when that is a module, else `a.b`)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            targets = [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in modules:
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {m: _imports(m, p, modules) for m, p in modules.items()}


def _is_task_command(module: str) -> bool:
    """A task's command-line glue, `extracteval.tasks.<task>.command`: part of the command layer."""
    parts = module.split(".")
    return len(parts) == 4 and parts[:2] == ["extracteval", "tasks"] and parts[3] == "command"


def _in_command_layer(module: str) -> bool:
    return _is_task_command(module) or any(module == c or module.startswith(c + ".") for c in COMMAND_LAYER)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_the_reader_sees_imports_inside_functions_and_relative_ones(tmp_path: Path) -> None:
    pkg = tmp_path / "extracteval"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from extracteval.sub import b\n")
    (pkg / "sub" / "b.py").write_text("from ..a import f\nfrom . import c\n")
    (pkg / "sub" / "c.py").write_text("import extracteval.a\n")
    modules = {"extracteval": pkg / "__init__.py", "extracteval.sub": pkg / "sub" / "__init__.py", "extracteval.a": pkg / "a.py",
               "extracteval.sub.b": pkg / "sub" / "b.py", "extracteval.sub.c": pkg / "sub" / "c.py"}
    graph = {m: _imports(m, p, modules) for m, p in modules.items()}
    assert graph["extracteval.a"] == {"extracteval.sub.b"}
    assert graph["extracteval.sub.b"] == {"extracteval.a", "extracteval.sub.c"}
    assert _cycles(graph) == [["extracteval.a", "extracteval.sub.b", "extracteval.sub.c"]]


def test_no_import_cycle() -> None:
    cycles = _cycles(_graph())
    assert cycles == [], "import cycles: " + "; ".join(" ↔ ".join(c) for c in cycles)


def test_nothing_below_the_command_layer_imports_it() -> None:
    graph = _graph()
    assert "extracteval.tasks.spans.command" in graph and "extracteval.chunked" in graph  # the reader found the package
    found = {
        (m, d)
        for m, deps in graph.items()
        if not _in_command_layer(m)
        for d in deps
        if _in_command_layer(d) and (d.startswith("extracteval.commands") or d == "extracteval.cli" or _is_task_command(d))
    }
    print("imports of the command layer from below it:", *sorted(found), sep="\n  ")
    new = sorted(found - REMAINING_LAYER_IMPORTS)
    assert not new, f"modules below the command layer import it (move what they use into io/ or core/): {new}"
    gone = sorted(REMAINING_LAYER_IMPORTS - found)
    assert not gone, f"these imports are gone: remove them from REMAINING_LAYER_IMPORTS: {gone}"
    engines = sorted(m for m, _ in found if not (m.startswith("extracteval.mlflow.") or m.endswith(".adapter")))
    assert engines == [], f"the engines and the core must not import the command layer: {engines}"


def test_only_the_registry_names_the_task_packages() -> None:
    """Engines, the MLflow layer, the leaderboard, compare and rescore reach a task through the
    registry (`extracteval.tasks.TASKS` / `task_module`), never by importing its modules."""
    graph = _graph()
    assert "extracteval.tasks.fields.adapter" in graph  # the reader found the task packages
    found = {
        (m, d)
        for m, deps in graph.items()
        if not m.startswith("extracteval.tasks.")
        for d in deps
        if d.startswith("extracteval.tasks.")
    }
    print("task modules imported from outside the task packages:", *sorted(found), sep="\n  ")
    assert not found, f"modules outside extracteval/tasks import a task's module (go through the registry): {sorted(found)}"


def _task_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[:2] == ["extracteval", "tasks"] else None


def test_task_packages_are_peers() -> None:
    """No task package imports another: what two tasks share lives in a module below both (in
    `core/`, `io/`, `spark/`, `mlflow/`, `report/`), so a task can be read, changed or removed alone."""
    assert _task_of("extracteval.tasks.labels.adapter") == "labels" and _task_of("extracteval.tasks.fields") is None
    graph = _graph()
    found = {(m, d) for m, deps in graph.items() for d in deps if _task_of(m) and _task_of(d) and _task_of(m) != _task_of(d)}
    assert ("extracteval.tasks.labels.adapter", "extracteval.mlflow.feature_views") in {(m, d) for m, deps in graph.items() for d in deps}
    assert not found, f"a task package imports another (move what they share into a module below both): {sorted(found)}"


# (core module, what it imports from outside core) still to move; the list may only shrink
REMAINING_CORE_IMPORTS: set[tuple[str, str]] = set()  # none: the ranking declarations are read from the registry


def test_layers_point_one_way() -> None:
    """The core (kernels, counts, ranking) knows no reader, no MLflow, no report, no door and no
    task; the MLflow layer knows no door (the command line, the commands, the Python API)."""
    graph = _graph()
    core = {(m, d) for m, deps in graph.items() if m.startswith("extracteval.core.") for d in deps
            if not d.startswith("extracteval.core") and d != "extracteval.errors"}
    new = sorted(core - REMAINING_CORE_IMPORTS)
    assert not new, f"the core imports a layer above it: {new}"
    gone = sorted(REMAINING_CORE_IMPORTS - core)
    assert not gone, f"these imports are gone: remove them from REMAINING_CORE_IMPORTS: {gone}"
    doors = ("extracteval.api", "extracteval.cli", "extracteval.commands", "extracteval.__main__", "extracteval.mlproject")
    upward = sorted((m, d) for m, deps in graph.items() if m.startswith("extracteval.mlflow.") for d in deps if d.startswith(doors))
    assert not upward, f"the MLflow layer imports a door: {upward}"


def test_every_registered_task_is_one_package_with_the_contract_modules() -> None:
    from extracteval.tasks import TASKS

    for task, spec in TASKS.items():
        if "." in spec.package:  # a package outside extracteval (the test suite's own task)
            import importlib.util

            folder = Path(importlib.util.find_spec(spec.package).origin).parent
        else:
            folder = SRC / "tasks" / (spec.package or task)
        missing = [part for part in ("adapter", "command", "contract", "engines", "options", "outputs", "scorer") if not (folder / f"{part}.py").is_file()]
        assert not missing, f"task {task!r}: {folder} lacks {missing}"


def test_readers_and_reports_sit_below_the_engines() -> None:
    """Nothing runs back up: the reports (`report/`: terminal, HTML, figures) know only the core;
    the readers and writers (`io/`) know the core, the reports and the task registry, but no engine
    (`spark/`, `mlflow/`), no task package and no door; the Spark engine knows no MLflow and no
    door; the commands run one another through `commands.runner`, never through the entry point."""
    graph = _graph()
    doors = ("extracteval.api", "extracteval.cli", "extracteval.commands", "extracteval.__main__", "extracteval.mlproject")

    def reaching(prefix: str, banned: tuple[str, ...]) -> list[tuple[str, str]]:
        return sorted((m, d) for m, deps in graph.items() if m.startswith(prefix) for d in deps if d.startswith(banned))

    assert not reaching("extracteval.report", ("extracteval.io", "extracteval.spark", "extracteval.mlflow", "extracteval.tasks", *doors))
    assert not reaching("extracteval.io", ("extracteval.spark", "extracteval.mlflow", *doors)), "io/ imports an engine or a door"
    assert not [(m, d) for m, d in reaching("extracteval.io", ("extracteval.tasks.",))], "io/ imports a task package"
    assert not reaching("extracteval.spark", ("extracteval.mlflow", *doors)), "spark/ imports MLflow or a door"
    assert not reaching("extracteval.commands", ("extracteval.cli",)), "a command imports the entry point (use commands.runner)"
