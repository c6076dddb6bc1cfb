"""A GAN trained the pytorch-lightning 1.x way, as taming-transformers' VQModel and latent-diffusion's AutoencoderKL
train theirs: configure_optimizers returns the generator's and the discriminator's optimizers, training_step(batch,
batch_idx, optimizer_idx) answers each in turn, with automatic optimization.

Without zeropatch, on pytorch-lightning >= 2.0:
  RuntimeError: Training with multiple optimizers is only supported with manual optimization. ...
With `zeropatch run -- python repro.py` it trains 3 batches, and its weights are those of 1.9's sequence written out
in plain torch below (each batch, each optimizer: the others' parameters frozen, zero_grad, loss, backward, step);
trainer.global_step counts the 6 optimizer steps, on_train_batch_end gets both optimizers' outputs.
"""

import copy
import sys

import torch
from pytorch_lightning import LightningModule, Trainer
from torch.utils.data import DataLoader, TensorDataset


class GAN(LightningModule):
    def __init__(self):
        super().__init__()
        self.generator = torch.nn.Linear(4, 4)
        self.discriminator = torch.nn.Linear(4, 1)
        self.batch_outputs = []

    def loss(self, batch, optimizer_idx):
        fake = self.generator(batch)
        if optimizer_idx == 0:  # the generator fools the discriminator and reconstructs
            return (fake - batch).pow(2).mean() - self.discriminator(fake).mean()
        return self.discriminator(fake.detach()).mean() - self.discriminator(batch).mean()

    def training_step(self, batch, batch_idx, optimizer_idx):
        return {"loss": self.loss(batch[0], optimizer_idx), "optimizer_idx": optimizer_idx}

    def on_train_batch_end(self, outputs, batch, batch_idx):
        self.batch_outputs.append([output["optimizer_idx"] for output in outputs])

    def optimizers_for(self, generator, discriminator):
        return [torch.optim.Adam(generator, lr=0.01), torch.optim.SGD(discriminator, lr=0.1)]

    def configure_optimizers(self):
        return self.optimizers_for(self.generator.parameters(), self.discriminator.parameters()), []


def as_1_9_trained(model, batches):
    """1.9's automatic optimization with two optimizers, written out."""
    optimizers = model.optimizers_for(model.generator.parameters(), model.discriminator.parameters())
    for (batch,) in batches:
        for index, optimizer in enumerate(optimizers):
            mine = {id(parameter) for group in optimizer.param_groups for parameter in group["params"]}
            for parameter in model.parameters():
                parameter.requires_grad = id(parameter) in mine
            optimizer.zero_grad()
            model.loss(batch, index).backward()
            optimizer.step()
        for parameter in model.parameters():
            parameter.requires_grad = True
    return model


def main():
    torch.manual_seed(0)
    model = GAN()
    reference = copy.deepcopy(model)
    loader = DataLoader(TensorDataset(torch.randn(6, 4)), batch_size=2)
    trainer = Trainer(max_epochs=1, accelerator="cpu", logger=False, enable_checkpointing=False,
                      enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(model, loader)
    as_1_9_trained(reference, loader)
    for name, parameter in model.state_dict().items():
        if not torch.allclose(parameter, reference.state_dict()[name], atol=1e-6):
            sys.exit(f"repro: {name} differs from 1.9's sequence: {parameter} vs {reference.state_dict()[name]}")
    if trainer.global_step != 6 or model.batch_outputs != [[0, 1]] * 3:
        sys.exit(f"repro: global_step {trainer.global_step}, batch outputs {model.batch_outputs}")
    print("repro: both optimizers trained in turn each batch, as pytorch-lightning 1.9 trained them")


if __name__ == "__main__":
    main()
