#!/usr/bin/env bash
# The one script to run on a machine with an NVIDIA GPU (e.g. through the device tool):
#
#   bash benchmarks/gpu_check.sh            # from the repository root; results go to $OUT
#
# 1. records the environment (nvidia-smi, cupy, torch);
# 2. installs the repository without touching a package registry (editable,
#    --no-deps); if pip cannot, puts the tree on PYTHONPATH with a hand-made
#    dist-info so that the fastnn.backends entry points are still found;
# 3. runs tests/backends/cuda (NVRTC compile check, kernels vs the NumPy
#    backend, no host transfer in a training step);
# 4. runs the shared conformance suite on `cuda`, then trains digits on `cuda`;
# 4b. runs the data-parallel checks on cuda (NCCL on one rank, MPI ranks host-staged)
#    and the MLP step of benchmarks/bench_distributed.py with and without NCCL;
# 5. runs benchmarks/gpu_overhead.py (host time per call: fastnn, cupy, torch) and
#    benchmarks/gpu_bench.py (matmul vs cupy, MLP and Conv1d steps vs torch);
# 6. runs benchmarks/gpu_models.py: the eight model steps of bench_models.py on cuda,
#    eager, compiled (CUDA graphs + fused kernels), compiled without graphs, and
#    PyTorch CUDA eager, with a compiled-vs-eager check (at most ~100 s of models).
#
# Every step has its own timeout, and the benchmark gets what is left of 370 s (at
# most 130 s): about 3 minutes on an H200 when all goes well, under 12 minutes when every
# step runs into its timeout (give the device tool's run a timeout_s of 600; the models
# step, last, is the one cut short then; the models it finished are still summarised).
# Results: $OUT/SUMMARY.md (read this first) and $OUT/logs.tgz (each step's log and
# reports, re-packed after every step so that a run stopped early still returns them;
# two files, since the device tool returns at most eight).

set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu_check_out}
mkdir -p "$OUT"
LOGS=$(mktemp -d)
PY=${PYTHON:-python3}
START=$(date +%s)
SUMMARY="$OUT/SUMMARY.md"
echo "# fastnn GPU check ($(date -u +%Y-%m-%dT%H:%MZ))" > "$SUMMARY"

pack() { cp "$SUMMARY" "$LOGS/" && tar czf "$OUT/logs.tgz" -C "$LOGS" . ; }
elapsed() { echo $(( $(date +%s) - START )); }
note() { echo "$*" | tee -a "$SUMMARY"; }

# run NAME SECONDS CMD...: run a step with a timeout, log it, note its exit status.
run() {
    local name=$1 limit=$2
    shift 2
    local t0=$(date +%s)
    timeout --kill-after=10 "$limit" "$@" > "$LOGS/$name.log" 2>&1
    local rc=$?
    local verdict="ok"
    [ $rc -ne 0 ] && verdict="FAILED (exit $rc)"
    [ $rc -eq 124 ] && verdict="TIMED OUT after ${limit}s"
    note "- **$name**: $verdict in $(( $(date +%s) - t0 ))s (log: $name.log)"
    pack
    return $rc
}

note ""
note "## Environment"
nvidia-smi > "$LOGS/nvidia-smi.txt" 2>&1 && note "- $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)"
$PY - >> "$SUMMARY" 2>&1 <<'EOF'
import platform
print(f"- python {platform.python_version()}")
try:
    import cupy
    print(f"- cupy {cupy.__version__}, CUDA runtime {cupy.cuda.runtime.runtimeGetVersion()}, "
          f"devices {cupy.cuda.runtime.getDeviceCount()}")
except Exception as exc:
    print(f"- cupy: {type(exc).__name__}: {exc}")
try:
    import torch
    print(f"- torch {torch.__version__}, cuda available {torch.cuda.is_available()}")
except Exception as exc:
    print(f"- torch: {type(exc).__name__}: {exc}")
EOF

note ""
note "## Steps"
INSTALLED=0
if $PY -c "import setuptools" 2>/dev/null; then
    run install 120 $PY -m pip install --no-deps --no-build-isolation --no-index \
            -e . -e backends/cpu_numpy -e backends/cuda_cupy \
        && $PY -c "import fastnn_cuda, fastnn_cpu" 2>/dev/null && INSTALLED=1
else
    # --no-build-isolation builds with the interpreter's own setuptools: none, no install
    note "- **install**: skipped, setuptools is not importable here"
fi
if [ $INSTALLED -eq 0 ]; then
    # No pip install: the tree on PYTHONPATH plus dist-infos that declare the entry points
    # under the real distribution names (fastnn.backends() reports them).
    SITE=$(mktemp -d)
    dist() {  # dist NAME ENTRY_POINTS_TEXT
        local d="$SITE/$(echo "$1" | tr - _)-0.0.dist-info"
        mkdir -p "$d"
        printf 'Metadata-Version: 2.1\nName: %s\nVersion: 0.0\n' "$1" > "$d/METADATA"
        printf "$2" > "$d/entry_points.txt"
    }
    dist fastnn-core '[pytest11]\nfastnn_conformance = fastnn.conformance.options\n'
    dist fastnn-backend-cpu '[fastnn.backends]\ncpu = fastnn_cpu\n'
    dist fastnn-backend-cuda '[fastnn.backends]\ncuda = fastnn_cuda\n'
    export PYTHONPATH="$PWD:$PWD/backends/cpu_numpy:$PWD/backends/cuda_cupy:$SITE${PYTHONPATH:+:$PYTHONPATH}"
    note "- install: using PYTHONPATH and $SITE for the entry points instead"
