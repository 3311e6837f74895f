"""The layout stays readable top-down: no module of topictool imports, at import time, a module
that imports it back (directly or around a longer cycle)."""

import ast

from .conftest import ROOT


def import_graph():
    modules = {}
    for f in (ROOT / "topictool").rglob("*.py"):
        parts = f.relative_to(ROOT).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    graph = {}
    for name, f in modules.items():
        package = name if f.name == "__init__.py" else name.rsplit(".", 1)[0]
        deps = set()
        for node in ast.parse(f.read_text(encoding="utf-8")).body:  # module level: what runs at import
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                target = ".".join([*base, node.module] if node.module else base)
                deps |= {f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target for a in node.names}
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names}
        graph[name] = {d for d in deps if d in modules and d != name}
    return graph


def test_no_import_cycles():
    graph = import_graph()
    assert len(graph) > 50 and graph["topictool.training"]  # the graph is really read
    state, path, cycles = {}, [], []

    def visit(u):
        state[u] = "open"
        path.append(u)
        for v in sorted(graph[u]):
            if state.get(v) == "open":
                cycles.append(path[path.index(v) :] + [v])
            elif v not in state:
                visit(v)
        path.pop()
        state[u] = "done"

    for u in sorted(graph):
        if u not in state:
            visit(u)
    assert cycles == [], [" -> ".join(c) for c in cycles]
