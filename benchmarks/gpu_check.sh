#!/usr/bin/env bash
# The one script to run on a machine with an NVIDIA GPU (e.g. through the device tool):
#
#   bash benchmarks/gpu_check.sh            # from anywhere; results go to $OUT
#
# Without a GPU it says so and stops within seconds (exit 0), having run nothing.
# With one, in this order (the parts that matter most first):
#  1. records the environment (nvidia-smi, cupy, torch); installs cupy if it is missing
#     (from wheels carried in .whl/ where there are some, else the package index:
#     cupy-cuda13x or -cuda12x after the driver's CUDA version);
#  2. installs the repository without touching a package registry (editable, --no-deps);
#     if pip cannot, puts the tree on PYTHONPATH with hand-made dist-infos so that the
#     fastnn.backends entry points are still found;
#  3. runs tests/backends/cuda (NVRTC compile check, kernels vs the NumPy backend);
#  4. runs the conformance suite on `cuda` (float32, float64 and float16), then shadow
#     mode's device tests on cuda and benchmarks/bench_shadow.py (what shadowing the MLP
#     and fastnn train's other models costs against the two backends' own time);
#  5. runs benchmarks/gpu_models.py, one model a process: the eight model steps of
#     bench_models.py on cuda, eager, compiled (CUDA graphs + fused kernels), compiled
#     without graphs, and PyTorch CUDA eager, with a compiled-vs-eager check;
#  6. runs benchmarks/gpu_bench.py (matmul vs cupy, MLP and Conv1d steps vs torch, the
#     fused hooks vs their composites and aten);
#  7. then, while time is left: gpu_overhead.py (host time per call), digits training on
#     cuda, the conformance cases that multiply with FASTNN_CUDA_GEMM=cublas, and the
#     data-parallel checks (NCCL on one rank, MPI ranks host-staged).
#
# Every part runs under its own timeout, cut to what is left of GPU_CHECK_SECONDS
# (default 540: the device tool's command limit is 600); a part that hangs is killed and
# the next one runs, and a part with under 15 s left is skipped, and said. Results (at
# most eight files, as the device tool returns): $OUT/SUMMARY.md (read this first),
# $OUT/results.json (each part's verdict, exit status, seconds and limit), the reports
# conformance_cuda.json, shadow_cuda.json, gpu_models.json, gpu_report.json,
# gpu_overhead.json, and $OUT/logs.tgz (every log); all rewritten after each part, so a run stopped early still
# returns what it did.
#
# For tests: PYTHON picks the interpreter; FASTNN_GPU_CHECK_ASSUME_GPU=1 skips the GPU
# detection (tests/test_gpu_check_script.py runs the timeouts with a Python that hangs).

set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu_check_out}
mkdir -p "$OUT"
LOGS=$(mktemp -d)
PY=${PYTHON:-python3}
START=$(date +%s)
BUDGET=${GPU_CHECK_SECONDS:-540}
RESERVE=10  # seconds kept for the last packing
SUMMARY="$OUT/SUMMARY.md"
PARTS="$LOGS/parts.jsonl"
: > "$PARTS"
echo "# fastnn GPU check ($(date -u +%Y-%m-%dT%H:%MZ))" > "$SUMMARY"

elapsed() { echo $(( $(date +%s) - START )); }
note() { echo "$*" | tee -a "$SUMMARY"; }
# part NAME VERDICT RC SECONDS LIMIT: one line of results.json
part() { printf '{"part": "%s", "verdict": "%s", "rc": %d, "seconds": %d, "limit": %d}\n' \
    "$1" "$2" "$3" "$4" "$5" >> "$PARTS"; }
pack() {
    { printf '{"budget_s": %d, "elapsed_s": %d, "gpu": "%s", "parts": [' "$BUDGET" \
          "$(elapsed)" "${GPU_NAME:-none}"
      paste -sd, "$PARTS"; printf ']}\n'; } > "$OUT/results.json"
    for report in conformance_cuda.json shadow_cuda.json gpu_models.json gpu_report.json \
            gpu_overhead.json; do
        [ -f "$LOGS/$report" ] && cp "$LOGS/$report" "$OUT/"
    done
    cp "$SUMMARY" "$LOGS/" && tar czf "$OUT/logs.tgz" -C "$LOGS" .
}
trap pack EXIT

