"""stanford_alpaca's train.py launch, small: its dataclasses parsed by HfArgumentParser from the options its README
passes (``--evaluation_strategy "no" --warmup_ratio 0.03 --fsdp_transformer_layer_cls_to_wrap LlamaDecoderLayer``),
with FastChat's ``--group_by_length`` and the ``--no_cuda`` / ``--per_gpu_train_batch_size`` / ``--logging_dir`` /
``--overwrite_output_dir`` of the run_*.py generation, then two Trainer steps on a tiny LLaMA.

Without zeropatch, on transformers >= 5 (4.51-4.57: only --evaluation_strategy is gone):
  ValueError: Some specified arguments are not used by the HfArgumentParser: ['--evaluation_strategy', 'no', ...]
With `zeropatch run -- python repro.py` every option takes the effect it had on transformers 4.5x.
"""

import os
import sys
import tempfile
from dataclasses import dataclass, field

import torch
import transformers

OUTPUT = tempfile.mkdtemp(prefix="zeropatch-repro-")
COMMAND_LINE = ["--output_dir", OUTPUT, "--num_train_epochs", "1", "--max_steps", "2", "--per_gpu_train_batch_size", "2",
                "--evaluation_strategy", "no", "--save_strategy", "no", "--learning_rate", "2e-5",
                "--weight_decay", "0.", "--warmup_ratio", "0.03", "--lr_scheduler_type", "cosine", "--logging_steps", "1",
                "--fsdp_transformer_layer_cls_to_wrap", "LlamaDecoderLayer", "--group_by_length", "--no_cuda", "True",
                "--logging_dir", os.path.join(OUTPUT, "tensorboard"), "--overwrite_output_dir", "--report_to", "none"]


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="tiny-llama")


@dataclass
class TrainingArguments(transformers.TrainingArguments):  # alpaca's own subclass
    cache_dir: str = field(default=None)
    optim: str = field(default="adamw_torch")
    model_max_length: int = field(default=16)


def main():
    parser = transformers.HfArgumentParser((ModelArguments, TrainingArguments))
    _, args = parser.parse_args_into_dataclasses(args=COMMAND_LINE)
    layers = (args.fsdp_config or {}).get("transformer_layer_cls_to_wrap")
    effects = {"eval_strategy": str(args.eval_strategy).split(".")[-1].lower(), "warmup steps of 100": args.get_warmup_steps(100),
               "sampler": getattr(args, "train_sampling_strategy", None) or args.group_by_length,
               "fsdp layers": layers, "cpu": args.use_cpu, "batch": args.train_batch_size,
               "overwrite_output_dir": args.overwrite_output_dir, "logging_dir": args.logging_dir}
    print("repro: parsed", effects, flush=True)
    expected = {"eval_strategy": "no", "warmup steps of 100": 3, "sampler": "group_by_length" if "train_sampling_strategy"
                in vars(args) else True, "fsdp layers": ["LlamaDecoderLayer"], "cpu": True, "batch": 2,
                "overwrite_output_dir": True, "logging_dir": os.path.join(OUTPUT, "tensorboard")}
    if effects != expected:
        raise SystemExit(f"repro: the options did not take their 4.x effect: {effects} != {expected}")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=32, hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=16)
    model = transformers.LlamaForCausalLM(config)
    data = [{"input_ids": torch.randint(0, 32, (length,)), "labels": torch.randint(0, 32, (length,))}
            for length in (4, 6, 4, 6, 5, 5, 4, 6)]
    collate = lambda items: {key: torch.nn.utils.rnn.pad_sequence([item[key] for item in items], batch_first=True)
                             for key in ("input_ids", "labels")}
    trainer = transformers.Trainer(model=model, args=args, train_dataset=data, data_collator=collate)
    trainer.train()
    print(f"repro: the alpaca command line parsed with its 4.x effects; {trainer.state.global_step} steps trained")


if __name__ == "__main__":
    sys.exit(main())
