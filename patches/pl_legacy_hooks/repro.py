"""A LightningModule and callbacks written for pytorch-lightning 1.x, as latent-diffusion's and taming-transformers'
are: training_epoch_end / validation_epoch_end with the epoch's outputs, a batch hook that takes dataloader_idx
(decorated with rank_zero_only, as ldm's LatentDiffusion.on_train_batch_start), a callback's
on_train_epoch_end(trainer, pl_module, outputs) and on_pretrain_routine_start (ldm's SetupCallback makes the run's
folders there).

Without zeropatch, on pytorch-lightning >= 2.0:
  NotImplementedError: Support for `training_epoch_end` has been removed in v2.0.0. ...
With `zeropatch run -- python repro.py` every hook runs with what 1.9 passed it (checked below).
"""

import sys

import torch
from pytorch_lightning import Callback, LightningModule, Trainer
from pytorch_lightning.utilities.rank_zero import rank_zero_only
from torch.utils.data import DataLoader, TensorDataset

SEEN = []


class Legacy(LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        loss = self.layer(batch[0]).pow(2).mean()
        SEEN.append(("step loss", loss.item()))
        return {"loss": loss, "batch_idx": batch_idx}

    def training_epoch_end(self, outputs):
        SEEN.append(("training_epoch_end", [(output["loss"].item(), output["batch_idx"], output["loss"].requires_grad)
                                            for output in outputs]))
        self.log("train_epoch_metric", float(len(outputs)))

    def validation_step(self, batch, batch_idx):
        return batch_idx * 10

    def validation_epoch_end(self, outputs):
        SEEN.append(("validation_epoch_end", list(outputs)))

    @rank_zero_only
    def on_train_batch_start(self, batch, batch_idx, dataloader_idx):
        SEEN.append(("on_train_batch_start", batch_idx, dataloader_idx))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


class LegacyCallback(Callback):
    def on_pretrain_routine_start(self, trainer, pl_module):
        SEEN.append(("on_pretrain_routine_start", trainer.global_step))

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx):
        SEEN.append(("on_train_batch_end", batch_idx, dataloader_idx))

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx):
        SEEN.append(("on_validation_batch_end", batch_idx, dataloader_idx))

    def on_train_epoch_end(self, trainer, pl_module, outputs):
        SEEN.append(("callback on_train_epoch_end", len(outputs)))


def main():
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(6, 4))
    trainer = Trainer(max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                      enable_model_summary=False, callbacks=[LegacyCallback()], num_sanity_val_steps=0, accelerator="cpu")
    trainer.fit(Legacy(), DataLoader(data, batch_size=2), DataLoader(data, batch_size=3))
    losses = [entry[1] for entry in SEEN if entry[0] == "step loss"]
    expected = [
        ("on_pretrain_routine_start", 0),
        *[entry for batch_idx in range(3) for entry in (("on_train_batch_start", batch_idx, 0),
                                                         ("on_train_batch_end", batch_idx, 0))],
        ("on_validation_batch_end", 0, 0), ("on_validation_batch_end", 1, 0),
        ("validation_epoch_end", [0, 10]),
        ("training_epoch_end", [(loss, batch_idx, False) for batch_idx, loss in enumerate(losses)]),
        ("callback on_train_epoch_end", 3),
    ]
    got = [entry for entry in SEEN if entry[0] != "step loss"]
    if got != expected:
        sys.exit(f"repro: the hooks saw {got}\n  expected {expected}")
    if trainer.callback_metrics.get("train_epoch_metric") != 3.0:
        sys.exit(f"repro: self.log in training_epoch_end gave {trainer.callback_metrics}")
    print("repro: the 1.x hooks ran with 1.x's arguments and outputs")


if __name__ == "__main__":
    main()
