"""DiT's checkpoint round trip (facebookresearch/DiT train.py + download.py:find_model; Open-Sora 1.x inherits it):
train.py saves the model, the EMA, the optimizer and ``"args": args`` (an argparse.Namespace); a resume adds numpy's
RNG state and a numpy scalar. ``find_model`` reads it back with a plain ``torch.load``.

Without zeropatch, on torch >= 2.6:
  _pickle.UnpicklingError: Weights only load failed. ... Unsupported global: GLOBAL argparse.Namespace was not an
  allowed global by default.
With `zeropatch run -- python repro.py` it loads (weights_only stays on), and every value is what was saved.
"""

import argparse
import os
import sys
import tempfile

import numpy as np
import torch


def find_model(path):  # DiT download.py, for a local checkpoint
    checkpoint = torch.load(path, map_location=lambda storage, loc: storage)
    return checkpoint["ema"] if "ema" in checkpoint else checkpoint


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="DiT-XL/2")
    parser.add_argument("--global-batch-size", type=int, default=256)
    args = parser.parse_args([])
    model = torch.nn.Linear(4, 4)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model(torch.randn(2, 4)).sum().backward()
    optimizer.step()
    np.random.seed(7)
    saved = {"model": model.state_dict(), "ema": model.state_dict(), "opt": optimizer.state_dict(), "args": args,
             "numpy_rng": np.random.get_state(), "best_loss": np.float64(0.125), "train_steps": np.int64(4000)}
    path = os.path.join(tempfile.mkdtemp(prefix="zeropatch-repro-"), "0004000.pt")
    torch.save(saved, path)

    ema = find_model(path)  # sampling: what DiT's sample.py does
    loaded = torch.load(path)  # resume: the whole checkpoint
    if not all(torch.equal(ema[key], model.state_dict()[key]) for key in ema):
        sys.exit("repro: EMA weights differ")
    if loaded["args"] != args or loaded["best_loss"] != 0.125 or loaded["train_steps"] != 4000:
        sys.exit(f"repro: values differ: {loaded['args']}, {loaded['best_loss']}, {loaded['train_steps']}")
    state = loaded["numpy_rng"]
    if state[0] != "MT19937" or not np.array_equal(state[1], np.random.get_state()[1]):
        sys.exit("repro: numpy RNG state differs")
    print(f"repro: DiT checkpoint with args, numpy RNG state and scalars loaded, weights_only on (torch {torch.__version__})")


if __name__ == "__main__":
    main()
