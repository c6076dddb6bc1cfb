"""Fine-tuning with a frozen layer under DeepSpeed ZeRO-2, the frozen layer offloaded to disk with
accelerate's dispatch_model, then a checkpoint.

Without zeropatch:
  ValueError: failed to find frozen Parameter containing: tensor(..., device='meta', size=(16, 16)) in named params
With `zeropatch run -- python repro.py` the checkpoint is written with the real (offloaded) weights and a
fresh engine restores every weight bit for bit.
"""

import os
import sys
import tempfile

import torch


def build(seed):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    model[0].requires_grad_(False)  # a frozen backbone layer
    return model


def engine_for(model, stage):
    import deepspeed

    config = {"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": stage},
              "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}}}
    trainable = [p for p in model.parameters() if p.requires_grad]
    engine, *_ = deepspeed.initialize(model=model, model_parameters=trainable, config=config)
    return engine


def main(stage=2, device_map=None):
    if "RANK" not in os.environ:  # `python repro.py`: one local rank; port 0 lets the store pick a free port
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="0")
    import deepspeed
    from accelerate import dispatch_model

    deepspeed.init_distributed(dist_backend="gloo")
    engine = engine_for(build(seed=0), stage)
    before = {name: value.clone() for name, value in engine.module.state_dict().items()}
    work = tempfile.mkdtemp()
    dispatch_model(engine.module, device_map=device_map or {"0": "disk", "1": "cpu", "2": "cpu"},
                   main_device="cpu", offload_dir=os.path.join(work, "offload"))
    engine.save_checkpoint(os.path.join(work, "checkpoint"))
    fresh = engine_for(build(seed=1), stage)
    fresh.load_checkpoint(os.path.join(work, "checkpoint"))
    after = fresh.module.state_dict()
    lost = [name for name in before if not torch.equal(before[name], after[name])]
    if lost:
        sys.exit(f"repro: the checkpoint lost weights: {lost}")
    print(f"repro: ZeRO-{stage} checkpoint after dispatch_model restored all {len(before)} weights bit for bit")


if __name__ == "__main__":
    main()
