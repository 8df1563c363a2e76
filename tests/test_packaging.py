"""Packaging basics (pyproject.toml of the core, of every backend and of the minimal test
backend): one license stated everywhere, py.typed shipped, one version."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

import fastnn

tomllib = pytest.importorskip("tomllib")
ROOT = Path(__file__).resolve().parents[1]
PYPROJECTS = sorted([ROOT / "pyproject.toml", *ROOT.glob("backends/*/pyproject.toml"),
                     ROOT / "tests/backends/minimal/pyproject.toml"])


def _load(path: Path) -> dict:
    return tomllib.loads(path.read_text())


def test_there_is_a_license_file():
    assert "MIT License" in (ROOT / "LICENSE").read_text()


@pytest.mark.parametrize("path", PYPROJECTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_distribution_states_the_license_and_classifiers(path):
    project = _load(path)["project"]
    assert project.get("license") == "MIT", f"{path}: add license = \"MIT\""
    assert "Typing :: Typed" in project.get("classifiers", [])


@pytest.mark.parametrize("path", PYPROJECTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_distribution_ships_py_typed(path):
    """PEP 561: without py.typed in the package, type checkers ignore its annotations."""
    setuptools = _load(path)["tool"]["setuptools"]
    packages = setuptools.get("packages")
    packages = packages if isinstance(packages, list) else ["fastnn"]  # the core: find
    data = setuptools.get("package-data", {})
    for package in packages:
        assert (path.parent / package / "py.typed").is_file(), f"{package}/py.typed is missing"
        globs = data.get(package, []) + data.get("*", [])
        assert "py.typed" in globs, f"{path}: list py.typed in package-data for {package}"


@pytest.mark.parametrize("path", PYPROJECTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_distribution_ships_its_c_sources(path):
    """The C helpers (fastnn.api.native) are built from .c files beside the modules at
    run time: a wheel without them falls back to NumPy everywhere, silently."""
    setuptools = _load(path)["tool"]["setuptools"]
    packages = setuptools.get("packages")
    packages = packages if isinstance(packages, list) else ["fastnn"]
    data = setuptools.get("package-data", {})
    for package in packages:
        for kind in ("*.c", "*.h"):  # (the headers the sources include)
            if list((path.parent / package).rglob(kind)):
                globs = data.get(package, []) + data.get("*", [])
                assert kind in globs, f"{path}: list {kind} in package-data for {package}"


def test_version_comes_from_the_metadata_with_a_fallback_in_step():
    root = _load(ROOT / "pyproject.toml")["project"]["version"]
    assert fastnn._VERSION == root, "fastnn._VERSION must match pyproject.toml's version"
    try:
        installed = importlib.metadata.version("fastnn-core")
    except importlib.metadata.PackageNotFoundError:
        installed = fastnn._VERSION
    assert fastnn.__version__ == installed
