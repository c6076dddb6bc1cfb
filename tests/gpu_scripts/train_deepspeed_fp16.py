"""A 2023 DeepSpeed trainer (the shape of DeepSpeed-Chat's step-1 and the Megatron-style fine-tuners), written for
GPUs as those are (not copied from them): ``--local_rank`` from the launcher, ``torch.cuda.set_device``,
``deepspeed.init_distributed()`` (nccl), an fp16 ZeRO-2 config of that year with dynamic loss scaling and
``"min_loss_scale": 1e-10`` (no floor), batches made ``.half().cuda()``. It trains two steps, saves a checkpoint,
trains one more, loads the checkpoint and trains that step again: the resumed step must repeat it exactly, and the
loss scaler's floor must be the one written.

Run: ``deepspeed --num_gpus 2 train_deepspeed_fp16.py OUTPUT_DIR`` (or torchrun, which sets LOCAL_RANK).
"""

import argparse
import os

import deepspeed
import torch
import torch.nn as nn

CONFIG = {
    "train_micro_batch_size_per_gpu": 4,
    "gradient_accumulation_steps": 1,
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.0,
                                        "torch_adam": True}},  # (no op to build: the suite builds none at run time)
    "fp16": {"enabled": True, "loss_scale": 0, "loss_scale_window": 100, "initial_scale_power": 12, "hysteresis": 2,
             "min_loss_scale": 1e-10},
    "zero_optimization": {"stage": 2, "overlap_comm": False, "contiguous_gradients": True,
                          "reduce_bucket_size": 5e5, "allgather_bucket_size": 5e5},
    "gradient_clipping": 1.0,
    "steps_per_print": 100,
}


def step(engine, batch):
    x, y = (tensor.half().cuda() for tensor in batch)
    loss = (engine(x) - y).float().pow(2).mean()
    engine.backward(loss)
    engine.step()
    return loss.item()


def fingerprint(engine):
    total = sum(parameter.detach().double().sum() for parameter in engine.module.parameters()).reshape(1).cuda()
    gathered = [torch.zeros_like(total) for _ in range(torch.distributed.get_world_size())]
    torch.distributed.all_gather(gathered, total)
    return torch.cat(gathered)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("output")
    parser.add_argument("--local_rank", type=int, default=int(os.environ.get("LOCAL_RANK", -1)))
    args = parser.parse_args()
    torch.cuda.set_device(args.local_rank)
    deepspeed.init_distributed()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16))
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=CONFIG)
    floor = engine.optimizer.loss_scaler.min_scale
    assert floor == 1e-10, f"the loss scaler's floor is {floor!r}, not the config's 1e-10"
    generator = torch.Generator().manual_seed(1 + torch.distributed.get_rank())
    batches = [(torch.randn(4, 16, generator=generator), torch.randn(4, 16, generator=generator)) for _ in range(3)]
    for batch in batches[:2]:
        step(engine, batch)
    engine.save_checkpoint(args.output, tag="step2")
    continued = step(engine, batches[2])
    after = fingerprint(engine)
    engine.load_checkpoint(args.output, tag="step2")
    resumed = step(engine, batches[2])
    again = fingerprint(engine)
    assert resumed == continued and torch.equal(after, again), (continued, resumed, after, again)
    assert torch.equal(again, again[:1].expand_as(again)), again  # every rank holds the same weights
    if torch.distributed.get_rank() == 0:
        print(f"resumed fp16 ZeRO-2 on {torch.distributed.get_world_size()} ranks: loss {resumed:.4f}, "
              f"loss scale {engine.optimizer.loss_scaler.cur_scale}, floor {floor}", flush=True)


if __name__ == "__main__":
    main()
