#!/usr/bin/env bash
# The checks that need an NVIDIA GPU, in one run of at most TOTAL_SECONDS (default 540, about 6 minutes before the suite; every step bounded, and a step
# that would end past the deadline is cut to what is left): first a whole DiT training step with zeropatch off, on, and
# activated by the start-up hook alone (benchmarks/train_step.py, torchrun + NCCL: DataLoader workers restarted every
# 2-step epoch, as in the run); the fused-EMA benchmark on DiT-XL/2 (an fp32 model; a bf16 model with fp32
# masters; the "split" candidates) and its host cost per call; the attention benchmark (each case against the best
# direct torch formulation: dense causal, grouped-query heads, sliding window, varlen, Open-Sora's block-diagonal
# cross-attention); the tests written for a GPU (ZEROPATCH_TEST_GPUS=1 -k on_a_gpu); the DiT-style GPU script
# (tests/gpu_scripts/train_ddp.py) on real NCCL under `zeropatch run`, where cpu_rehearsal must stay off, then
# rehearsed on two CPU ranks (`run --cpu`; two NCCL ranks need two GPUs); last, the whole suite (GPUs hidden, as in CI)
# with what time is left. It ends with one table (step, exit, seconds, the step's last line). OUTPUT_DIR gets
# check.log, step.log, summary.md, suite.log, suite.xml and the two job reports.
#
# Run from the repository root, zeropatch installed (pip install .; xformers too, to time its own kernels):
#   bash benchmarks/gpu_check.sh OUTPUT_DIR [TOTAL_SECONDS]
set -u
out=${1:?OUTPUT_DIR}
deadline=$((SECONDS + ${2:-540}))
mkdir -p "$out"
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4

printf '| step | exit | seconds | last line |\n| --- | --- | --- | --- |\n' >"$out/summary.md"

step() {  # step SECONDS LABEL COMMAND...: bounded (by the deadline too), its output and exit status logged
    local seconds=$1 label=$2 status started last
    shift 2
    if [ $((deadline - SECONDS)) -lt "$seconds" ]; then seconds=$((deadline - SECONDS)); fi
    if [ "$seconds" -lt 20 ]; then
        printf '| %s | - | 0 | not run: the deadline |\n' "$label" >>"$out/summary.md"
        return
    fi
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

# a DiT-B/2-sized copy of DiT's train.py loop under torchrun (epochs of 2 steps: the DataLoader's workers restart every 2
# steps), plain, under `zeropatch run` and by the hook alone, interleaved: target x plain <= 1.005 (torchvision, Pillow)
step 260 train-step python3 benchmarks/train_step.py --device cuda --launcher torchrun --hook --patches "" --rounds 3 \
    --warmup-rounds 0 --image-size 256 --hidden 768 --depth 12 --heads 12 --steps 20 --timeout 60
# DiT-XL/2 (675M parameters), the two cases: target fused <= 1.1x the memory limit (1.5x a flat copy)
step 60 ema-fp32 python3 benchmarks/ema.py --device cuda --blocks 28 --hidden 1152 --rounds 25 \
    --split-elements 262144,1048576,4194304
step 60 ema-bf16-masters python3 benchmarks/ema.py --device cuda --blocks 28 --hidden 1152 --rounds 25 --dtype bf16 \
    --sharded --split-elements 262144,1048576,4194304
step 30 ema-host-cost python3 benchmarks/ema.py --device cuda --overhead --rounds 25
# the shapes (the default on CUDA): target every case <= 1.05x the best direct torch formulation
step 90 attention-bf16 python3 benchmarks/attention.py --device cuda --dtype bf16 --rounds 25
step 45 attention-fp16-opensora python3 benchmarks/attention.py --device cuda --dtype fp16 --cases opensora --rounds 25
step 45 attention-fp32 python3 benchmarks/attention.py --device cuda --dtype fp32 --size small --rounds 15
ZEROPATCH_TEST_GPUS=1 step 90 gpu-tests python3 -m pytest -q -p no:cacheprovider --timeout 80 -k on_a_gpu tests

job=$(mktemp -d)
ZEROPATCH_REPORT="$out/report-nccl-1.json" step 120 nccl-1-rank \
    python3 -m zeropatch run -- python3 -m torch.distributed.run --standalone --nproc_per_node 1 \
    tests/gpu_scripts/train_ddp.py "$job"
ZEROPATCH_REPORT="$out/report-rehearsal.json" step 120 rehearsal-2-ranks \
    python3 -m zeropatch run --cpu -- python3 -m torch.distributed.run --standalone --nproc_per_node 2 \
    tests/gpu_scripts/train_ddp.py "$job"
step 30 status python3 -m zeropatch status

step 600 suite python3 -m pytest -q -p no:cacheprovider -n 14 --timeout 150 --junitxml "$out/suite.xml" tests

echo "=== summary ($(date -u +%Y-%m-%d), $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1))" | tee -a "$out/check.log"
tee -a "$out/check.log" <"$out/summary.md"
