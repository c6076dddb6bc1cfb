"""FastChat's train.py (v0.2.30), reduced: the HF Trainer launched with `--fsdp "full_shard auto_wrap"
--fsdp_transformer_layer_cls_to_wrap LlamaDecoderLayer`, then its `trainer_save_model_safe`, which saves under FSDP1's
`FSDP.state_dict_type(trainer.model, ...)`. Its repository pins transformers>=4.31.0 (a requirements.txt beside the
script, as FastChat's pyproject.toml does). One rank, rehearsed on the CPU (`cpu_rehearsal`) where there is no GPU.

Without hf_fsdp_version (transformers >= 5.10, which runs FSDP2 for that launch), after training:
  File ".../torch/distributed/fsdp/fully_sharded_data_parallel.py", line ..., in set_state_dict_type
    ...
  KeyError: None
With `zeropatch run -- python repro.py` the Trainer runs FSDP1, as transformers 4 and 5.0-5.9 did, and the model
is saved.
"""

import os
import shutil
import subprocess
import sys
import tempfile


def train(folder):
    os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
                      MASTER_PORT="0")  # a launched job of one rank; port 0 lets the store pick a free port
    import torch
    import transformers
    from torch.distributed.fsdp import FullStateDictConfig, StateDictType
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                                      num_attention_heads=2, num_key_value_heads=2)
    model = transformers.LlamaForCausalLM(config)
    arguments = transformers.TrainingArguments(
        output_dir=os.path.join(folder, "out"), fsdp="full_shard auto_wrap", max_steps=1, save_strategy="no",
        fsdp_config={"transformer_layer_cls_to_wrap": ["LlamaDecoderLayer"]}, per_device_train_batch_size=2,
        report_to="none")
    data = [{"input_ids": torch.arange(8) + i, "labels": torch.arange(8) + i} for i in range(4)]
    trainer = transformers.Trainer(model=model, args=arguments, train_dataset=data)
    trainer.train()
    with FSDP.state_dict_type(trainer.model, StateDictType.FULL_STATE_DICT,
                              FullStateDictConfig(offload_to_cpu=True, rank0_only=True)):
        trainer.save_model()  # FastChat's trainer_save_model_safe
    print(f"repro: FastChat's FSDP save wrote {sorted(os.listdir(arguments.output_dir))} under "
          f"{type(trainer.model_wrapped).__name__}")


def main():
    if os.environ.get("REPRO_INSIDE") == "1":
        return train(os.path.dirname(os.path.abspath(__file__)))
    folder = tempfile.mkdtemp()
    try:  # the script in a repository of its own that pins transformers as FastChat's does
        os.mkdir(os.path.join(folder, ".git"))
        with open(os.path.join(folder, "requirements.txt"), "w") as file:
            file.write("transformers>=4.31.0\n")
        script = shutil.copy(__file__, folder)
        finished = subprocess.run([sys.executable, script], env={**os.environ, "REPRO_INSIDE": "1"}, timeout=600)
        raise SystemExit(finished.returncode)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
