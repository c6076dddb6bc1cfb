"""A whole DiT training step, zeropatch off / on / one patch at a time: the loop of facebookresearch/DiT's train.py
(written anew, small): an ImageFolder of PNG files read by a DataLoader with 4 workers (a DistributedSampler,
pin_memory and drop_last as DiT sets them), a frozen VAE-like encoder under no_grad, a small DiT (patch embedding,
adaLN-Zero blocks, learned sigma) in DDP, the diffusion loss (noise MSE plus the variational bound term), AdamW, DiT's
own per-parameter ``update_ema`` loop, ``loss.item()`` each step, and a checkpoint saved at the end (model, EMA,
optimizer, the argparse Namespace) and read back with a plain ``torch.load``. Epochs are a few steps long (as with a
small folder of images), so the DataLoader's workers are started again every ``--epoch-steps`` steps: their start-up
and shut-down are inside the timed steps, as they are in DiT's Train Steps/Sec.

Each case is a real process tree, started plainly, under `zeropatch run --` (the default set), with --hook by the
start-up hook alone (ZEROPATCH=1: no launcher, no job records) and under `zeropatch run --patches NAME --`, through torchrun (one rank, gloo; nccl with --device cuda) or plain python; the
cases run interleaved, round after round. Printed: steps/sec per case (median of rounds), the median of each round's
time ratio to the plain run (>1: slower than plain), the same ratio for CPU seconds (the training process and its
DataLoader workers, user + system: what zeropatch would add anywhere in them, and steadier than wall time on a busy
machine), and where the time went: a step's own time (batch in hand to ``loss.item()``), an epoch's start (workers
started until the first batch) and end (the workers' shut-down), the training process's garbage collections in the
timed steps, its tracked objects, modules and torch threads. --start-method spawn / forkserver (Python 3.14's default
on Linux) starts each epoch's workers as new interpreters, in which zeropatch is active too (forkserver's workers are
the server's children: their CPU time is not counted).

Run: python benchmarks/train_step.py [--rounds 3] [--steps 24] [--epoch-steps 2] [--launcher torchrun|python] [--hook]
                                    [--patches torch_load,gloo_exit] [--device cpu|cuda] [--hidden 128 --depth 4]
                                    [--threads N] [--start-method fork|spawn|forkserver] [--image-size 64]
Target: default set <= 1.005x the plain step time on a GPU; no difference on the CPU either.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _timing import median_ratio  # noqa: E402

RESULT = "TRAIN_STEP_RESULT "  # the line a training process prints its figures on


# ---------------------------------------------------------------------------------------------- the training process

def center_crop(image, size):
    """ADM's centre crop, as DiT's transform does it (at module level: spawned DataLoader workers unpickle it)."""
    import numpy as np
    from PIL import Image

    while min(*image.size) >= 2 * size:
        image = image.resize(tuple(x // 2 for x in image.size), resample=Image.BOX)
    scale = size / min(*image.size)
    image = image.resize(tuple(round(x * scale) for x in image.size), resample=Image.BICUBIC)
    array = np.array(image)
    top, left = (array.shape[0] - size) // 2, (array.shape[1] - size) // 2
    return Image.fromarray(array[top:top + size, left:left + size])


def training(args):
    """One DiT-style training run (rank 0 of one); prints its figures on a RESULT line."""
    import functools
    import gc
    import math
    import resource
    from collections import OrderedDict
    from copy import deepcopy

    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import DataLoader
    from torch.utils.data.distributed import DistributedSampler
    from torchvision import transforms
    from torchvision.datasets import ImageFolder
    started = time.perf_counter()

    @torch.no_grad()
    def update_ema(ema_model, model, decay=0.9999):  # DiT's loop, parameter by parameter over fresh OrderedDicts
        ema_params = OrderedDict(ema_model.named_parameters())
        for name, param in OrderedDict(model.named_parameters()).items():
            ema_params[name].mul_(decay).add_(param.data, alpha=1 - decay)

    class Encoder(torch.nn.Module):  # the frozen VAE's role: image -> a latent 8x smaller, sampled
        def __init__(self):
            super().__init__()
            self.convs = torch.nn.Sequential(
                torch.nn.Conv2d(3, 32, 3, 2, 1), torch.nn.SiLU(), torch.nn.Conv2d(32, 64, 3, 2, 1), torch.nn.SiLU(),
                torch.nn.Conv2d(64, 64, 3, 2, 1), torch.nn.SiLU(), torch.nn.Conv2d(64, 8, 3, 1, 1))

        def encode(self, x):
            mean, logvar = self.convs(x).chunk(2, dim=1)
            return mean + torch.randn_like(mean) * torch.exp(0.5 * logvar.clamp(-30, 20))

    def modulate(x, shift, scale):
        return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)

    class Block(torch.nn.Module):
        def __init__(self, hidden, heads):
            super().__init__()
            self.heads = heads
            self.norm1 = torch.nn.LayerNorm(hidden, elementwise_affine=False, eps=1e-6)
            self.qkv = torch.nn.Linear(hidden, 3 * hidden)
            self.proj = torch.nn.Linear(hidden, hidden)
            self.norm2 = torch.nn.LayerNorm(hidden, elementwise_affine=False, eps=1e-6)
            self.mlp = torch.nn.Sequential(torch.nn.Linear(hidden, 4 * hidden), torch.nn.GELU(approximate="tanh"),
                                           torch.nn.Linear(4 * hidden, hidden))
            self.ada = torch.nn.Sequential(torch.nn.SiLU(), torch.nn.Linear(hidden, 6 * hidden))

        def forward(self, x, c):
            shift1, scale1, gate1, shift2, scale2, gate2 = self.ada(c).chunk(6, dim=1)
            batch, tokens, hidden = x.shape
            q, k, v = self.qkv(modulate(self.norm1(x), shift1, scale1)).reshape(
                batch, tokens, 3, self.heads, hidden // self.heads).permute(2, 0, 3, 1, 4)
            attended = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(batch, tokens, hidden)
            x = x + gate1.unsqueeze(1) * self.proj(attended)
            return x + gate2.unsqueeze(1) * self.mlp(modulate(self.norm2(x), shift2, scale2))

    class DiT(torch.nn.Module):
        def __init__(self, latent, channels, hidden, depth, heads, classes, patch=2):
            super().__init__()
            self.patch, self.channels = patch, channels
            self.embed = torch.nn.Conv2d(channels, hidden, patch, patch)
            self.pos = torch.nn.Parameter(torch.randn(1, (latent // patch) ** 2, hidden) * 0.02, requires_grad=False)
            self.t_mlp = torch.nn.Sequential(torch.nn.Linear(256, hidden), torch.nn.SiLU(),
                                             torch.nn.Linear(hidden, hidden))
            self.labels = torch.nn.Embedding(classes + 1, hidden)  # the last one: the dropped label (guidance)
            self.classes = classes
            self.blocks = torch.nn.ModuleList(Block(hidden, heads) for _ in range(depth))
            self.final_ada = torch.nn.Sequential(torch.nn.SiLU(), torch.nn.Linear(hidden, 2 * hidden))
            self.final_norm = torch.nn.LayerNorm(hidden, elementwise_affine=False, eps=1e-6)
            self.final = torch.nn.Linear(hidden, patch * patch * 2 * channels)  # learned sigma: twice the channels
            for module in [self.final, self.final_ada[1]] + [block.ada[1] for block in self.blocks]:
                torch.nn.init.zeros_(module.weight)
                torch.nn.init.zeros_(module.bias)

        def forward(self, x, t, y):
            batch, _, height, width = x.shape
            half = 128
            frequencies = torch.exp(-math.log(10000) * torch.arange(half, device=x.device) / half)
            angles = t[:, None].float() * frequencies[None]
            c = self.t_mlp(torch.cat([torch.cos(angles), torch.sin(angles)], dim=-1))
            if self.training:  # class dropout for classifier-free guidance
                y = torch.where(torch.rand(batch, device=x.device) < 0.1, torch.full_like(y, self.classes), y)
            c = c + self.labels(y)
            h = self.embed(x).flatten(2).transpose(1, 2) + self.pos
            for block in self.blocks:
                h = block(h, c)
            shift, scale = self.final_ada(c).chunk(2, dim=1)
            h = self.final(modulate(self.final_norm(h), shift, scale))
            side, p, out = height // self.patch, self.patch, 2 * self.channels
            return h.reshape(batch, side, side, p, p, out).permute(0, 5, 1, 3, 2, 4).reshape(batch, out, height, width)

    class Diffusion:  # 1000 steps, linear betas, learned range of variances: MSE on the noise plus the VB term
        def __init__(self, steps=1000):
            betas = torch.linspace(1e-4, 0.02, steps, dtype=torch.float64)
            alphas_cumprod = torch.cumprod(1 - betas, 0)
            previous = torch.cat([torch.ones(1, dtype=torch.float64), alphas_cumprod[:-1]])
            self.num_timesteps = steps
            self.sqrt_ac, self.sqrt_1mac = alphas_cumprod.sqrt(), (1 - alphas_cumprod).sqrt()
            self.posterior_variance = betas * (1 - previous) / (1 - alphas_cumprod)
            self.log_post_var = torch.log(torch.cat([self.posterior_variance[1:2], self.posterior_variance[1:]]))
            self.log_betas = torch.log(betas)
            self.coef1 = betas * previous.sqrt() / (1 - alphas_cumprod)
            self.coef2 = (1 - previous) * (1 - betas).sqrt() / (1 - alphas_cumprod)

        @staticmethod
        def at(table, t, like):
            return table.to(like.device)[t].float().view(-1, *([1] * (like.dim() - 1)))

        def training_losses(self, model, x0, t, model_kwargs):
            noise = torch.randn_like(x0)
            xt = self.at(self.sqrt_ac, t, x0) * x0 + self.at(self.sqrt_1mac, t, x0) * noise
            eps, var_values = model(xt, t, **model_kwargs).chunk(2, dim=1)
            true_mean = self.at(self.coef1, t, x0) * x0 + self.at(self.coef2, t, x0) * xt
            true_logvar = self.at(self.log_post_var, t, x0)
            fraction = (var_values + 1) / 2
            model_logvar = fraction * self.at(self.log_betas, t, x0) + (1 - fraction) * true_logvar
            x0_pred = (xt - self.at(self.sqrt_1mac, t, x0) * eps.detach()) / self.at(self.sqrt_ac, t, x0)
            model_mean = self.at(self.coef1, t, x0) * x0_pred + self.at(self.coef2, t, x0) * xt
            kl = 0.5 * (-1 + model_logvar - true_logvar + torch.exp(true_logvar - model_logvar)
                        + (true_mean - model_mean) ** 2 * torch.exp(-model_logvar))
            vb = kl.mean(dim=(1, 2, 3)) / math.log(2.0)
            return {"loss": ((noise - eps) ** 2).mean(dim=(1, 2, 3)) + vb}

    cuda = args.device == "cuda"
    if args.threads:
        torch.set_num_threads(args.threads)
    init = os.environ.get("ZP_TRAIN_STEP_INIT")  # --launcher python: a file rendezvous, no port; else torchrun's env://
    dist.init_process_group("nccl" if cuda else "gloo", **({"init_method": init, "rank": 0, "world_size": 1}
                                                          if init else {}))
    rank = dist.get_rank()
    torch.manual_seed(args.seed * dist.get_world_size() + rank)
    device = torch.device("cuda", rank % torch.cuda.device_count()) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)

    latent = args.image_size // 8
    model = DiT(latent, 4, args.hidden, args.depth, args.heads, args.classes)
    ema = deepcopy(model).to(device).requires_grad_(False)
    model = DistributedDataParallel(model.to(device), device_ids=[device.index] if cuda else None)
    vae = Encoder().to(device).requires_grad_(False)
    diffusion = Diffusion()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0)
    transform = transforms.Compose([
        transforms.Lambda(functools.partial(center_crop, size=args.image_size)),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(mean=[0.5, 0.5, 0.5], std=[0.5, 0.5, 0.5], inplace=True),
    ])
    dataset = ImageFolder(args.data, transform=transform)
    sampler = DistributedSampler(dataset, num_replicas=dist.get_world_size(), rank=rank, shuffle=True, seed=args.seed)
    loader = DataLoader(dataset, batch_size=args.batch // dist.get_world_size(), shuffle=False, sampler=sampler,
                        num_workers=args.workers, pin_memory=True, drop_last=True,
                        multiprocessing_context=args.start_method)  # None (DiT): the platform's default
    update_ema(ema, model.module, decay=0)
    model.train()
    ema.eval()

    def cpu_seconds():  # this process's and its finished workers' (each epoch's are joined at its end)
        own, workers = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + workers.ru_utime + workers.ru_stime

    def synchronize():
        if cuda:
            torch.cuda.synchronize()

    total = args.warmup_steps + args.steps
    steps, losses, epoch_starts, epoch_ends, computes = 0, 0.0, [], [], []
    collecting = {}  # the training process's own garbage collections, timed (a full one walks every object)

    def on_collection(phase, info):
        if phase == "start":
            collecting["since"] = time.perf_counter()
        elif timed_from is not None:
            collecting[info["generation"]] = collecting.get(info["generation"], 0) + 1
            collecting["seconds"] = collecting.get("seconds", 0.0) + time.perf_counter() - collecting["since"]

    gc.callbacks.append(on_collection)
    setup_seconds = time.perf_counter() - started
    timed_from, cpu_from = (time.perf_counter(), cpu_seconds()) if args.warmup_steps == 0 else (None, None)
    epoch = 0
    while steps < total:
        sampler.set_epoch(epoch)
        epoch += 1
        opened = time.perf_counter()
        batches = iter(loader)  # starts the workers (persistent_workers off, as in DiT)
        first = True
        while True:
            before = time.perf_counter()
            try:
                x, y = next(batches)
            except StopIteration:  # the iterator shuts its workers down before it says so
                epoch_ends.append(time.perf_counter() - before)
                break
            if first:
                epoch_starts.append(time.perf_counter() - opened)
                first = False
            computing = time.perf_counter()
            x, y = x.to(device), y.to(device)
            with torch.no_grad():
                x = vae.encode(x).mul_(0.18215)
            t = torch.randint(0, diffusion.num_timesteps, (x.shape[0],), device=device)
            loss = diffusion.training_losses(model, x, t, dict(y=y))["loss"].mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            update_ema(ema, model.module)
            losses += loss.item()
            steps += 1
            if timed_from is not None:
                computes.append(time.perf_counter() - computing)
            if steps == args.warmup_steps:
                synchronize()
                timed_from, cpu_from = time.perf_counter(), cpu_seconds()
            if steps == total:
                break
        del batches  # a partial last epoch: its workers stop here, as a loop's break would stop them
    synchronize()
    seconds, cpu = time.perf_counter() - timed_from, cpu_seconds() - cpu_from
    gc.callbacks.remove(on_collection)
    if rank == 0:
        path = os.path.join(args.out, "checkpoint.pt")
        torch.save({"model": model.module.state_dict(), "ema": ema.state_dict(), "opt": opt.state_dict(),
                    "args": args}, path)
        try:  # a plain torch.load, as DiT's sampling scripts read one (refused on torch >= 2.6 without zeropatch)
            loaded = "yes" if "ema" in torch.load(path, map_location="cpu") else "no"
        except Exception as error:
            loaded = type(error).__name__
        print(RESULT + json.dumps({"steps_per_sec": args.steps / seconds, "setup_s": setup_seconds,
                                   "epoch_start_s": statistics.median(epoch_starts),
                                   "epoch_end_s": statistics.median(epoch_ends) if epoch_ends else 0.0,
                                   "cpu_s": cpu / args.steps, "compute_s": statistics.median(computes),
                                   "gc_s": collecting.get("seconds", 0.0),
                                   "full_collections": collecting.get(2, 0), "gc_objects": len(gc.get_objects()),
                                   "modules": len(sys.modules), "threads": torch.get_num_threads(),
                                   "mean_loss": losses / steps, "checkpoint_loaded": loaded,
                                   "zeropatch": "zeropatch" in sys.modules}), flush=True)
    dist.barrier()
    dist.destroy_process_group()


# --------------------------------------------------------------------------------------------------- the comparison

def write_images(folder, classes, per_class, size):
    """An ImageFolder tree of random PNG images, a little larger than the crop (DiT's transform resizes them)."""
    import numpy as np
    from PIL import Image

    generator = np.random.default_rng(0)
    for label in range(classes):
        os.makedirs(os.path.join(folder, f"class{label}"), exist_ok=True)
        for index in range(per_class):
            pixels = generator.integers(0, 256, (size + size // 4, size + size // 3, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(os.path.join(folder, f"class{label}", f"{index}.png"))


def command_for(args, case, data, out):
    script = [os.path.abspath(__file__), "--train", "--data", data, "--out", out] + [
        f"--{name.replace('_', '-')}={getattr(args, name)}" for name in
        ("device", "image_size", "classes", "batch", "hidden", "depth", "heads", "workers", "steps", "warmup_steps",
         "seed", "threads")] + ([f"--start-method={args.start_method}"] if args.start_method else [])
    if args.launcher == "torchrun":
        launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "1"] + script
    else:  # one plain process; the group's rendezvous is a file, so no port is needed
        launch = [sys.executable] + script
    if case in ("plain", "hook"):  # hook: ZEROPATCH=1 through the bootstrap (run_case), no launcher, no job records
        return launch
    patches = [] if case == "zeropatch" else ["--patches", case.split(":", 1)[1]]
    return [sys.executable, "-m", "zeropatch", "run"] + patches + ["--"] + launch


def run_case(args, case, data, timeout):
    environment = {name: value for name, value in os.environ.items() if not name.startswith("ZEROPATCH")}
    with tempfile.TemporaryDirectory(prefix="zeropatch-train-step-") as out:
        if args.launcher == "python":
            environment["ZP_TRAIN_STEP_INIT"] = "file://" + os.path.join(out, "rendezvous")
        if case == "hook":
            from zeropatch import _job

            environment = _job.run_environment(environment, "1")
        try:
            done = subprocess.run(command_for(args, case, data, out), env=environment, cwd=out, timeout=timeout,
                                  capture_output=True, text=True)
        except subprocess.TimeoutExpired:
            sys.exit(f"{case}: no result within {timeout} s")
    lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT)]
    if done.returncode != 0 or not lines:
        sys.exit(f"{case}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return json.loads(lines[-1][len(RESULT):])


def compare(args):
    try:
        import PIL  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError as missing:
        sys.exit(f"train_step.py reads its images as DiT does, with torchvision and Pillow: {missing}")
    cases = ["plain", "zeropatch"] + (["hook"] if args.hook else []) + [
        f"patch:{name}" for name in args.patches.split(",") if name]
    with tempfile.TemporaryDirectory(prefix="zeropatch-train-step-data-") as data:
        per_class = max(1, args.epoch_steps * args.batch // args.classes)
        write_images(data, args.classes, per_class, args.image_size)
        results = {case: [] for case in cases}
        for round_index in range(args.warmup_rounds + args.rounds):
            for case in cases:
                result = run_case(args, case, data, args.timeout)
                if round_index >= args.warmup_rounds:
                    results[case].append(result)
                print(f"round {round_index + 1 - args.warmup_rounds:>2} {case:<22} {result['steps_per_sec']:7.3f} "
                      f"steps/s, step {result['compute_s'] * 1e3:6.1f} ms, epoch start "
                      f"{result['epoch_start_s'] * 1e3:6.1f} ms, end {result['epoch_end_s'] * 1e3:6.1f} ms, "
                      f"checkpoint read back: {result['checkpoint_loaded']}", flush=True)
    print(f"\n{args.launcher}, {args.device}, {args.steps} timed steps, epochs of {args.epoch_steps} steps, "
          f"{args.workers} workers{', ' + args.start_method if args.start_method else ''}, {args.rounds} rounds "
          f"(python {sys.version.split()[0]}); medians of the rounds; x plain: the median of each round's ratio of "
          f"seconds per step to the plain run's; cpu x: the same for CPU seconds per step (the training process and "
          f"its DataLoader workers: steadier than wall time on a busy machine)")
    seconds = {case: [1 / result["steps_per_sec"] for result in results[case]] for case in cases}
    cpu = {case: [result["cpu_s"] for result in results[case]] for case in cases}
    columns = (("cpu ms", "cpu_s", 1e3), ("step ms", "compute_s", 1e3), ("start ms", "epoch_start_s", 1e3),
               ("end ms", "epoch_end_s", 1e3), ("gc ms", "gc_s", 1e3), ("full gc", "full_collections", 1),
               ("objects", "gc_objects", 1), ("modules", "modules", 1), ("threads", "threads", 1))
    print(f"{'case':<22} {'steps/s':>8} {'x plain':>8} {'cpu x':>6} "
          + " ".join(f"{title:>9}" for title, _, _ in columns))
    for case in cases:
        print(f"{case:<22} {statistics.median(r['steps_per_sec'] for r in results[case]):8.3f} "
              f"{median_ratio(seconds, case, 'plain'):8.3f} {median_ratio(cpu, case, 'plain'):6.3f} " + " ".join(
                  f"{statistics.median(r[key] for r in results[case]) * scale:9.1f}" for _, key, scale in columns))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup-rounds", type=int, default=1, help="rounds run first and not counted")
    parser.add_argument("--launcher", choices=["torchrun", "python"], default="torchrun")
    parser.add_argument("--patches", default="torch_load,gloo_exit", help="comma list: each also run alone")
    parser.add_argument("--hook", action="store_true", help="also a case activated by the start-up hook alone "
                        "(ZEROPATCH=1, no `zeropatch run`: no launcher, no job records)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--steps", type=int, default=24, help="timed steps per run")
    parser.add_argument("--warmup-steps", type=int, default=2)
    parser.add_argument("--epoch-steps", type=int, default=2, help="steps per epoch (the folder's size)")
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--classes", type=int, default=2)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=0, help="torch threads of the training process (0: torch's)")
    parser.add_argument("--start-method", choices=["fork", "spawn", "forkserver"],
                        help="the DataLoader workers' (default: the platform's, as in DiT)")
    parser.add_argument("--timeout", type=int, default=300, help="seconds one run may take")
    parser.add_argument("--train", action="store_true", help=argparse.SUPPRESS)  # the training process itself
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.train:
        training(args)
    else:
        compare(args)


if __name__ == "__main__":
    main()
