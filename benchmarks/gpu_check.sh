#!/usr/bin/env bash
# The checks that need an NVIDIA GPU, in one run of about seven minutes (every step bounded): the fused-EMA benchmark
# on DiT-XL/2 (an fp32 model; a bf16 model with fp32 masters) and its host cost per call; the attention benchmark
# (each case against the best direct torch formulation: dense causal, grouped-query heads, sliding window, varlen,
# Open-Sora's block-diagonal cross-attention); the DiT-style GPU script (tests/gpu_scripts/train_ddp.py) on real NCCL
# under `zeropatch run`, where cpu_rehearsal must stay off, then on two ranks sharing the GPU, then rehearsed on the
# CPU (`run --cpu`); a whole DiT training step with zeropatch off and on (benchmarks/train_step.py); last, the suite
# with a GPU present. It ends with one table (step, exit, seconds, the step's last line). OUTPUT_DIR gets check.log,
# summary.md, suite.log, suite.xml and the three job reports.
#
# Run from the repository root, zeropatch installed (pip install .; xformers too, to time its own kernels):
#   bash benchmarks/gpu_check.sh OUTPUT_DIR [SUITE_SECONDS]
set -u
out=${1:?OUTPUT_DIR}
suite_seconds=${2:-150}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4

printf '| step | exit | seconds | last line |\n| --- | --- | --- | --- |\n' >"$out/summary.md"

step() {  # step SECONDS LABEL COMMAND...: bounded, its output and exit status logged (the suite's in suite.log)
    local seconds=$1 label=$2 status started last
    shift 2
    started=$SECONDS
    echo "=== $label" | tee -a "$out/check.log"
    if [ "$label" = suite ]; then
        timeout -k 10 "$seconds" "$@" >"$out/suite.log" 2>&1
        status=$?
        tail -n 15 "$out/suite.log" | tee -a "$out/check.log" >"$out/step.log"
    else
        timeout -k 10 "$seconds" "$@" 2>&1 | tee -a "$out/check.log" >"$out/step.log"
        status=${PIPESTATUS[0]}
    fi
    last=$(grep -v '^[[:space:]]*$' "$out/step.log" | tail -n 1 | tr '|' '/' | cut -c1-160)
    printf '| %s | %s | %s | %s |\n' "$label" "$status" "$((SECONDS - started))" "$last" >>"$out/summary.md"
    echo "=== $label: exit $status" | tee -a "$out/check.log"
}

{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    python3 -c "import sys, torch; print('python', sys.version.split()[0], '| torch', torch.__version__, '| CUDA',
    torch.version.cuda, '| NCCL', '.'.join(map(str, torch.cuda.nccl.version())))"
    python3 -m pip list 2>/dev/null | grep -iE '^(xformers|transformers|accelerate|pytorch-lightning|peft|zeropatch|wrapt) '
} 2>&1 | tee "$out/check.log"

# DiT-XL/2 (675M parameters), the two cases: target fused <= 1.1x the memory limit (1.5x a flat copy)
step 60 ema-fp32 python3 benchmarks/ema.py --device cuda --blocks 28 --hidden 1152 --rounds 25
step 60 ema-bf16-masters python3 benchmarks/ema.py --device cuda --blocks 28 --hidden 1152 --rounds 25 --dtype bf16 --sharded
step 30 ema-host-cost python3 benchmarks/ema.py --device cuda --overhead --rounds 25
# the shapes (the default on CUDA): target every case <= 1.05x the best direct torch formulation
step 90 attention-bf16 python3 benchmarks/attention.py --device cuda --dtype bf16 --rounds 25
step 45 attention-fp16-opensora python3 benchmarks/attention.py --device cuda --dtype fp16 --cases opensora --rounds 25
step 45 attention-fp32 python3 benchmarks/attention.py --device cuda --dtype fp32 --size small --rounds 15

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
# a DiT-B/2-sized copy of DiT's train.py loop (epochs of 2 steps: the DataLoader's workers restart every 2 steps), plain
# and under `zeropatch run`, interleaved: target x plain <= 1.005 (needs torchvision and Pillow)
step 150 train-step python3 benchmarks/train_step.py --device cuda --launcher python --patches "" --rounds 3 \
    --image-size 256 --hidden 768 --depth 12 --heads 12 --steps 20 --timeout 60

step "$suite_seconds" suite python3 -m pytest -q -p no:cacheprovider -n 14 --timeout 150 \
    --junitxml "$out/suite.xml" tests

echo "=== summary ($(date -u +%Y-%m-%d), $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1))" | tee -a "$out/check.log"
tee -a "$out/check.log" <"$out/summary.md"
