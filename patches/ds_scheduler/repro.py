"""A SimpleTuner-era trainer: the DeepSpeed config owns the optimizer, so the script holds accelerate's
DummyOptim, and builds its LR schedule the ordinary way.

Without zeropatch:
  AttributeError: 'DummyOptim' object has no attribute 'param_groups'
With `zeropatch run -- python repro.py` the LambdaLR is built on DeepSpeed's optimizer and stepped by it.
"""

import os

import torch


def warmup_then_constant(step, warmup=3):
    return min(1.0, (step + 1) / warmup)


def main():
    if "RANK" not in os.environ:  # `python repro.py`: one local rank; port 0 lets the store pick a free port
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="0")
    from accelerate import Accelerator
    from accelerate.utils import DeepSpeedPlugin, DummyOptim

    config = {
        "train_micro_batch_size_per_gpu": 2,
        "gradient_accumulation_steps": 1,
        "zero_optimization": {"stage": 2},
        "optimizer": {"type": "AdamW", "params": {"lr": 0.1, "torch_adam": True}},
    }
    accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(hf_ds_config=config))
    model = torch.nn.Linear(4, 2)
    optimizer = DummyOptim(model.parameters(), lr=0.1)
    lr_scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_then_constant)
    model, optimizer, lr_scheduler = accelerator.prepare(model, optimizer, lr_scheduler)
    for step in range(4):
        loss = model(torch.randn(2, 4)).pow(2).mean()
        accelerator.backward(loss)
        optimizer.step()
        lr_scheduler.step()
        optimizer.zero_grad()
        print(f"step {step} lr {lr_scheduler.get_last_lr()[0]:.4f}")
    print("repro: LambdaLR on DummyOptim drove DeepSpeed's optimizer")


if __name__ == "__main__":
    main()
