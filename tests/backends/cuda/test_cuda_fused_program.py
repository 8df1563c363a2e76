"""The CUDA backend's generated ``fused_elementwise`` kernels, without a GPU.

The very text the hook hands cupy.RawKernel is compiled with NVRTC (where it is
installed) and, under the host shim, with g++; the host build runs the hook's own launch
(every block and thread of its grid, one after another) with NumPy standing in for cupy,
and must match the expression evaluated node by node with the NumPy backend's hooks.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from fastnn_cuda import fused_program, kernels

import fastnn as fnn
from fastnn.api.fusion import evaluate
from tests.backends.cuda.host_build import SERIAL_SHIM, c_arg, compile_library, require_compiler

EXPRS = [
    ("add", ("mul", ("in", 0), ("in", 1)), ("const", 0.5)),
    ("relu", ("sub", ("in", 0), ("exp", ("in", 1)))),
    ("sigmoid", ("div", ("tanh", ("in", 0)), ("add", ("abs", ("in", 1)), ("const", 1)))),
    ("maximum", ("neg", ("in", 0)), ("minimum", ("in", 1), ("const", 0.25))),
    ("where", ("greater", ("in", 0), ("in", 1)), ("sqrt", ("abs", ("in", 0))),
     ("log", ("abs", ("in", 1)))),
    ("less", ("mul", ("in", 0), ("const", 2)), ("in", 1)),
    ("where", ("in", 2), ("in", 0), ("sub", ("const", 1.0), ("in", 1))),
    ("equal", ("relu", ("in", 0)), ("in", 0)),
]


def inputs_for(expr, dtype, n=203, seed=0):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(n) * 3).astype(dtype)
    b = (rng.standard_normal(n) * 3).astype(dtype)
    a[[3, 50]] = np.nan  # NaN rules of relu, maximum, minimum, comparisons
    b[[50, 77]] = [np.nan, np.inf]
    a[9] = b[9]  # an equal pair
    count = 1 + max(_leaves(expr))
    arrays = [a, b, rng.random(n) < 0.5][:count]
    return arrays


def _leaves(expr):
    if expr[0] == "in":
        return [expr[1]]
    if expr[0] == "const":
        return [-1]
    return [k for e in expr[1:] for k in _leaves(e)]


def text_of(expr, arrays):
    dtypes = tuple(str(x.dtype) for x in arrays)
    out = fused_program.out_dtype(expr, arrays)
    return fused_program.source(expr, [fused_program.C_TYPES[d] for d in dtypes],
                                fused_program.C_TYPES[out])


try:
    from cupy.cuda import nvrtc

    nvrtc.getVersion()
    HAVE_NVRTC = True
except Exception:  # cupy missing, or cupy without its NVRTC library
    HAVE_NVRTC = False


@pytest.mark.skipif(not HAVE_NVRTC, reason="NVRTC is not installed (cuda_cupy[compile-check])")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_generated_sources_compile_with_nvrtc(dtype):
    for expr in EXPRS:
        text = text_of(expr, inputs_for(expr, dtype))
        program = nvrtc.createProgram(text, "fused.cu", [], [])
        try:
            nvrtc.compileProgram(program, ["--gpu-architecture=compute_80",
                                           *fused_program.OPTIONS])
        except nvrtc.NVRTCError as exc:
            raise AssertionError(f"{expr}: {exc}\n{nvrtc.getProgramLog(program)}") from None
        ptx = nvrtc.getPTX(program).decode()
        assert f".entry {fused_program.KERNEL}" in ptx
        # --fmad=false: no multiply-add contracted across the nodes
        assert "fma.rn" not in ptx or expr[0] != "add"


class _Arr(np.ndarray):
    @property
    def device(self):
        return SimpleNamespace(id=0)


class _NumpyCupy:
    ndarray = _Arr

    @staticmethod
    def empty(shape, dtype):
        return np.empty(shape, dtype).view(_Arr)


@pytest.fixture
def on_host(tmp_path, monkeypatch):
    require_compiler()
    monkeypatch.setattr(fused_program, "cp", _NumpyCupy)
    monkeypatch.setattr(fused_program, "MAX_BLOCKS", 2)  # the grid-stride loop goes round
    monkeypatch.setattr(fused_program, "THREADS", 32)
    built, launches = {}, []

    def function(text, device_id):
        lib = built.get(text)
        if lib is None:
            host = SERIAL_SHIM + text.replace('#line 1 "', '#line 1 "host_')
            lib = built[text] = compile_library(tmp_path, f"fused{len(built)}", host)

        def run(grid, block, args):
            launches.append(text)
            fn = getattr(lib, fused_program.KERNEL)
            c_args = [c_arg(a) for a in args]
            for bx in range(grid[0]):
                for tx in range(block[0]):
                    lib.fastnn_set_index3(bx, 0, 0, tx, 0, block[0], 1, grid[0], 1, 1)
                    fn(*c_args)

        return run

    monkeypatch.setattr(fused_program, "function", function)
    return launches


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_kernel_matches_the_nodes_one_by_one(on_host, dtype):
    cpu = fnn.Device("cpu").ops
    for expr in EXPRS:
        arrays = inputs_for(expr, dtype)
        want = evaluate(cpu, expr, arrays)
        with np.errstate(all="ignore"):
            got = fused_program.fused_elementwise(expr, [a.view(_Arr) for a in arrays])
        assert got.dtype == want.dtype, expr
        tol = dict(rtol=2e-6, atol=1e-7) if dtype == "float32" else dict(rtol=1e-14, atol=0)
        np.testing.assert_allclose(np.asarray(got), want, equal_nan=True, err_msg=str(expr),
                                   **tol)
    assert len(on_host) == len(EXPRS)


def test_views_and_float16_take_the_composite(on_host, monkeypatch):
    seen = []
    monkeypatch.setattr(fused_program, "_composite",
                        lambda expr, inputs: seen.append(expr) or "composite")
    expr = ("add", ("in", 0), ("in", 1))
    a = np.ones((4, 6)).view(_Arr)
    assert fused_program.fused_elementwise(expr, [a.T, a.T]) == "composite"
    h = np.ones(5, np.float16).view(_Arr)
    assert fused_program.fused_elementwise(expr, [h, h]) == "composite"
    inf = ("mul", ("in", 0), ("const", float("inf")))
    assert fused_program.fused_elementwise(inf, [a]) == "composite"
    assert len(seen) == 3 and on_host == []


def test_the_hook_fuses_and_is_registered():
    assert fused_program.fused_elementwise.fuses is True
    assert "fused_program" in " ".join(__import__("fastnn_cuda").fastnn_hook_modules)
    assert kernels.source_header() in text_of(EXPRS[0], inputs_for(EXPRS[0], "float32"))
