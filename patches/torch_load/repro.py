"""DiT's checkpoint round trip (facebookresearch/DiT train.py + download.py:find_model; Open-Sora 1.x inherits it):
train.py saves the model, the EMA, the optimizer and ``"args": args`` (an argparse.Namespace); a resume adds numpy's
RNG state and a numpy scalar. ``find_model`` reads it back with a plain ``torch.load``.

Without zeropatch, on torch >= 2.6:
  _pickle.UnpicklingError: Weights only load failed. ... Unsupported global: GLOBAL argparse.Namespace was not an
  allowed global by default.
With `zeropatch run -- python repro.py` it loads (weights_only stays on), and every value is what was saved.

Then a YOLO-style checkpoint (ultralytics/yolov5 train.py: ``{"model": deepcopy(de_parallel(model)).half(), ...}``),
which holds the model object itself, read back as val.py / strip_optimizer read it; on torch >= 2.6 it fails with
"Unsupported global: GLOBAL __main__.Detector" (``models.yolo.DetectionModel`` in YOLOv5), and loads under zeropatch.
"""

import argparse
import copy
import os
import sys
import tempfile

import numpy as np
import torch


def find_model(path):  # DiT download.py, for a local checkpoint
    checkpoint = torch.load(path, map_location=lambda storage, loc: storage)
    return checkpoint["ema"] if "ema" in checkpoint else checkpoint


class Detector(torch.nn.Module):  # the repository's own model class, saved whole
    def __init__(self):
        super().__init__()
        self.backbone = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.SiLU())
        self.head = torch.nn.Linear(8, 5)
        self.names = ["person", "car"]

    def forward(self, images):
        return self.head(self.backbone(images).mean((2, 3)))


def whole_model_round_trip(folder):
    model = Detector().eval()
    path = os.path.join(folder, "last.pt")
    torch.save({"epoch": 3, "model": copy.deepcopy(model).half(), "optimizer": None}, path)
    loaded = torch.load(path, map_location="cpu")["model"].float()  # val.py / strip_optimizer
    expected = {key: value.half().float() for key, value in model.state_dict().items()}
    if type(loaded) is not Detector or loaded.names != model.names or loaded.state_dict().keys() != expected.keys():
        sys.exit(f"repro: the whole model differs: {type(loaded)}")
    if not all(torch.equal(loaded.state_dict()[key], value) for key, value in expected.items()):
        sys.exit("repro: the whole model's weights differ")
    loaded(torch.randn(1, 3, 8, 8))


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
    whole_model_round_trip(os.path.dirname(path))
    print(f"repro: DiT checkpoint with args, numpy RNG state and scalars loaded, and a whole model, weights_only on "
          f"(torch {torch.__version__})")


if __name__ == "__main__":
    main()
