"""One line naming the BLAS NumPy runs on, for the benchmarks' output: which kernels
OpenBLAS chose (``OPENBLAS_CORETYPE`` can pin them, e.g. to AVX2's on an AVX-512
processor, which halves GEMM throughput there) and how many threads it uses. Ratios
against PyTorch, whose oneDNN chooses its own kernels, depend on it.
"""

from __future__ import annotations

import os


def describe() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "BLAS: unknown (pip install threadpoolctl to name it)"
    import numpy  # noqa: F401  (loads NumPy's BLAS, so that threadpoolctl sees it)

    parts = []
    for pool in threadpool_info():
        if pool.get("user_api") != "blas":
            continue
        pinned = {k: os.environ[k] for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
                  if k in os.environ}
        note = f", set by {', '.join(f'{k}={v}' for k, v in pinned.items())}" if pinned else ""
        parts.append(f"{pool.get('internal_api')} {pool.get('version')}, "
                     f"{pool.get('architecture', '?')} kernels{note}, "
                     f"{pool.get('num_threads')} thread(s)")
    text = "BLAS: " + ("; ".join(parts) if parts else "none found")
    try:
        from fastnn_cpu import mkl_gemm
    except ImportError:
        return text
    gemm = mkl_gemm.VERSION or "NumPy's BLAS"
    return f"{text}; fastnn cpu's larger GEMMs: {gemm} (FASTNN_CPU_GEMM)"
