"""The imports of fastnn form a stack, lazy ones (inside functions) included:

backend contract (api) <- autograd <- tensor ops (ops, functional, the fastnn package)
<- nn, distributions, checkpoint <- optim, data <- distributed <- cli, conformance

and no module imports, even through others, a module that imports it back.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import fastnn

ROOT = Path(fastnn.__file__).parent
# a module's layer is its first package below fastnn (or its own name for a plain module)
LAYERS = {
    "api": 0, "autograd": 1, "ops": 2, "functional": 2, "return_types": 2, "": 2,
    "cuda": 2, "accelerator": 2, "utils": 4, "linalg": 2, "settings": 2, "testing": 2,
    "onnx": 2, "compiler": 5, "jit": 5, "version": 2,
    "amp": 2, "derivatives": 2, "special": 2, "autocast_mode": 2, "cpu": 2,
    "nn": 3, "distributions": 3, "func": 3, "checkpoint": 3, "checkpoint_files": 3,
    "checkpoint_format": 3, "checkpoint_torch": 3, "serialization": 3, "multiprocessing": 2,
    "optim": 4, "data": 4, "distributed": 5, "capture": 5,
    "cli": 6, "conformance": 6, "shadowing": 6, "profiler": 6,
    # a sub-package above its package's layer (torch.nn.parallel needs torch.distributed)
    "nn.parallel": 5,
}


def _module_name(path: Path) -> str:
    parts = ("fastnn",) + path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in ROOT.rglob("*.py")}


def _resolve(name: str) -> str | None:
    """The fastnn module that importing ``name`` loads (a module or package), if any."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str) -> set:
    tree = ast.parse(MODULES[module].read_text())
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):  # every import statement, at any depth
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            names = [f"{base}.{alias.name}" for alias in node.names]
            if any(name not in MODULES for name in names):  # names defined in base itself
                names.append(base)
        else:
            continue
        for name in names:
            target = _resolve(name) if name.startswith("fastnn") else None
            # importing a.b.c runs a and a.b first: a submodule's own packages don't count
            if target and target != module and not module.startswith(target + "."):
                found.add(target)
    return found


GRAPH = {m: _imports(m) for m in MODULES}


def _layer(module: str) -> int:
    parts = module.split(".")
    if ".".join(parts[1:3]) in LAYERS:
        return LAYERS[".".join(parts[1:3])]
    return LAYERS[parts[1] if len(parts) > 1 else ""]


def test_every_package_has_a_layer():
    missing = sorted({m.split(".")[1] for m in MODULES if "." in m} - set(LAYERS))
    assert not missing, f"give these fastnn packages a layer in LAYERS: {missing}"


def test_no_module_imports_a_layer_above_its_own():
    upward = sorted(f"{m} ({_layer(m)}) imports {t} ({_layer(t)})"
                    for m, targets in GRAPH.items() for t in targets if _layer(t) > _layer(m))
    assert not upward, "imports that reach up the stack:\n" + "\n".join(upward)


def _cycles() -> list:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, out, counter = {}, {}, set(), [], [], [0]

    for start in sorted(GRAPH):
        if start in index:
            continue
        work = [(start, iter(sorted(GRAPH[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(GRAPH[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_no_import_cycles():
    cycles = _cycles()
    assert not cycles, "modules that import each other (directly or through others):\n" + (
        "\n".join(", ".join(c) for c in cycles))


def test_the_checker_finds_a_cycle_and_an_upward_import():
    # the test above can fail: a fake edge from the contract up to nn is both
    saved = set(GRAPH["fastnn.api.registry"])
    try:
        GRAPH["fastnn.api.registry"].add("fastnn.ops.tensor")
        assert any("fastnn.api.registry" in c for c in _cycles())
    finally:
        GRAPH["fastnn.api.registry"] = saved


@pytest.mark.parametrize("first", ["fastnn.utils.data", "fastnn.utils.checkpoint",
                                   "fastnn.func", "fastnn.nn.utils.stateless"])
def test_a_subpackage_imported_first_imports(first):
    # the graph above sees module-level edges only; a package's __init__ that imports a
    # sibling can still close a loop at run time (fastnn.utils -> checkpoint -> fastnn.func
    # -> fastnn.nn -> nn.utils -> stateless -> fastnn.func, half initialised)
    done = subprocess.run([sys.executable, "-c", f"import {first}"], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
