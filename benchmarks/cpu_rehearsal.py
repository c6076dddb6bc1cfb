"""What a CPU rehearsal costs against a plain CPU run of the same training step.

The same step (a DiT-style block: attention, MLP, AdamW, bf16 autocast) run two ways, interleaved in one process:
written for the CPU (``device="cpu"``, ``autocast("cpu")``) without zeropatch, and written for the GPU
(``device="cuda"``, ``.cuda()``, ``autocast("cuda", bfloat16)``, ``torch.cuda.synchronize()``) under the
``cpu_rehearsal`` patch (installed and uninstalled between rounds, outside the timing). Two widths: a tiny model,
where the per-call cost of the device-mapping layer shows most, and a wider one, closer to a real model's step.
Run: python benchmarks/cpu_rehearsal.py [rounds]
"""

import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import interleaved_samples, median_ratio  # noqa: E402

import zeropatch  # noqa: E402

STEPS = 10


class Block(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.attention = torch.nn.MultiheadAttention(width, 4, batch_first=True)
        self.norm = torch.nn.LayerNorm(width)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.GELU(), torch.nn.Linear(4 * width, width))

    def forward(self, x):
        x = x + self.attention(x, x, x, need_weights=False)[0]
        return x + self.mlp(self.norm(x))


def trainer(width, tokens, device):
    """A training loop as the script would write it for ``device`` ("cpu", or "cuda" as the GPU script does)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(Block(width), Block(width))
    model = model.cuda() if device == "cuda" else model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def run():
        for _ in range(STEPS):
            x = torch.randn(4, tokens, width, device=device)
            with torch.autocast(device, dtype=torch.bfloat16):
                loss = model(x).float().pow(2).mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            if device == "cuda":
                torch.cuda.synchronize()

    return run


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, {STEPS} training steps per sample, {rounds} rounds, 1 thread, medians")
    for width, tokens in ((64, 16), (512, 256)):
        zeropatch.install("cpu_rehearsal")
        rehearsed = trainer(width, tokens, "cuda")
        zeropatch.uninstall("cpu_rehearsal")
        candidates = {"plain CPU script": trainer(width, tokens, "cpu"), "GPU script, rehearsed": rehearsed}

        def setup(label):
            (zeropatch.install if label == "GPU script, rehearsed" else zeropatch.uninstall)("cpu_rehearsal")

        samples = interleaved_samples(candidates, rounds, setup=setup)
        zeropatch.uninstall("cpu_rehearsal")
        medians = {label: statistics.median(values) for label, values in samples.items()}
        ratio = median_ratio(samples, "GPU script, rehearsed", "plain CPU script")
        print(f"width {width}, {tokens} tokens: plain CPU {medians['plain CPU script'] / STEPS * 1e3:.2f} ms/step, "
              f"rehearsed {medians['GPU script, rehearsed'] / STEPS * 1e3:.2f} ms/step: {ratio:.2f}x")


if __name__ == "__main__":
    main()
