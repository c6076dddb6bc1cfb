"""A Lightning job for tests/test_pytorch_lightning.py: trains to max_steps (resuming from a checkpoint when given),
saves last.ckpt, then calls trainer.test() on a module without test_step. Prints the hooks it saw.

  python pl_resume_job.py FOLDER MAX_STEPS [CHECKPOINT]
"""

import json
import sys

import torch
import pytorch_lightning as pl
from pytorch_lightning.callbacks import ModelCheckpoint
from torch.utils.data import DataLoader, TensorDataset

EVENTS = []


class Tiny(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)

    def training_step(self, batch, batch_idx):
        EVENTS.append(("step", self.current_epoch, self.global_step, batch_idx))
        return self.layer(batch[0]).sum()

    def on_train_epoch_start(self):
        EVENTS.append(("epoch start", self.current_epoch))

    def on_train_epoch_end(self):
        EVENTS.append(("epoch end", self.current_epoch))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main(folder, max_steps, checkpoint=None):
    data = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=2)
    trainer = pl.Trainer(max_steps=int(max_steps), logger=False, enable_progress_bar=False, enable_model_summary=False,
                         accelerator="cpu", callbacks=[ModelCheckpoint(dirpath=folder, save_last=True)],
                         default_root_dir=folder)
    model = Tiny()
    trainer.fit(model, data, ckpt_path=checkpoint)
    print("EVENTS " + json.dumps(EVENTS))
    print("LEGACY TEST", trainer.test(model, data))


if __name__ == "__main__":
    main(*sys.argv[1:])
