"""fastnn.api.native: a C helper is built once into the cache folder and reused, a build
that fails leaves nothing behind and falls back (``auto``) or says why (``on``), ``off``
builds nothing, and a mistyped switch is refused."""

import shutil

import numpy as np
import pytest

from fastnn.api import native

SOURCE = "int fastnn_test_twice(int x) { return 2 * x; }\n"
needs_cc = pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")),
                              reason="no C compiler")


@pytest.fixture
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("FASTNN_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("CC", raising=False)
    return tmp_path / "cache" / "native"


@pytest.fixture
def helper(tmp_path):
    """A helper's C source in a file of its own."""
    source = tmp_path / "helper.c"
    source.write_text(SOURCE)
    return source


@needs_cc
def test_built_once_then_reused(cache, helper):
    source = helper
    lib, why = native.load(source, "FASTNN_TEST_NATIVE", "a test helper")
    assert why.startswith("C (helper-") and lib.fastnn_test_twice(21) == 42
    (built,) = cache.glob("helper-*.so")
    stamp = built.stat().st_mtime_ns
    again, _ = native.load(source, "FASTNN_TEST_NATIVE", "a test helper")
    assert again.fastnn_test_twice(4) == 8 and built.stat().st_mtime_ns == stamp
    source.write_text(SOURCE.replace("2 * x", "3 * x"))  # another source: another library
    changed, _ = native.load(source, "FASTNN_TEST_NATIVE", "a test helper")
    assert changed.fastnn_test_twice(4) == 12 and len(list(cache.glob("helper-*.so"))) == 2


@needs_cc
def test_a_failed_build_falls_back_or_says_why(cache, tmp_path, monkeypatch):
    source = tmp_path / "broken.c"
    source.write_text("this is not C\n")
    lib, why = native.load(source, "FASTNN_TEST_NATIVE", "a test helper")
    assert lib is None and why.startswith("NumPy (") and "failed" in why
    assert not list(cache.iterdir()), "a failed build left files behind"
    monkeypatch.setenv("FASTNN_TEST_NATIVE", "on")
    with pytest.raises(RuntimeError, match="FASTNN_TEST_NATIVE=on, but a test helper cannot "
                                           "be built: .*failed"):
        native.load(source, "FASTNN_TEST_NATIVE", "a test helper")


def test_off_builds_nothing_and_the_switch_is_checked(cache, helper, monkeypatch):
    source = helper
    monkeypatch.setenv("FASTNN_TEST_NATIVE", "off")
    assert native.load(source, "FASTNN_TEST_NATIVE", "x") == (None, "off (FASTNN_TEST_NATIVE=off)")
    assert not cache.exists()
    monkeypatch.setenv("FASTNN_TEST_NATIVE", "yes")
    with pytest.raises(ValueError, match="FASTNN_TEST_NATIVE must be one of auto, on, off, "
                                         "got 'yes'"):
        native.load(source, "FASTNN_TEST_NATIVE", "x")


def test_no_compiler(cache, helper, tmp_path, monkeypatch):
    source = helper
    monkeypatch.setenv("CC", str(tmp_path / "missing-cc"))
    lib, why = native.load(source, "FASTNN_TEST_NATIVE", "x")
    assert lib is None and "missing-cc" in why
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing there
    monkeypatch.delenv("CC")
    with pytest.raises(OSError, match="no C compiler"):
        native.compiler()


def test_address_is_where_the_data_starts_for_every_kind_of_array():
    base = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    readonly = base.copy()
    readonly.flags.writeable = False
    for a in (base, base[1:], base[:, 1], base.T, base[0].T, base[..., ::-1], readonly,
              np.empty(0, np.float64), np.broadcast_to(base[0, 0], (4, 5)), base[1, 2, 3:4]):
        assert native.address(a) == a.__array_interface__["data"][0], a.shape


@needs_cc
def test_a_changed_local_header_makes_a_new_library(cache, tmp_path):
    (tmp_path / "factor.h").write_text("#define FACTOR 2\n")
    source = tmp_path / "scaled.c"
    source.write_text('#include "factor.h"\nint fastnn_test_scaled(int x) { return FACTOR * x; }'
                      '\n')
    lib, _ = native.load(source, "FASTNN_TEST_NATIVE", "a test helper")
    assert lib.fastnn_test_scaled(5) == 10
    (tmp_path / "factor.h").write_text("#define FACTOR 7\n")
    changed, _ = native.load(source, "FASTNN_TEST_NATIVE", "a test helper")
    assert changed.fastnn_test_scaled(5) == 35 and len(list(cache.glob("scaled-*.so"))) == 2
