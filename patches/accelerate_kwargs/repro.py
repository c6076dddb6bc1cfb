"""The accelerate set-up of the 2023 fine-tuners: the diffusers text-to-image / dreambooth examples pass
``logging_dir=``; PixArt-alpha's train_scripts/train.py passes ``even_batches=`` (its multi-scale configs give
``(False,)``); scripts of the 0.2x era pass ``split_batches=True`` so that the batch size is the global one.

Without zeropatch, on accelerate >= 1.0:
  TypeError: Accelerator.__init__() got an unexpected keyword argument 'logging_dir'
With `zeropatch run -- python repro.py` each keyword takes effect as it did (split_batches too, which 1.x would
accept and silently ignore).
"""

import os
import sys
import tempfile

import torch
from accelerate import Accelerator


def main():
    logging_dir = os.path.join(tempfile.mkdtemp(prefix="zeropatch-repro-"), "logs")
    accelerator = Accelerator(gradient_accumulation_steps=1, mixed_precision="no", logging_dir=logging_dir,
                              even_batches=(False,), split_batches=True)
    loader = accelerator.prepare(torch.utils.data.DataLoader(torch.arange(16.0), batch_size=8))
    batch_sizes = [len(batch) for batch in loader]
    if accelerator.logging_dir != logging_dir or not accelerator.even_batches or not accelerator.split_batches:
        sys.exit(f"repro: {accelerator.logging_dir}, even_batches={accelerator.even_batches}, "
                 f"split_batches={accelerator.split_batches}")
    if batch_sizes != [8, 8]:  # one process: the global batch is the batch (tests/test_accelerate_kwargs.py: two)
        sys.exit(f"repro: batches of {batch_sizes}")
    print(f"repro: logging_dir, even_batches and split_batches took effect (batches of {batch_sizes})")


if __name__ == "__main__":
    main()
