"""OpenCL platforms and devices: pyopencl imported on first use, the devices listed.

Nothing here imports pyopencl at module import time: :func:`cl` imports it on first
use, so ``import fastnn_opencl`` works (and the probe reports why the backend is
unavailable) on a machine without pyopencl or without a platform.

Devices are listed over all platforms with GPUs first, then accelerators, then CPUs,
in platform order; ``opencl:N`` is entry N of that list. When ``PYOPENCL_CTX`` names a
device ("P:D", or name substrings as pyopencl accepts), that device moves to the front
and becomes ``opencl``. A device whose compiler cannot build a one-line kernel is left
out, and kept in :data:`unusable` with the reason.
"""

from __future__ import annotations

import os

from fastnn_opencl import pocl_env

INSTALL_HINT = 'install an OpenCL driver, or run on the CPU with `pip install "pyopencl[pocl]"`'
COMPILER_HINT = ("a processor newer than the PoCL's LLVM gives \"unknown target CPU 'generic'\": "
                 "install a newer PoCL, e.g. Debian's (`apt-get install pocl-opencl-icd`)")


_pyopencl = None


def cl():
    """The pyopencl module, imported on first use, and the platforms queried once: PoCL's
    threads, which that query starts, pinned where safe and scheduled as SCHED_BATCH
    (:mod:`fastnn_opencl.pocl_env`). Raises ValueError for a bad
    ``FASTNN_OPENCL_WORKER_POLICY``."""
    global _pyopencl
    if _pyopencl is None:
        policy = pocl_env.worker_policy()
        pocl_env.pin_pocl_threads()
        import pyopencl

        pocl_env.start_platforms(pyopencl, policy)
        _pyopencl = pyopencl
    return _pyopencl


# ---------------------------------------------------------------- device discovery

_TYPE_RANK = {"GPU": 0, "ACCELERATOR": 1, "CPU": 2}


def _type_name(device) -> str:
    t = device.type
    kinds = cl().device_type
    if t & kinds.GPU:
        return "GPU"
    if t & kinds.ACCELERATOR:
        return "ACCELERATOR"
    return "CPU"


def _matches(token: str, index: int, name: str) -> bool:
    return token == str(index) if token.isdigit() else token.lower() in name.lower()


def _from_env(entries: list) -> int | None:
    """Index in ``entries`` of the device that PYOPENCL_CTX selects, if any."""
    spec = os.environ.get("PYOPENCL_CTX", "").strip()
    if not spec:
        return None
    plat_token, _, dev_token = spec.partition(":")
    platforms = []
    for entry in entries:
        if entry[1] not in platforms:
            platforms.append(entry[1])
    for i, (device, platform, dev_index) in enumerate(entries):
        p_index = platforms.index(platform)
        if plat_token and not _matches(plat_token, p_index, platform.name):
            continue
        if dev_token and not _matches(dev_token, dev_index, device.name):
            continue
        return i
    raise RuntimeError(
        f"PYOPENCL_CTX={spec!r} matches no OpenCL device; devices: "
        f"{[e[0].name for e in entries]}"
    )


_PROBE_KERNEL = "__kernel void fastnn_probe(__global float *a) { a[get_global_id(0)] *= 2.0f; }"
unusable: dict[str, str] = {}  # device description -> why its compiler refused a kernel


def compiler_error(device) -> str | None:
    """Why ``device`` cannot build a one-line kernel, or None when it can.

    A platform can list a device whose compiler is broken: pip's PoCL 3.0 (LLVM 14) lists
    processors newer than its LLVM (AMD Zen 5, say) and then fails every build with
    "unknown target CPU 'generic'". Such a device is left out of the list.
    """
    pyopencl = cl()
    try:
        pyopencl.Program(pyopencl.Context([device]), _PROBE_KERNEL).build()
    except pyopencl.Error as exc:
        lines = [ln.strip() for ln in str(exc).splitlines() if "error" in ln.lower()]
        return lines[-1] if lines else str(exc).strip().splitlines()[-1]
    return None


def list_devices() -> list:
    """All usable OpenCL devices, ordered as ``opencl:N`` indexes them. Raises if no platform.

    Devices whose compiler cannot build a kernel are left out and kept in ``unusable``.
    """
    entries = []
    unusable.clear()
    for platform in cl().get_platforms():
        try:
            devices = platform.get_devices()
        except cl().Error:  # a platform with no devices
            continue
        for dev_index, device in enumerate(devices):
            error = compiler_error(device)
            if error is None:
                entries.append((device, platform, dev_index))
            else:
                unusable[describe(device)] = error
    first = _from_env(entries)
    order = sorted(range(len(entries)), key=lambda i: (_TYPE_RANK[_type_name(entries[i][0])], i))
    if first is not None:
        order.remove(first)
        order.insert(0, first)
    return [entries[i][0] for i in order]


def describe(device) -> str:
    fp64 = "fp64" if has_fp64(device) else "no fp64"
    return (
        f"{device.name.strip()} ({_type_name(device)}, {device.platform.name.strip()} "
        f"{device.platform.version.strip()}, {device.max_compute_units} compute units, "
        f"{device.global_mem_size // 2**20} MiB, {fp64})"
    )


def has_fp64(device) -> bool:
    return "cl_khr_fp64" in device.extensions