fi
$PY -c "import fastnn as f; [print(f'- backend {r.name}: available={r.available} {r.devices} {r.reason}') for r in f.backends()]" >> "$SUMMARY" 2>&1

# pytest-xdist, where installed, spreads cupy's first-use kernel compiles over the cores
XDIST=""
$PY -c "import xdist" 2>/dev/null && XDIST="-n 8"
note "- pytest parallelism: ${XDIST:-none (pytest-xdist not installed)}"

run cuda_tests 120 $PY -m pytest tests/backends/cuda -q -rs -p no:cacheprovider $XDIST \
    --junitxml="$LOGS/cuda_tests.xml"
note '```'
tail -n 15 "$LOGS/cuda_tests.log" >> "$SUMMARY"
note '```'

run conformance 150 $PY -m pytest -p fastnn.conformance.plugin --pyargs fastnn.conformance \
    --backend cuda -q -p no:cacheprovider $XDIST --conformance-report "$LOGS/conformance_cuda.json"
note '```'
grep -E "FAILED|ERROR|CONFORM|passed|failed" "$LOGS/conformance.log" | tail -n 40 >> "$SUMMARY"
note '```'

# the opt-in direct cuBLAS matmul (FASTNN_CUDA_GEMM=cublas) through the cases that multiply
run conformance_cublas_gemm 90 env FASTNN_CUDA_GEMM=cublas $PY -m pytest -p fastnn.conformance.plugin \
    --pyargs fastnn.conformance --backend cuda -q -p no:cacheprovider $XDIST \
    -k "matmul or linear or Linear or Dense or conv or Conv or Sequential or Residual"
note '```'
grep -E "FAILED|ERROR|passed|failed" "$LOGS/conformance_cublas_gemm.log" | tail -n 10 >> "$SUMMARY"
note '```'

# the README's main job on the GPU, with a checkpoint written from device memory
run train_digits 60 $PY -m fastnn.cli train --backend cuda --checkpoint "$LOGS/digits.safetensors"
note '```'
tail -n 6 "$LOGS/train_digits.log" >> "$SUMMARY"
note '```'

# data parallel: the NCCL hooks on the GPU (one rank: NCCL refuses two ranks on one GPU),
# two MPI ranks sharing it host-staged (FASTNN_NCCL=0; skipped without mpiexec), then the
# MLP step on one rank with NCCL and host-staged collectives (bytes, calls, ms per step)
# (~30 s; skipped when the earlier steps ran long, so the worst case stays as it was)
if [ "$(elapsed)" -lt 250 ]; then
    run distributed 60 $PY -m pytest tests/backends/cuda/test_cuda_nccl_gpu.py tests/distributed \
        -q -rs -p no:cacheprovider -k "cuda or nccl"
    note '```'
    tail -n 8 "$LOGS/distributed.log" >> "$SUMMARY"
    note '```'
    run bench_distributed 40 bash -c "$PY benchmarks/bench_distributed.py --backend cuda \
        --ranks 1 && FASTNN_NCCL=0 $PY benchmarks/bench_distributed.py --backend cuda --ranks 1"
    note '```'
    tail -n 8 "$LOGS/bench_distributed.log" >> "$SUMMARY"
    note '```'
else
    note "- **distributed**: skipped, $(elapsed)s used already"
fi

# host time per call, per primitive: fastnn, its backend hook, cupy, torch
run overhead 60 $PY benchmarks/gpu_overhead.py --out "$LOGS"
note '```'
grep "^{" "$LOGS/overhead.log" >> "$SUMMARY"
note '```'

LEFT=$(( 370 - $(elapsed) ))
[ $LEFT -gt 130 ] && LEFT=130
if [ $LEFT -gt 20 ]; then
    run bench $(( LEFT + 15 )) $PY benchmarks/gpu_bench.py --out "$LOGS" --budget "$LEFT" \
        --profile-dir "$LOGS"
    [ -f "$LOGS/gpu_report.md" ] && cat "$LOGS/gpu_report.md" >> "$SUMMARY"
else
    note "- **bench**: skipped, only ${LEFT}s left of the budget"
fi
# the model steps on cuda: eager, compiled (graphs, fused kernels), PyTorch CUDA eager
run models 150 $PY benchmarks/gpu_models.py --out "$LOGS" --budget 100 --rounds 3 \
    --seconds 0.2
if [ -f "$LOGS/gpu_models.md" ]; then
    cat "$LOGS/gpu_models.md" >> "$SUMMARY"
else
    note '```'
    grep -E "^\{|^[A-Za-z0-9]+ \{|Error" "$LOGS/models.log" | tail -n 12 >> "$SUMMARY"
    note '```'
fi
note ""
note "total: $(elapsed)s"
pack
