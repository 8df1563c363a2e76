"""Write docs/api.md, fastnn's API reference, from the docstrings.

    python docs/gen_api.py            # regenerate docs/api.md
    python docs/gen_api.py --check    # exit 1 when docs/api.md is out of date or a
                                      # public name has no docstring

The public names of each module in MODULES are its ``__all__`` (its own
non-underscore names where it has none), read from the modules themselves,
so a name added anywhere is documented, or reported, without editing this
script. A function, class or module carries its docstring; a data name (a
dtype, a constant) is documented by a string literal right after its
assignment, as Sphinx reads attribute docstrings. A class lists the public
methods and properties it defines itself.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "docs" / "api.md"
MODULES = ("fastnn", "fastnn.autograd", "fastnn.functional", "fastnn.nn", "fastnn.optim",
           "fastnn.optim.lr_scheduler", "fastnn.data", "fastnn.distributed",
           "fastnn.return_types", "fastnn.cuda", "fastnn.accelerator", "fastnn.nn.utils",
           "fastnn.nn.init", "fastnn.nn.parallel", "fastnn.optim.swa_utils", "fastnn.linalg",
           "fastnn.special",
           "fastnn.utils.checkpoint", "fastnn.utils.tensorboard", "fastnn.distributions",
           "fastnn.distributions.constraints", "fastnn.derivatives", "fastnn.func", "fastnn.jit",
           "fastnn.nn.grad", "fastnn.nn.attention", "fastnn.nn.attention.flex_attention")
REGENERATE = "python docs/gen_api.py"


def public_names(module) -> list:
    """``module.__all__``, or its non-underscore names defined in its own package."""
    names = getattr(module, "__all__", None)
    if names is not None:
        return list(names)
    package, found = module.__name__.split(".")[0], []
    for name, value in vars(module).items():
        if name.startswith("_"):
            continue
        if inspect.ismodule(value):
            if value.__name__.startswith(module.__name__ + "."):
                found.append(name)
        elif inspect.isclass(value) or inspect.isroutine(value):
            if (getattr(value, "__module__", "") or "").split(".")[0] == package:
                found.append(name)
        elif attribute_docstring(module.__name__, name, must_assign=True) is not False:
            found.append(name)  # data assigned in this module
    return found


def _source_tree(module_name: str):
    try:
        module = importlib.import_module(module_name)
        return ast.parse(inspect.getsource(module)), module
    except (OSError, TypeError, ImportError):
        return None, None


def attribute_docstring(module_name: str, name: str, must_assign: bool = False, depth: int = 0):
    """The string literal after ``name = ...`` in the module that assigns it, following
    ``from X import name``; None when the assignment has none, False when none is found."""
    tree, module = _source_tree(module_name)
    if tree is None or depth > 8:
        return False
    body = tree.body
    for index, node in enumerate(body):
        targets = []
        if isinstance(node, ast.Assign):
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            targets = [node.target.id]
        if name in targets:
            after = body[index + 1] if index + 1 < len(body) else None
            if (isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)):
                return inspect.cleandoc(after.value.value)
            return None
    if must_assign:
        return False
    for node in body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                source = importlib.util.resolve_name(
                    "." * node.level + (node.module or ""), module.__package__ or "") \
                    if node.level else node.module
                if (alias.asname or alias.name) == name:
                    return attribute_docstring(source, alias.name, depth=depth + 1)
                if alias.name == "*":  # (a facade module: the name may come from there)
                    found = attribute_docstring(source, name, depth=depth + 1)
                    if found is not False:
                        return found
    return False


def is_data(value) -> bool:
    return not (inspect.ismodule(value) or inspect.isclass(value) or callable(value))


def docstring(module, name: str) -> str | None:
    """The docstring of ``module.name`` (None when it has none)."""
    value = getattr(module, name)
    if is_data(value):
        doc = attribute_docstring(module.__name__, name)
        return doc or None
    doc = value.__doc__ if inspect.ismodule(value) else inspect.getdoc(value)
    return inspect.cleandoc(doc) if doc and doc.strip() else None


def undocumented() -> list:
    """Every public name of MODULES without a docstring, as ``module.name``."""
    missing = []
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in public_names(module):
            if not hasattr(module, name):
                missing.append(f"{module_name}.{name} (in __all__ but not defined)")
            elif docstring(module, name) is None:
                missing.append(f"{module_name}.{name}")
    return missing


def signature(value) -> str:
    """``(a, b=1)`` without annotations (they are strings under postponed evaluation)."""
    from fastnn.ops.spelling import UNSET

    try:
        sig = inspect.signature(value)
    except (TypeError, ValueError):
        return "(...)"
    params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
    if any(p.default is UNSET for p in params):
        return _spelled_signature(value, params, UNSET)
    text = str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))
    return re.sub(r" at 0x[0-9a-fA-F]+", "", text)  # no addresses: the output is stable


# dim_of("cat", dim, axis, 0): the default an op gives dim= when neither spelling is passed
_DIM_DEFAULT = re.compile(r"dim_of\([^,()]+,\s*(?:UNSET if \w+ is None else )?(\w+),\s*\w+"
                          r"(?:,\s*([^()]+?))?\)")


def _spelled_signature(value, params, UNSET) -> str:  # noqa: N803
    """The signature of an op that takes dim= or axis= (keepdim= or keepdims=), whose
    defaults are the "not given" sentinel, written as PyTorch's: ``dim=None``,
    ``keepdim=False``, ``dim=0`` where the op defaults to 0, a bare ``dim`` where it must
    be given (the sentinel itself printed as ``<object object at 0x...>``)."""
    try:
        source = inspect.getsource(inspect.unwrap(value))
    except (OSError, TypeError):
        source = ""
    found = {m.group(1): (m.group(2) or "None").strip() for m in _DIM_DEFAULT.finditer(source)}
    parts, star = [], False
    for p in params:
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
        star = star or p.kind in (p.KEYWORD_ONLY, p.VAR_POSITIONAL)
        if p.default is not UNSET:
            parts.append(re.sub(r" at 0x[0-9a-fA-F]+", "", str(p)))
            continue
        default = ("False" if p.name in ("keepdim", "keepdims") else
                   "None" if p.name == "axis" else found.get(p.name, "None"))
        parts.append(p.name if default == "UNSET" else f"{p.name}={default}")
    return f"({', '.join(parts)})"


def markdown(doc: str) -> str:
    """reST bits of the docstrings as Markdown: ``x`` and :role:`x` become `x`."""
    doc = re.sub(r":[a-z]+:`~?([^`]+)`", r"`\1`", doc)
    doc = doc.replace("``", "`")
    return re.sub(r"::$", ":", doc, flags=re.M)


def _public_classes() -> set:
    """The classes that are public names of MODULES (documented under their own entry)."""
    found = set()
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        found.update(getattr(module, name) for name in public_names(module)
                     if inspect.isclass(getattr(module, name, None)))
    return found


def _mixins(cls) -> list:
    """The fastnn base classes of ``cls`` that are not public themselves (mixins such as
    Module's ModuleTree): their members are listed with ``cls``."""
    public = _public_classes()
    return [b for b in cls.__bases__
            if b.__module__.startswith("fastnn") and b not in public]


def _members(cls) -> list:
    members, seen = [], set()
    for owner in (cls, *_mixins(cls)):
        for name, raw in vars(owner).items():
            if name not in seen:
                seen.add(name)
                members.extend(_member(owner, name, raw))
    return members


def _member(cls, name: str, raw) -> list:
    members = []
    if not name.startswith("_"):
        if isinstance(raw, property):
            members.append((name, "property", "", inspect.getdoc(raw)))
        elif isinstance(raw, (staticmethod, classmethod)) or inspect.isfunction(raw):
            value = getattr(cls, name)
            sig = signature(value)
            if inspect.isfunction(raw):  # called on an instance: no `self`
                sig = re.sub(r"^\(self(, )?", "(", sig)
            members.append((name, "method", sig, inspect.getdoc(value)))
    return members


def _entry(module, name: str) -> list:
    qualified = f"{module.__name__}.{name}"
    value = getattr(module, name)
    doc = docstring(module, name)
    lines = [f'<a id="{qualified}"></a>', ""]
    if inspect.ismodule(value):
        lines += [f"### `{qualified}` (module)", "",
                  f"See [`{value.__name__}`](#{value.__name__}).", ""]
        return lines
    if inspect.isclass(value):
        lines += [f"### class `{qualified}`", "", "```python",
                  f"{qualified}{signature(value)}", "```", ""]
        mixins = _mixins(value)
        bases = [b for b in value.__bases__ if b.__module__.startswith("fastnn")
                 and not b.__name__.startswith("_") and b not in mixins]
        if bases:
            lines += ["Bases: " + ", ".join(f"`{b.__name__}`" for b in bases), ""]
    elif callable(value):
        lines += [f"### `{qualified}`", "", "```python", f"{qualified}{signature(value)}",
                  "```", ""]
    else:
        shown = _short_repr(value)
        kind = f"a `{type(value).__name__}`"
        lines += [f"### `{qualified}`", "",
                  kind[0].upper() + kind[1:] + ("." if shown == qualified else f": `{shown}`"), ""]
    lines += [markdown(doc) if doc else "*(no docstring)*", ""]
    if inspect.isclass(value):
        for member, kind, sig, member_doc in _members(value):
            head = f"- `{member}{sig}`" + (" (property)" if kind == "property" else "")
            if member_doc:
                first, _, rest = markdown(member_doc).partition("\n")
                head += f": {first}"
                if rest.strip():
                    head += "\n" + "\n".join("  " + line if line else "" for line in
                                             rest.strip("\n").splitlines())
            lines.append(head)
        if _members(value):
            lines.append("")
    return lines


def _short_repr(value) -> str:
    text = re.sub(r" at 0x[0-9a-fA-F]+", "", repr(value))
    return text if len(text) <= 100 else text[:97] + "..."


def render() -> str:
    """The whole of docs/api.md."""
    lines = ["# fastnn API reference", "",
             f"Generated from the docstrings by `{REGENERATE}`; do not edit by hand. The",
             "public names of each module are its `__all__`. A tour is in the",
             "[README](../README.md); the backend hooks are specified in",
             "[`fastnn/api/hookspec.py`](../fastnn/api/hookspec.py) (see",
             "[backend_authors.md](backend_authors.md)).", ""]
    modules = [importlib.import_module(name) for name in MODULES]
    for module in modules:
        names = ", ".join(f"[`{n}`](#{module.__name__}.{n})" for n in public_names(module))
        lines.append(f"- [`{module.__name__}`](#{module.__name__}): {names}")
    lines.append("")
    for module in modules:
        lines += [f'<a id="{module.__name__}"></a>', "", f"## `{module.__name__}`", ""]
        if module.__doc__:
            lines += [markdown(inspect.cleandoc(module.__doc__)), ""]
        for name in public_names(module):
            if hasattr(module, name):
                lines += _entry(module, name)
    return "\n".join(lines).rstrip() + "\n"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    missing = undocumented()
    text = render()
    if "--check" in argv:
        stale = not OUTPUT.is_file() or OUTPUT.read_text() != text
        if stale:
            print(f"{OUTPUT} is out of date; regenerate it with: {REGENERATE}", file=sys.stderr)
        if missing:
            print("public names without a docstring: " + ", ".join(missing), file=sys.stderr)
        return 1 if stale or missing else 0
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT} ({text.count(chr(10))} lines)")
    if missing:
        print("public names without a docstring: " + ", ".join(missing), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))  # document this checkout's fastnn
    sys.exit(main())