# run NAME SECONDS CMD...: run a part under a timeout of SECONDS, cut to what is left of
# the budget (skipped below 15 s), log it, note its verdict; returns its exit status.
run() {
    local name=$1 limit=$2
    shift 2
    local left=$(( BUDGET - $(elapsed) - RESERVE ))
    if [ $left -lt 15 ]; then
        note "- **$name**: skipped, $(elapsed)s of ${BUDGET}s spent"
        part "$name" skipped 0 0 0
        return 125
    fi
    [ "$limit" -gt $left ] && limit=$left
    local t0=$(date +%s)
    timeout --kill-after=5 "$limit" "$@" > "$LOGS/$name.log" 2>&1
    local rc=$?
    local verdict="ok"
    [ $rc -ne 0 ] && verdict="FAILED (exit $rc)"
    [ $rc -eq 124 ] || [ $rc -eq 137 ] && verdict="TIMED OUT after ${limit}s"
    note "- **$name**: $verdict in $(( $(date +%s) - t0 ))s (log: $name.log)"
    part "$name" "$verdict" $rc $(( $(date +%s) - t0 )) "$limit"
    pack
    return $rc
}
# probe CMD...: a quick question (an import, a version) under a timeout of 20 s, cut to
# what is left of the budget, so that no command runs outside it
probe() {
    local left=$(( BUDGET - $(elapsed) - RESERVE ))
    [ $left -lt 1 ] && return 124
    [ $left -gt 20 ] && left=20
    timeout --kill-after=2 $left "$@"
}
# show NAME LINES [PATTERN]: the end of a part's log (its matching lines) in the summary
show() {
    [ -f "$LOGS/$1.log" ] || return 0
    local text
    if [ $# -ge 3 ]; then text=$(grep -E "$3" "$LOGS/$1.log" | tail -n "$2")
    else text=$(tail -n "$2" "$LOGS/$1.log"); fi
    [ -n "$text" ] && printf '```\n%s\n```\n' "$text" >> "$SUMMARY"
    return 0
}

# ---------------------------------------------------------------- is there a GPU?
GPU_NAME=""
if [ -z "${FASTNN_GPU_CHECK_ASSUME_GPU:-}" ]; then
    GPU_NAME=$(probe nvidia-smi --query-gpu=name,driver_version,memory.total \
        --format=csv,noheader 2>/dev/null | head -1)
    if [ -z "$GPU_NAME" ] && probe $PY -c "import cupy, sys
sys.exit(0 if cupy.cuda.runtime.getDeviceCount() > 0 else 1)" > /dev/null 2>&1; then
        GPU_NAME="a CUDA device (found by cupy; nvidia-smi found none)"
    fi
    if [ -z "$GPU_NAME" ]; then
        SMI="not installed"
        command -v nvidia-smi > /dev/null && SMI="installed but lists no GPU"
        note ""
        note "**No NVIDIA GPU here: nothing was run.** nvidia-smi is $SMI, and cupy sees no"
        note "CUDA device. Run this script on a machine with an NVIDIA GPU (the device tool's"
        note "run); CI checks the CUDA backend without one (pytest tests/backends/cuda)."
        part gpu_detection "no GPU: skipped" 0 "$(elapsed)" 0
        exit 0
    fi
else
    GPU_NAME="assumed (FASTNN_GPU_CHECK_ASSUME_GPU)"
fi

# ---------------------------------------------------------------- environment, installs
note ""
note "## Environment"
note "- GPU: $GPU_NAME"
probe nvidia-smi > "$LOGS/nvidia-smi.txt" 2>&1
run environment 60 $PY - <<'EOF'
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
cat "$LOGS/environment.log" >> "$SUMMARY"

note ""
note "## Parts"
if ! probe $PY -c "import cupy" > /dev/null 2>&1; then
    MAJOR=$(probe nvidia-smi 2>/dev/null | grep -o "CUDA Version: [0-9]*" | grep -o "[0-9]*$")
    CUPY=cupy-cuda12x  # a CUDA 13 driver runs CUDA 12 builds too
    [ "${MAJOR:-0}" -ge 13 ] 2>/dev/null && CUPY=cupy-cuda13x
    if ls .whl/cupy*.whl > /dev/null 2>&1; then
        run install_cupy 120 $PY -m pip install --no-index --find-links .whl "$CUPY"
    else
        run install_cupy 180 $PY -m pip install "$CUPY"
    fi
fi

INSTALLED=0
if probe $PY -c "import setuptools" 2>/dev/null; then
    run install 90 $PY -m pip install --no-deps --no-build-isolation --no-index \
            -e . -e backends/cpu_numpy -e backends/cuda_cupy \
        && probe $PY -c "import fastnn_cuda, fastnn_cpu" 2>/dev/null && INSTALLED=1
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
run backends 60 $PY -c "import fastnn as f; [print(f'- backend {r.name}: available={r.available} \
{r.devices} {r.reason}') for r in f.backends()]"
cat "$LOGS/backends.log" >> "$SUMMARY"

# pytest-xdist, where installed, spreads cupy's first-use kernel compiles over the cores
XDIST=""
probe $PY -c "import xdist" 2>/dev/null && XDIST="-n 8"
note "- pytest parallelism: ${XDIST:-none (pytest-xdist not installed)}"

# ---------------------------------------------------------------- correctness
# the tests that need the GPU first, then the rest (the host-run kernels, as CI runs them)
run cuda_tests 120 $PY -m pytest tests/backends/cuda/test_cuda_*gpu.py tests/backends/cuda \
    -q -rs -p no:cacheprovider $XDIST \
    --junitxml="$LOGS/cuda_tests.xml"
show cuda_tests 15

# every float dtype the backend reports (float32, float64, float16)
run conformance 150 $PY -m pytest -p fastnn.conformance.plugin --pyargs fastnn.conformance \
    --backend cuda -q -p no:cacheprovider $XDIST --conformance-report "$LOGS/conformance_cuda.json"
show conformance 40 "FAILED|ERROR|CONFORM|passed|failed"

# shadow mode on cuda: planted faults in clones of the backend named at their lines, then
# the shadowed steps' time over the cuda and cpu steps' (the budget is 1.5), and with the
# checks left out (--floor: the reads and the per-call bookkeeping alone), with them on a
# worker thread (--worker: the experimental FASTNN_SHADOW_WORKER=1), each model's
# shadowed steps profiled into shadow_profile.txt (in logs.tgz): the MLPs and
# the transformer first (its JSON is rewritten after each model: a part cut short keeps
# the models it timed)
run shadow 120 bash -c "$PY -m pytest tests/shadowing/test_shadow_device.py \
    tests/shadowing/test_shadow_deferred.py tests/shadowing/test_shadow_worker.py -q -rs \
    -p no:cacheprovider -k cuda && \
    $PY benchmarks/bench_shadow.py --backends cuda --rounds 10 --floor --worker \
    --json $LOGS/shadow_cuda.json --profile $LOGS/shadow_profile.txt \
    --models small,large,transformer,lstm,gru,conv1d,cnn"
show shadow 12 "passed|failed|FAILED|ERROR|^cuda|^backend"

# ---------------------------------------------------------------- model steps
# one process a model, so that one that hangs leaves the others' rows
MODELS=$(probe $PY -c "import sys; sys.path.insert(0, 'benchmarks')
from bench_models import define_names; print(' '.join(define_names()))" 2>/dev/null)
MODELS=${MODELS:-MLP Conv1d CNN ResNet LSTM GRU Transformer nanoGPT}
MODELS_END=$(( $(elapsed) + 200 ))
for model in $MODELS; do
    limit=$(( MODELS_END - $(elapsed) ))
    [ $limit -gt 50 ] && limit=50
    if [ $limit -lt 15 ]; then
        note "- **model_$model**: skipped, the models' 200 s are spent"
        part "model_$model" skipped 0 0 0
        continue
    fi
    run "model_$model" $limit $PY benchmarks/gpu_models.py --models "$model" --append \
        --out "$LOGS" --budget 40 --rounds 3 --seconds 0.2
done
if [ -f "$LOGS/gpu_models.md" ]; then
    cat "$LOGS/gpu_models.md" >> "$SUMMARY"
fi

# ---------------------------------------------------------------- benchmarks
LEFT=$(( BUDGET - $(elapsed) - RESERVE - 30 ))
[ $LEFT -gt 120 ] && LEFT=120
if [ $LEFT -gt 20 ]; then
    run bench $(( LEFT + 15 )) $PY benchmarks/gpu_bench.py --out "$LOGS" --budget "$LEFT" \
        --profile-dir "$LOGS"
    [ -f "$LOGS/gpu_report.md" ] && cat "$LOGS/gpu_report.md" >> "$SUMMARY"
else
    note "- **bench**: skipped, only ${LEFT}s left of the budget"
    part bench skipped 0 0 0
fi

# ---------------------------------------------------------------- while time is left
run overhead 45 $PY benchmarks/gpu_overhead.py --out "$LOGS"
show overhead 20 "^\{"

# the README's main job on the GPU, with a checkpoint written from device memory
run train_digits 45 $PY -m fastnn.cli train --backend cuda --checkpoint "$LOGS/digits.safetensors"
show train_digits 6

# the opt-in direct cuBLAS matmul (FASTNN_CUDA_GEMM=cublas) through the cases that multiply
run conformance_cublas_gemm 60 env FASTNN_CUDA_GEMM=cublas $PY -m pytest \
    -p fastnn.conformance.plugin --pyargs fastnn.conformance --backend cuda -q \
    -p no:cacheprovider $XDIST \
    -k "matmul or linear or Linear or Dense or conv or Conv or Sequential or Residual"
show conformance_cublas_gemm 10 "FAILED|ERROR|passed|failed"

# data parallel: the NCCL hooks on the GPU (one rank: NCCL refuses two ranks on one GPU),
# two MPI ranks sharing it host-staged (FASTNN_NCCL=0; skipped without mpiexec), then the
# MLP step on one rank with NCCL and host-staged collectives (bytes, calls, ms per step)
run distributed 60 $PY -m pytest tests/backends/cuda/test_cuda_nccl_gpu.py tests/distributed \
    -q -rs -p no:cacheprovider -k "cuda or nccl"
show distributed 8
run bench_distributed 40 bash -c "$PY benchmarks/bench_distributed.py --backend cuda \
    --ranks 1 && FASTNN_NCCL=0 $PY benchmarks/bench_distributed.py --backend cuda --ranks 1"
show bench_distributed 8

note ""
note "total: $(elapsed)s of ${BUDGET}s"
