"""docs/api.md: every public name has a docstring, and the file is what the generator writes."""

import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load_generator():
    spec = importlib.util.spec_from_file_location("gen_api", ROOT / "docs" / "gen_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = load_generator()


def test_every_public_name_has_a_docstring():
    missing = gen.undocumented()
    assert not missing, (
        "public names without a docstring (a data name takes a string literal on the line "
        "after its assignment): " + ", ".join(missing))


@pytest.mark.parametrize("name, expected", [
    ("sum", "(x, dim=None, keepdim=False, *, axis=None, keepdims=False, dtype=None)"),
    ("cat", "(tensors, dim=0, *, axis=None)"),
    ("softmax", "(x, dim=-1, *, axis=None, dtype=None)"),
    ("unsqueeze", "(x, dim, *, axis=None)"),  # required, as in PyTorch
])
def test_dim_and_axis_defaults_read_as_pytorch_writes_them(name, expected):
    """The "not given" sentinel was printed as dim=<object object at 0x...>."""
    import fastnn.functional as F

    assert gen.signature(getattr(F, name)) == expected


def test_every_documented_module_is_in_the_reference():
    assert "fastnn.distributed" in gen.MODULES
    text = (ROOT / "docs" / "api.md").read_text()
    assert "## `fastnn.distributed`" in text and "DistributedOptimizer" in text
    assert "dim=<object object" not in text and "axis=<object object" not in text


def test_api_md_is_up_to_date():
    # in a fresh interpreter, as the regeneration command runs: nothing this test session
    # imported (another module's additions to a class) can change what it renders
    done = subprocess.run([sys.executable, str(ROOT / "docs" / "gen_api.py"), "--check"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, (
        f"docs/api.md is out of date with the docstrings; regenerate it with: "
        f"{gen.REGENERATE}\n{done.stderr}")


def test_every_public_name_is_in_the_reference():
    text = gen.render()
    for module_name in gen.MODULES:
        module = importlib.import_module(module_name)
        assert f'<a id="{module_name}"></a>' in text
        for name in gen.public_names(module):
            assert f'<a id="{module_name}.{name}"></a>' in text, f"{module_name}.{name}"


def test_a_name_added_to_a_module_is_picked_up(monkeypatch):
    import fastnn.functional as F

    def brand_new(x, scale=2):
        return x

    monkeypatch.setattr(F, "brand_new", brand_new, raising=False)
    monkeypatch.setattr(F, "__all__", [*F.__all__, "brand_new"])
    assert "fastnn.functional.brand_new" in gen.undocumented()
    brand_new.__doc__ = "Return x unchanged, a stand-in for a new op."
    assert "fastnn.functional.brand_new" not in gen.undocumented()
    text = gen.render()
    assert "fastnn.functional.brand_new(x, scale=2)" in text
    assert "Return x unchanged, a stand-in for a new op." in text


def test_a_name_in_all_that_is_not_defined_is_reported(monkeypatch):
    import fastnn.nn as nn

    monkeypatch.setattr(nn, "__all__", [*nn.__all__, "NotThere"])
    assert "fastnn.nn.NotThere (in __all__ but not defined)" in gen.undocumented()


@pytest.fixture
def temp_package(tmp_path, monkeypatch):
    package = tmp_path / "apidoc_probe"
    package.mkdir()
    (package / "__init__.py").write_text(
        '"""A probe package."""\n'
        "import numpy as np\n"
        "from apidoc_probe.consts import LIMIT, UNDOCUMENTED\n"
        "from apidoc_probe.consts import LIMIT as ALIAS\n"
        "def helper():\n"
        '    """Help."""\n'
        "def _private():\n"
        "    pass\n"
        "TABLE = {'a': 1}\n"
        '"""Names to numbers."""\n')
    (package / "consts.py").write_text(
        'LIMIT = 10\n"""The largest value."""\nUNDOCUMENTED = 3\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("apidoc_probe", "apidoc_probe.consts"):
        sys.modules.pop(name, None)
    yield importlib.import_module("apidoc_probe")
    for name in ("apidoc_probe", "apidoc_probe.consts"):
        sys.modules.pop(name, None)


def test_data_names_are_documented_by_the_string_after_their_assignment(temp_package):
    assert gen.docstring(temp_package, "TABLE") == "Names to numbers."
    # imported names are followed to the module that assigns them, aliases too
    assert gen.docstring(temp_package, "LIMIT") == "The largest value."
    assert gen.docstring(temp_package, "ALIAS") == "The largest value."
    assert gen.docstring(temp_package, "UNDOCUMENTED") is None
    assert gen.docstring(temp_package, "helper") == "Help."


def test_without_all_the_public_names_are_the_modules_own(temp_package):
    # not numpy (imported), not _private, not names only imported from elsewhere
    assert gen.public_names(temp_package) == ["consts", "helper", "TABLE"]


def test_the_readme_links_the_reference():
    assert "(docs/api.md)" in (ROOT / "README.md").read_text()


def test_check_mode_reports_a_stale_file(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(gen, "OUTPUT", tmp_path / "api.md")
    assert gen.main(["--check"]) == 1
    assert "python docs/gen_api.py" in capsys.readouterr().err
    assert gen.main([]) == 0 and gen.main(["--check"]) == 0
