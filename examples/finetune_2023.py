"""A fine-tuning script written the 2023 way (the diffusers-example fine-tuners' shape), run unmodified on today's
stack: accelerate with a DeepSpeed config file of the time, transformers' AdamW, a PixArt/Latte-style model whose
constructor freezes part of it (a RoPE table, a frozen caption embedder), loaded with from_pretrained and trained with
gradient checkpointing, diffusers' CaptionProjection.

    zeropatch run -- python examples/finetune_2023.py [--steps 3]

On today's releases, without zeropatch, it stops at the first of: `import diffusers` with the suite's diffusers 0.24
(Latte's pin: `hf_cache_home`, `cached_download`, removed from huggingface_hub), `from transformers import AdamW` (4.50),
`CaptionProjection` (diffusers 0.27), `Accelerator(logging_dir=...)` (accelerate 1.0), `cpu_offload_params` and the
loss-scale keys in `bf16` (DeepSpeed's strict config), `use_auth_token` (transformers 5); and, had it run, transformers
5 would have un-frozen the frozen parameters. It prints the check at the end: frozen weights bit-identical.
"""

import argparse
import json
import os
import tempfile

import torch
import torch.utils.checkpoint
from accelerate import Accelerator
from accelerate.utils import DeepSpeedPlugin
from diffusers.models.embeddings import CaptionProjection
from transformers import AdamW, PretrainedConfig, PreTrainedModel

DS_CONFIG_2023 = {
    "train_micro_batch_size_per_gpu": 2,
    "gradient_accumulation_steps": 1,
    "gradient_clipping": 1.0,
    "zero_allow_untested_optimizer": True,
    "bf16": {"enabled": True, "loss_scale": 0, "loss_scale_window": 1000, "initial_scale_power": 16,
             "hysteresis": 2, "min_loss_scale": 1},
    "zero_optimization": {"stage": 2, "cpu_offload": False, "cpu_offload_params": False,
                          "cpu_offload_use_pin_memory": False, "contiguous_gradients": True, "overlap_comm": False},
}


class TinyDiTConfig(PretrainedConfig):
    model_type = "tiny_dit_2023"

    def __init__(self, hidden=32, caption_channels=16, depth=2, **kwargs):
        super().__init__(**kwargs)
        self.hidden, self.caption_channels, self.depth = hidden, caption_channels, depth


class TinyDiT(PreTrainedModel):
    config_class = TinyDiTConfig
    supports_gradient_checkpointing = True

    def __init__(self, config):
        super().__init__(config)
        self.caption_projection = CaptionProjection(in_features=config.caption_channels, hidden_size=config.hidden)
        self.caption_projection.requires_grad_(False)  # freeze_y_embedder
        self.freqs = torch.nn.Parameter(torch.randn(config.hidden), requires_grad=False)  # a RoPE table
        self.blocks = torch.nn.ModuleList(torch.nn.Sequential(torch.nn.Linear(config.hidden, config.hidden),
                                                              torch.nn.GELU()) for _ in range(config.depth))
        self.head = torch.nn.Linear(config.hidden, 1)
        self.gradient_checkpointing = False
        self.post_init()

    def _set_gradient_checkpointing(self, module, value=False):  # the 2023 override
        if isinstance(module, TinyDiT):
            module.gradient_checkpointing = value

    def forward(self, x, captions):
        x = x + self.caption_projection(captions).mean(1) + self.freqs
        for block in self.blocks:
            if self.gradient_checkpointing and self.training:
                x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        return self.head(x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    if "RANK" not in os.environ:  # `python finetune_2023.py`: one local rank; port 0 lets the store pick a free port
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
                          MASTER_PORT="0")
    with tempfile.TemporaryDirectory() as folder:
        torch.manual_seed(0)
        TinyDiT(TinyDiTConfig()).save_pretrained(os.path.join(folder, "pretrained"))
        with open(os.path.join(folder, "ds_config.json"), "w") as file:
            json.dump(DS_CONFIG_2023, file)
        accelerator = Accelerator(logging_dir=os.path.join(folder, "logs"),
                                  deepspeed_plugin=DeepSpeedPlugin(hf_ds_config=os.path.join(folder, "ds_config.json")))
        model = TinyDiT.from_pretrained(os.path.join(folder, "pretrained"), use_auth_token=None)
        model.gradient_checkpointing_enable()
        frozen = {name: parameter.detach().clone() for name, parameter in model.named_parameters()
                  if not parameter.requires_grad}
        head = model.head.weight.detach().clone()
        optimizer = AdamW([parameter for parameter in model.parameters() if parameter.requires_grad], lr=1e-3)
        model, optimizer = accelerator.prepare(model, optimizer)
        for step in range(args.steps):
            x, captions = torch.randn(2, 32, dtype=torch.bfloat16), torch.randn(2, 5, 16, dtype=torch.bfloat16)
            loss = model(x, captions).float().square().mean()
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
            accelerator.print(f"step {step} loss {loss.item():.3e}")
        trained = dict(accelerator.unwrap_model(model).named_parameters())
        # DeepSpeed's bf16 mode casts the whole model: frozen weights are their bf16 values, untouched by training
        same = all(torch.equal(trained[name].detach(), value.to(trained[name].dtype)) for name, value in frozen.items())
        assert len(frozen) == 5 and same, sorted(frozen)
        assert not torch.equal(trained["head.weight"].detach(), head.to(trained["head.weight"].dtype)), "no training"
        accelerator.print(f"finetune_2023: trained {args.steps} steps with DeepSpeed; {len(frozen)} frozen weights "
                          "bit-identical")


if __name__ == "__main__":
    main()
