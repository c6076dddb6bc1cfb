"""Two optimizers the pytorch-lightning 1.x way (argv: the frequencies as JSON, or null), with what 1.x code also
used: "frequency" in the optimizer dicts, step-interval schedulers, optimizer_step overridden with 1.x's signature,
gradient clipping. Prints what the hooks saw as JSON: the expectations in tests/test_pl_multiple_optimizers.py are
what this job printed on pytorch-lightning 1.9.5 and 1.5.10 themselves."""

import json
import sys

import torch
from pytorch_lightning import LightningModule, Trainer
from torch.utils.data import DataLoader, TensorDataset


class GAN(LightningModule):
    def __init__(self, frequencies):
        super().__init__()
        self.generator = torch.nn.Linear(4, 4)
        self.discriminator = torch.nn.Linear(4, 1)
        self.frequencies = frequencies
        self.seen = {"steps": [], "optimizer_step": [], "batch_end": []}

    def training_step(self, batch, batch_idx, optimizer_idx):
        self.seen["steps"].append([batch_idx, optimizer_idx, self.global_step])
        fake = self.generator(batch[0])
        if optimizer_idx == 0:
            return (fake - batch[0]).pow(2).mean() - self.discriminator(fake).mean()
        return {"loss": self.discriminator(fake.detach()).mean() - self.discriminator(batch[0]).mean(), "d": 1}

    def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_idx, optimizer_closure, on_tpu=False,
                       using_native_amp=False, using_lbfgs=False):
        self.seen["optimizer_step"].append([batch_idx, optimizer_idx])
        optimizer.step(closure=optimizer_closure)

    def on_train_batch_end(self, outputs, batch, batch_idx, *args):
        self.seen["batch_end"].append([sorted(output) if isinstance(output, dict) else output for output in outputs])

    def configure_optimizers(self):
        optimizers = [torch.optim.SGD(self.generator.parameters(), lr=0.1),
                      torch.optim.SGD(self.discriminator.parameters(), lr=0.1)]
        schedulers = [torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5) for optimizer in optimizers]
        configuration = [{"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}
                         for optimizer, scheduler in zip(optimizers, schedulers)]
        for item, frequency in zip(configuration, self.frequencies or ()):
            item["frequency"] = frequency
        return configuration


class GANWithoutIndex(GAN):
    """Several optimizers, no optimizer_idx: not 1.x automatic optimization (2.x's advice stands)."""

    def training_step(self, batch, batch_idx):
        return super().training_step(batch, batch_idx, 0)


def main():
    frequencies = json.loads(sys.argv[1])
    torch.manual_seed(0)
    model = (GANWithoutIndex if sys.argv[2:] == ["without-index"] else GAN)(frequencies)
    trainer = Trainer(max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                      enable_model_summary=False, gradient_clip_val=0.01)
    trainer.fit(model, DataLoader(TensorDataset(torch.randn(12, 4)), batch_size=2))
    model.seen["lrs"] = [optimizer.param_groups[0]["lr"] for optimizer in trainer.optimizers]
    model.seen["global_step"] = trainer.global_step
    model.seen["weights"] = [round(value, 5) for value in model.generator.weight.flatten().tolist()[:4]]
    print("SEEN " + json.dumps(model.seen, default=int))  # 1.9 passed numpy integers


if __name__ == "__main__":
    main()
