"""FastChat's train.py (v0.2.30), reduced: the HF Trainer launched with `--fsdp "full_shard auto_wrap"
--fsdp_transformer_layer_cls_to_wrap LlamaDecoderLayer`, then its `trainer_save_model_safe`, which saves under FSDP1's
`FSDP.state_dict_type(trainer.model, ...)`. Its repository pins transformers>=4.31.0 (the requirements.txt beside
it, as FastChat's pyproject.toml does). One rank, rehearsed on the CPU (`cpu_rehearsal`) where there is no GPU.

Without hf_fsdp_version (transformers >= 5.10, which runs FSDP2 for that launch), after training:
  File ".../torch/distributed/fsdp/fully_sharded_data_parallel.py", line ..., in set_state_dict_type
    ...
  KeyError: None
With `zeropatch run --patches all,cpu_rehearsal -- python repro.py` (on a GPU: `zeropatch run -- python repro.py`)
the Trainer runs FSDP1, as transformers 4 and 5.0-5.9 did, and the model is saved.
"""

import os
import tempfile


def main():
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
    with tempfile.TemporaryDirectory() as folder:
        arguments = transformers.TrainingArguments(
            output_dir=folder, fsdp="full_shard auto_wrap", max_steps=1, save_strategy="no", report_to="none",
            fsdp_config={"transformer_layer_cls_to_wrap": ["LlamaDecoderLayer"]}, per_device_train_batch_size=2)
        data = [{"input_ids": torch.arange(8) + i, "labels": torch.arange(8) + i} for i in range(4)]
        trainer = transformers.Trainer(model=model, args=arguments, train_dataset=data)
        trainer.train()
        with FSDP.state_dict_type(trainer.model, StateDictType.FULL_STATE_DICT,
                                  FullStateDictConfig(offload_to_cpu=True, rank0_only=True)):
            trainer.save_model()  # FastChat's trainer_save_model_safe
        print(f"repro: FastChat's FSDP save wrote {sorted(os.listdir(folder))} under "
              f"{type(trainer.model_wrapped).__name__}")


if __name__ == "__main__":
    main()
