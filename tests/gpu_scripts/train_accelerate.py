"""A 2023 accelerate fine-tuner (SimpleTuner v0.9 / PixArt-alpha style), written for GPUs as those are (not copied
from them): the GPU assertion, ``Accelerator()`` configured by the launcher (DeepSpeed ZeRO-2 under ``accelerate
launch --use_deepspeed``, DDP otherwise), batches pinned by hand and moved with ``.to(accelerator.device)``, a caption
drop mask made with ``torch.rand(B).cuda()``, ``model.module`` after ``prepare``, ``accelerator.gather`` of the
loss, ``save_state`` / ``load_state``. It trains two steps, saves, trains one more, loads and trains it again: the
resumed step must repeat it exactly.

Run: ``accelerate launch --num_processes 2 [--use_deepspeed --zero_stage 2] train_accelerate.py OUTPUT_DIR``
(or torchrun with accelerate's ACCELERATE_USE_DEEPSPEED / ACCELERATE_DEEPSPEED_ZERO_STAGE variables).
"""

import sys

import torch
import torch.nn as nn
from accelerate import Accelerator
from accelerate.utils import set_seed


class Captioned(nn.Module):
    def __init__(self):
        super().__init__()
        self.caption = nn.Linear(6, 16)
        self.null_caption = nn.Parameter(torch.zeros(16))
        self.body = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16))

    def forward(self, x, caption):
        embedded = self.caption(caption)
        drop = (torch.rand(x.shape[0]).cuda() < 0.1).unsqueeze(1)
        return self.body(x + torch.where(drop, self.null_caption, embedded))


def step(accelerator, model, optimizer, scheduler, batch):
    x, caption = (tensor.pin_memory().to(accelerator.device, non_blocking=True) for tensor in batch)
    loss = (model(x, caption) - x).pow(2).mean()
    accelerator.backward(loss)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad()
    losses = accelerator.gather(loss.detach().repeat(x.shape[0]))
    assert losses.numel() == x.shape[0] * accelerator.num_processes, (losses.shape, accelerator.num_processes)
    return losses.mean().item()


def fingerprint(accelerator, model):
    total = sum(parameter.detach().double().sum() for parameter in model.module.parameters())
    return accelerator.gather(total.reshape(1).to(accelerator.device))


def main():
    assert torch.cuda.is_available(), "Training currently requires at least one GPU."
    output = sys.argv[1]
    accelerator = Accelerator()
    set_seed(0)
    model = Captioned()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / 4))
    generator = torch.Generator().manual_seed(1)
    data = torch.utils.data.TensorDataset(torch.randn(32, 16, generator=generator), torch.randn(32, 6, generator=generator))
    loader = torch.utils.data.DataLoader(data, batch_size=4, shuffle=False)
    model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)
    batches = iter(loader)
    for _ in range(2):
        step(accelerator, model, optimizer, scheduler, next(batches))
    accelerator.save_state(output)
    batch = next(batches)
    torch.manual_seed(7)
    continued = step(accelerator, model, optimizer, scheduler, batch)
    after = fingerprint(accelerator, model)
    accelerator.load_state(output)
    torch.manual_seed(7)
    resumed = step(accelerator, model, optimizer, scheduler, batch)
    again = fingerprint(accelerator, model)
    assert resumed == continued and torch.equal(after, again), (continued, resumed, after, again)
    assert torch.equal(again, again[:1].expand_as(again)), again  # every rank holds the same weights
    accelerator.print(f"resumed on {accelerator.num_processes} ranks ({accelerator.distributed_type}): loss {resumed:.4f}")
    accelerator.end_training()


if __name__ == "__main__":
    main()
