#!/usr/bin/env bash
# The checks that need an NVIDIA GPU, in one run of about six minutes: the fused-EMA and attention benchmarks on
# the GPU; the DiT-style GPU script (tests/gpu_scripts/train_ddp.py) on real NCCL under `zeropatch run`, where
# cpu_rehearsal must stay off, then on two ranks sharing the GPU, then rehearsed on the CPU (`run --cpu`) on the
# same machine; last, the suite with a GPU present. OUTPUT_DIR gets check.log, suite.log, suite.xml and the three
# job reports.
#
# Run from the repository root, zeropatch installed (pip install .; xformers too, to time its own kernels):
#   bash benchmarks/gpu_check.sh OUTPUT_DIR [SUITE_SECONDS]
set -u
out=${1:?OUTPUT_DIR}
suite_seconds=${2:-180}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4

step() {  # step SECONDS LABEL COMMAND...: bounded, its output and exit status logged (the suite's in suite.log)
    local seconds=$1 label=$2 status
    shift 2
    echo "=== $label" | tee -a "$out/check.log"
    if [ "$label" = suite ]; then
        timeout -k 10 "$seconds" "$@" >"$out/suite.log" 2>&1
        status=$?
        tail -n 15 "$out/suite.log" | tee -a "$out/check.log"
    else
        timeout -k 10 "$seconds" "$@" 2>&1 | tee -a "$out/check.log"
        status=${PIPESTATUS[0]}
    fi
    echo "=== $label: exit $status" | tee -a "$out/check.log"
}

{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    python3 -c "import sys, torch; print('python', sys.version.split()[0], '| torch', torch.__version__, '| CUDA',
    torch.version.cuda, '| NCCL', '.'.join(map(str, torch.cuda.nccl.version())))"
    python3 -m pip list 2>/dev/null | grep -iE '^(xformers|transformers|accelerate|pytorch-lightning|peft|zeropatch|wrapt) '
} 2>&1 | tee "$out/check.log"

step 90 ema-fp32 python3 benchmarks/ema.py --device cuda --blocks 71 --hidden 896 --rounds 25
step 90 ema-bf16 python3 benchmarks/ema.py --device cuda --blocks 71 --hidden 896 --rounds 25 --dtype bf16
step 90 attention-bf16 python3 benchmarks/attention.py --device cuda --dtype bf16 --rounds 25
step 90 attention-fp32 python3 benchmarks/attention.py --device cuda --dtype fp32 --rounds 25

job=$(mktemp -d)
ZEROPATCH_REPORT="$out/report-nccl-1.json" step 120 nccl-1-rank \
    python3 -m zeropatch run -- python3 -m torch.distributed.run --standalone --nproc_per_node 1 \
    tests/gpu_scripts/train_ddp.py "$job"
ZEROPATCH_REPORT="$out/report-nccl-2.json" NCCL_DEBUG=WARN step 90 nccl-2-ranks-one-gpu \
    python3 -m zeropatch run -- python3 -m torch.distributed.run --standalone --nproc_per_node 2 \
    tests/gpu_scripts/train_ddp.py "$job"
ZEROPATCH_REPORT="$out/report-rehearsal.json" step 120 rehearsal-2-ranks \
    python3 -m zeropatch run --cpu -- python3 -m torch.distributed.run --standalone --nproc_per_node 2 \
    tests/gpu_scripts/train_ddp.py "$job"
step 30 status python3 -m zeropatch status

step "$suite_seconds" suite python3 -m pytest -q -p no:cacheprovider -n 14 --timeout 150 \
    --junitxml "$out/suite.xml" tests
