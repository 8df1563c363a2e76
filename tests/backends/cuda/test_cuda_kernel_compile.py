"""Every CUDA kernel source compiles with NVRTC for sm_90 and sm_80, with no GPU needed.

The text compiled here is exactly what the backend hands cupy.RawModule at run
time (``kernels.source``, ``kernels.COMPILE_OPTIONS``), so a kernel that does
not compile fails CI on any machine with NVRTC (``nvidia-cuda-nvrtc-cu12``).
"""

from __future__ import annotations

import re

import pytest
from fastnn_cuda import kernels, launch

try:
    from cupy.cuda import nvrtc

    nvrtc.getVersion()
except Exception as exc:  # cupy missing, or cupy without its NVRTC library
    pytest.skip(
        f"NVRTC is not importable ({type(exc).__name__}: {exc}); install it with "
        '`pip install -e "backends/cuda_cupy[compile-check]"` to compile-check the kernels',
        allow_module_level=True,
    )

ARCHES = ("compute_90", "compute_80")


def compile_ptx(source: str, name: str, arch: str, options=kernels.COMPILE_OPTIONS) -> str:
    program = nvrtc.createProgram(source, name, [], [])
    try:
        nvrtc.compileProgram(program, [f"--gpu-architecture={arch}", *options])
    except nvrtc.NVRTCError as exc:
        raise AssertionError(
            f"{name} does not compile for {arch}: {exc}\n{nvrtc.getProgramLog(program)}"
        ) from None
    return nvrtc.getPTX(program).decode()


@pytest.fixture(scope="module")
def ptx():
    cache = {}

    def get(name, arch):
        if (name, arch) not in cache:
            cache[name, arch] = compile_ptx(kernels.source(name), name, arch)
        return cache[name, arch]

    return get


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("name", kernels.SOURCES)
def test_source_compiles_and_defines_its_kernels(ptx, name, arch):
    text = ptx(name, arch)
    declared = kernels.declared_kernels(name)
    assert declared, f"{name} declares no kernels (the loader's regex found none)"
    entries = set(re.findall(r"\.entry\s+(\w+)\s*\(", text))
    assert declared <= entries, f"{name}: kernels missing from the PTX: {declared - entries}"


def test_every_kernel_python_launches_exists_for_every_dtype():
    for base, file in kernels.KERNEL_FILES.items():
        declared = kernels.declared_kernels(file)
        for dtype in kernels.KERNEL_DTYPES:
            assert kernels.kernel_name(base, dtype) in declared, (base, dtype, file)


def test_activation_codes_match_the_cuda_enum():
    text = kernels.source("activations.cu")
    enum = {name.lower(): int(code) for name, code in re.findall(r"ACT_(\w+) = (\d+)", text)}
    assert enum == kernels.ACTIVATION_CODES


@pytest.mark.parametrize("name,bases", [("optim.cu", ("sgd_step", "adam_step", "rmsprop_step")),
                                        ("clip.cu", ("norm_parts", "clip_scale"))])
def test_step_table_parameter_has_the_size_python_packs(ptx, name, bases):
    text = ptx(name, "compute_90")
    for base in bases:
        for dtype in kernels.KERNEL_DTYPES:
            name = kernels.kernel_name(base, dtype)
            size = re.search(rf"\.param \.align \d+ \.b8 {name}_param_0\[(\d+)\]", text)
            assert size, f"no by-value table parameter found for {name}"
            assert int(size.group(1)) == launch.STEP_TABLE_DTYPE.itemsize


def test_a_broken_source_fails_the_check():
    broken = kernels.source("rms.cu") + '\nextern "C" __global__ void oops() { undefined_fn(); }\n'
    with pytest.raises(AssertionError, match="undefined_fn"):
        compile_ptx(broken, "broken.cu", "compute_90")


def test_a_table_layout_mismatch_fails_the_compile():
    options = [o for o in kernels.COMPILE_OPTIONS if not o.startswith("-DFASTNN_TABLE_BYTES")]
    options.append(f"-DFASTNN_TABLE_BYTES={launch.STEP_TABLE_DTYPE.itemsize + 8}")
    with pytest.raises(AssertionError, match="StepTable layout"):
        compile_ptx(kernels.source("optim.cu"), "optim.cu", "compute_90", options)


@pytest.mark.parametrize("name", kernels.SOURCES)
def test_scalar_parameters_are_64_bit(ptx, name):
    """Python ints and floats reach a kernel as int64 / float64 (cupy's rule), so every
    scalar parameter must be 8 bytes: a 4-byte `int` or `float` would read half of one."""
    text = ptx(name, "compute_90")
    for entry, params in re.findall(r"\.entry\s+(\w+)\s*\((.*?)\)", text, flags=re.S):
        narrow = re.findall(r"\.param\s+\.(?:[usb]32|f32|[usb]16|[usb]8)\s+(\w+)", params)
        assert not narrow, f"{entry}: 32-bit or narrower scalar parameters {narrow}"
