"""A 2023 LLM fine-tuner written the FastChat / LLaVA-1.5 way (their train.py, reduced): it asserts a GPU, reads the
HF Trainer's options from its command line (the launch passes --deepspeed with a ZeRO-3 config or --fsdp "full_shard
auto_wrap", --bf16 True, --tf32 True), loads a float16 checkpoint with from_pretrained, trains and saves, resuming when
the output folder holds a checkpoint (as FastChat's train.py does). It prints what trained, for the test to check."""

import pathlib
from dataclasses import dataclass, field

import torch
import transformers


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="")


def main():
    assert torch.cuda.is_available(), "Training currently requires at least one GPU"
    parser = transformers.HfArgumentParser((ModelArguments, transformers.TrainingArguments))
    model_args, training_args = parser.parse_args_into_dataclasses()
    model = transformers.AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path)
    data = [{"input_ids": torch.arange(8) + i, "labels": torch.arange(8) + i} for i in range(8)]
    trainer = transformers.Trainer(model=model, args=training_args, train_dataset=data)
    resume = bool(list(pathlib.Path(training_args.output_dir).glob("checkpoint-*")))
    trainer.train(resume_from_checkpoint=resume)
    trainer.save_state()
    trainer.save_model(training_args.output_dir)
    wrapped = trainer.model_wrapped
    if hasattr(wrapped, "zero_optimization_stage"):
        how = f"DeepSpeedEngine, ZeRO stage {wrapped.zero_optimization_stage()}"
        masters = {str(flat.dtype) for flat in wrapped.optimizer.fp32_partitioned_groups_flat}
    else:
        fsdp2 = isinstance(wrapped, torch.distributed.fsdp.FSDPModule)
        how = f"{'FSDP2' if fsdp2 else type(wrapped).__name__}, parameters {type(next(wrapped.parameters())).__name__}"
        masters = {str(p.dtype) for group in trainer.optimizer.param_groups for p in group["params"]}
    print(f"rank {training_args.process_index} of {training_args.world_size}: {how}, resumed {resume}, step "
          f"{trainer.state.global_step}, master weights {sorted(masters)}", flush=True)


if __name__ == "__main__":
    main()
