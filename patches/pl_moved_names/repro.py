"""The pytorch-lightning 1.x imports of latent-diffusion's main.py and ldm/models/diffusion/ddpm.py (and of
ControlNet, taming-transformers and their forks), and its default logger, TestTubeLogger.

Without zeropatch, on pytorch-lightning >= 2.0:
  ModuleNotFoundError: No module named 'pytorch_lightning.utilities.distributed'
With `zeropatch run -- python repro.py` they import; rank_zero_only is Lightning's own decorator (its rank set by
the Trainer), and TestTubeLogger logs a run as test-tube did (save_dir/name/version_0/tf, a SummaryWriter).
"""

import os
import sys
import tempfile

import pytorch_lightning as pl
from pytorch_lightning.utilities.distributed import rank_zero_only  # latent-diffusion main.py:17, ddpm.py:19
from pytorch_lightning.core.lightning import LightningModule
from pytorch_lightning.loggers.base import LightningLoggerBase, rank_zero_experiment
from pytorch_lightning.utilities.seed import seed_everything
from pytorch_lightning.utilities import rank_zero_only as current_rank_zero_only


@rank_zero_only
def log_on_rank_zero(messages):
    messages.append("rank zero")


def main():
    if rank_zero_only is not current_rank_zero_only or LightningModule is not pl.LightningModule:
        sys.exit("repro: the 1.x names are not Lightning's own objects")
    if not issubclass(pl.loggers.TensorBoardLogger, LightningLoggerBase) or not callable(rank_zero_experiment):
        sys.exit("repro: loggers.base is not Lightning's logger base")
    messages = []
    log_on_rank_zero(messages)
    rank_zero_only.rank = 1  # what the Trainer sets on another rank
    log_on_rank_zero(messages)
    rank_zero_only.rank = 0
    if messages != ["rank zero"] or seed_everything(7) != 7:
        sys.exit(f"repro: rank_zero_only / seed_everything misbehaved: {messages}")
    folder = tempfile.mkdtemp(prefix="zeropatch-pl-moved-names-")
    logger = pl.loggers.TestTubeLogger(save_dir=folder, name="testtube")  # latent-diffusion's default logger config
    logger.log_metrics({"loss": 0.5}, step=0)
    logger.experiment.add_scalar("train/loss", 0.5, 0)  # ImageLogger's _testtube writes through the experiment
    logger.finalize("success")
    events = os.listdir(os.path.join(folder, "testtube", "version_0", "tf"))
    if not any(name.startswith("events.out.tfevents") for name in events):
        sys.exit(f"repro: TestTubeLogger wrote {events}")
    print("repro: pytorch-lightning 1.x's imports resolved to Lightning's objects; TestTubeLogger logged version_0")


if __name__ == "__main__":
    main()
