"""``fastnn conformance`` before its test tools are installed: a clear message, not a crash."""

import importlib.util
import subprocess
import sys
from types import SimpleNamespace

import pytest

from fastnn.cli import main
from fastnn.conformance import options


@pytest.mark.parametrize("absent", [{"pytest"}, {"hypothesis"}, {"pytest", "hypothesis"}])
def test_missing_test_tools_are_named_with_the_install_command(absent, monkeypatch, capsys):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in absent else real(name, *a))
    assert main(["conformance", "--backend", "cpu", "--report", "-"]) == 2
    err = capsys.readouterr().err
    for name in absent:
        assert f'"{name}>=' in err  # the pip specifier to install
    for name in {"pytest", "hypothesis"} - absent:
        assert f'"{name}>=' not in err
    assert "pip install -e '.[conformance]'" in err and "fastnn repository" in err


def test_the_conformance_extra_lists_what_the_check_needs():
    tomllib = pytest.importorskip("tomllib")
    from pathlib import Path

    from fastnn.cli.conformance import NEEDS

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    extras = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]
    assert sorted(extras["conformance"]) == sorted(NEEDS.values())


def test_a_real_run_without_pytest_importable(tmp_path):
    """As after README command 1 alone: pytest cannot be imported at all."""
    blocker = tmp_path / "sitecustomize.py"
    blocker.write_text(
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('pytest', '_pytest', 'hypothesis'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Block())\n")
    env = {"PYTHONPATH": f"{tmp_path}:{':'.join(sys.path)}", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "fastnn.cli", "conformance", "--backend", "cpu"],
                          env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert 'needs pytest>=7 and hypothesis>=6' in done.stderr


def test_pytest_pyargs_without_hypothesis_is_a_usage_error():
    cause = ModuleNotFoundError("No module named 'hypothesis'", name="hypothesis")

    def import_plugin(name):
        raise ImportError(name) from cause

    config = SimpleNamespace(
        getoption=lambda name: "cpu",
        pluginmanager=SimpleNamespace(has_plugin=lambda name: False, import_plugin=import_plugin))
    with pytest.raises(pytest.UsageError, match=r"needs hypothesis.*\[conformance\]"):
        options.pytest_configure(config)


def test_other_import_errors_are_not_hidden():
    def import_plugin(name):
        raise ModuleNotFoundError("No module named 'numpy'", name="numpy")

    config = SimpleNamespace(
        getoption=lambda name: "cpu",
        pluginmanager=SimpleNamespace(has_plugin=lambda name: False, import_plugin=import_plugin))
    with pytest.raises(ModuleNotFoundError, match="numpy"):
        options.pytest_configure(config)


def test_no_backend_checks_every_available_one(monkeypatch, capsys):
    """argparse said "the following arguments are required: --backend"."""
    import fastnn as fnn
    from fastnn.cli import conformance

    runs = []

    def fake_run(argv):
        runs.append(argv)
        return SimpleNamespace(returncode=0 if len(runs) == 1 else 1)

    monkeypatch.setattr(conformance.subprocess, "run", fake_run)
    names = [r.name for r in fnn.backends() if r.available]
    code = main(["conformance", "--examples", "3", "-k", "exp"])
    assert [argv[argv.index("--backend") + 1] for argv in runs] == names
    assert all(argv[-4:] == ["--examples", "3", "-k", "exp"] for argv in runs)
    out = capsys.readouterr().out
    assert f"{names[0]}: conforms" in out
    assert code == (0 if len(names) == 1 else 1)


def test_one_report_path_for_several_backends_is_refused(monkeypatch, capsys):
    import fastnn as fnn

    if sum(r.available for r in fnn.backends()) < 2:
        pytest.skip("needs two available backends")
    assert main(["conformance", "--report", "r.json"]) == 2
    assert "give --backend NAME" in capsys.readouterr().err
