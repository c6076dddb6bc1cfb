"""latent-diffusion's and taming-transformers' main.py way of building a Trainer (pytorch-lightning 1.x): its whole
command line from Trainer.add_argparse_args, the Trainer from Trainer.from_argparse_args with gpus / resume, and
trainer.root_gpu in a callback; then a resume with 1.x's resume_from_checkpoint.

Without zeropatch, on pytorch-lightning >= 2.0:
  AttributeError: type object 'Trainer' has no attribute 'add_argparse_args'
With `zeropatch run -- python repro.py` it trains 4 steps on the CPU (no --gpus: 1.x's default), resumes to 6.
"""

import argparse
import os
import sys
import tempfile

import torch
from pytorch_lightning import Callback, LightningModule
from pytorch_lightning.trainer import Trainer
from torch.utils.data import DataLoader, TensorDataset


class Tiny(LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        return self.layer(batch[0]).pow(2).mean()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


class ReadsRootGpu(Callback):
    """As latent-diffusion's CUDACallback: trainer.root_gpu (None off the GPU)."""

    def on_train_start(self, trainer, pl_module):
        self.root_gpu = trainer.root_gpu


def nondefault_trainer_args(opt):  # latent-diffusion main.py's own helper
    parser = argparse.ArgumentParser()
    parser = Trainer.add_argparse_args(parser)
    args = parser.parse_args([])
    return sorted(k for k in vars(args) if getattr(opt, k) != getattr(args, k))


def main():
    folder = tempfile.mkdtemp(prefix="zeropatch-pl-trainer-args-")
    parser = argparse.ArgumentParser()
    parser.add_argument("-t", "--train", action="store_true")
    parser = Trainer.add_argparse_args(parser)
    opt, unknown = parser.parse_known_args(["-t", "--max_steps", "4", "--weights_summary", "top", "--benchmark"])
    changed = nondefault_trainer_args(opt)
    if changed != ["benchmark", "max_steps"]:
        sys.exit(f"repro: the non-default trainer arguments are {changed}")
    data = DataLoader(TensorDataset(torch.randn(8, 4)), batch_size=2)
    callback = ReadsRootGpu()
    trainer_opt = argparse.Namespace(**{name: getattr(opt, name) for name in vars(opt) if name != "train"})
    trainer = Trainer.from_argparse_args(trainer_opt, callbacks=[callback], logger=False, default_root_dir=folder,
                                         enable_progress_bar=False)
    trainer.fit(Tiny(), data)
    if trainer.global_step != 4 or callback.root_gpu is not None or trainer.num_devices != 1:
        sys.exit(f"repro: trained to step {trainer.global_step} on {trainer.num_devices} device(s), root_gpu "
                 f"{callback.root_gpu}")
    checkpoint = os.path.join(folder, "last.ckpt")
    trainer.save_checkpoint(checkpoint)
    resumed = Trainer(max_steps=6, resume_from_checkpoint=checkpoint, gpus=None, logger=False, default_root_dir=folder,
                      enable_progress_bar=False, checkpoint_callback=False)
    resumed.fit(Tiny(), data)
    if resumed.global_step != 6:
        sys.exit(f"repro: the resumed run ended at step {resumed.global_step}")
    print(f"repro: the 1.x-built Trainer trained 4 steps on the CPU (root_gpu {callback.root_gpu}) and resumed to 6")


if __name__ == "__main__":
    main()
