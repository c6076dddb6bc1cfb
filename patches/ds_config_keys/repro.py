"""A 2021-era fine-tuner's ds_config.json on today's DeepSpeed: ZeRO written as DeepSpeed 0.3's ZeRO-3 Offload
tutorial wrote it (offload switched per run with cpu_offload / cpu_offload_params, pinned buffers off), a bf16 block
made from an fp16 one (its loss-scale keys kept), handed to deepspeed.initialize as a file.

Without zeropatch:
  pydantic_core._pydantic_core.ValidationError: 1 validation error for DeepSpeedZeroConfig
  cpu_offload_params
    Extra inputs are not permitted
With `zeropatch run -- python repro.py` the keys mean what they meant (no offload in this run; the bf16 block
without the loss-scale keys it never used) and the model trains in bf16 under ZeRO-2.
"""

import json
import os
import tempfile

import torch

LEGACY = {
    "train_micro_batch_size_per_gpu": 2,
    "gradient_accumulation_steps": 1,
    "bf16": {"enabled": True, "loss_scale": 0, "loss_scale_window": 1000, "initial_scale_power": 16, "hysteresis": 2,
             "min_loss_scale": 1},
    "zero_optimization": {"stage": 2, "cpu_offload": False, "cpu_offload_params": False,
                          "cpu_offload_use_pin_memory": False, "contiguous_gradients": True, "overlap_comm": False},
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}},
}


def main():
    if "RANK" not in os.environ:  # one local rank; port 0 lets the store pick a free port
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
                          MASTER_PORT="0")
    import deepspeed

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "ds_config.json")
        with open(path, "w") as file:
            json.dump(LEGACY, file)
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
        engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=path)
        if not engine.bfloat16_enabled() or engine.zero_optimization_stage() != 2:
            raise SystemExit(f"repro: expected bf16 under ZeRO-2, got bf16={engine.bfloat16_enabled()}, "
                             f"stage {engine.zero_optimization_stage()}")
        if engine.zero_offload_optimizer() or engine.zero_offload_param():
            raise SystemExit("repro: the legacy cpu_offload: false / cpu_offload_params: false turned offload on")
        for _ in range(2):
            loss = engine(torch.randn(2, 8, dtype=torch.bfloat16)).float().square().mean()
            engine.backward(loss)
            engine.step()
        with open(path) as file:
            if json.load(file) != LEGACY:  # the user's file is untouched
                raise SystemExit("repro: the user's ds_config.json was changed")
    print(f"repro: the legacy ds_config trained 2 bf16 steps under ZeRO-2 (loss {loss.item():.4f})")


if __name__ == "__main__":
    main()
