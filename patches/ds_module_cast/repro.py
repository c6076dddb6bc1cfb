"""LLaVA-1.5's fine-tune under DeepSpeed ZeRO-3, reduced: the language model is built partitioned under
deepspeed.zero.Init (the HF Trainer's from_pretrained does it for --deepspeed zero3.json), then a projector is added
after it (LLaVA's initialize_vision_modules adds mm_projector in float32), and deepspeed.initialize runs with bf16.
Its repository pins deepspeed==0.9.5 (a requirements.txt beside the script, as LLaVA's pyproject.toml does).

Without zeropatch (DeepSpeed >= 0.19.2):
  File ".../deepspeed/runtime/zero/utils.py", line 218, in defragment
    assert len(set(t.dtype for t in tensors)) == 1
  AssertionError
With `zeropatch run -- python repro.py` the engine casts the whole model as DeepSpeed <= 0.19.1 did (the projector
and, for this legacy code, the float buffer in bfloat16) and trains 2 steps.
"""

import os
import shutil
import subprocess
import sys
import tempfile

import torch

CONFIG = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1, "bf16": {"enabled": True},
          "zero_optimization": {"stage": 3}, "zero_allow_untested_optimizer": True}


def train():
    os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
                      MASTER_PORT="0")  # one local rank; port 0 lets the store pick a free port
    import deepspeed

    deepspeed.init_distributed("gloo")
    torch.manual_seed(0)
    with deepspeed.zero.Init(config_dict_or_path=CONFIG):
        model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU())
    model.add_module("mm_projector", torch.nn.Linear(8, 8))  # made after zero.Init, float32
    model.register_buffer("scale", torch.full((8,), 1 / 3))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, config=CONFIG)
    for _ in range(2):
        loss = (engine(torch.randn(1, 8, dtype=torch.bfloat16)) * model.scale).float().square().mean()
        engine.backward(loss)
        engine.step()
    dtypes = {model.mm_projector.weight.dtype, model.scale.dtype}
    if dtypes != {torch.bfloat16}:
        raise SystemExit(f"repro: expected the projector and the buffer in bfloat16 as DeepSpeed <= 0.19.1 made them, "
                         f"got {sorted(map(str, dtypes))}")
    print(f"repro: ZeRO-3 trained 2 bf16 steps with a projector added after zero.Init (loss {loss.item():.4f})")


def main():
    if os.environ.get("REPRO_INSIDE") == "1":
        return train()
    folder = tempfile.mkdtemp()
    try:  # the script in a repository of its own that pins deepspeed as LLaVA's does
        os.mkdir(os.path.join(folder, ".git"))
        with open(os.path.join(folder, "requirements.txt"), "w") as file:
            file.write("deepspeed==0.9.5\n")
        script = shutil.copy(__file__, folder)
        finished = subprocess.run([sys.executable, script], env={**os.environ, "REPRO_INSIDE": "1"}, timeout=600)
        raise SystemExit(finished.returncode)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
