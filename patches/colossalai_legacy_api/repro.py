"""ColossalAI 0.2.x-era ZeRO training code on today's ColossalAI, written the way ColossalAI's own GPT demo of 0.2.8
wrote it (``examples/language/gpt/gemini/train_gpt_demo.py --distplan CAI_ZeRO2``; the shape, not a copy): its parser,
a process group, the model built in a ``ColoInitContext``, then ``zero_model_wrapper`` / ``zero_optim_wrapper`` from
``colossalai.nn.parallel`` with the demo's ZeRO-2 config (``verbose`` in it), two steps and a checkpoint read back.

Without zeropatch, on ColossalAI >= 0.3.3 (rehearsed on the CPU: cpu_rehearsal and colossalai_cpu stand for the GPU):
  zeropatch run --patches colossalai_cpu,cpu_rehearsal -- python repro.py
  ModuleNotFoundError: No module named 'colossalai.nn.parallel'
With `zeropatch run --patches all,colossalai_cpu,cpu_rehearsal -- python repro.py` it trains two steps on ZeRO-2 and its
checkpoint loads back into a model built the same way, bit for bit.
"""

import os
import tempfile

import torch


def main():
    if "RANK" not in os.environ:  # one local rank; port 0 lets the store pick a free port
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
                          MASTER_PORT="0")
    import colossalai
    from colossalai.nn.optimizer import HybridAdam
    from colossalai.nn.parallel import zero_model_wrapper, zero_optim_wrapper
    from colossalai.tensor import ProcessGroup, ReplicaSpec
    from colossalai.utils.model.colo_init_context import ColoInitContext

    parser = colossalai.get_default_parser()
    parser.add_argument("--train_step", type=int, default=2)
    args = parser.parse_args([])
    colossalai.launch_from_torch(config={})
    torch.manual_seed(0)
    group = ProcessGroup(tp_degree=1)

    def build():
        with ColoInitContext(device=torch.device("cpu"), dtype=torch.float, default_pg=group,
                             default_dist_spec=ReplicaSpec()):
            return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))

    model = zero_model_wrapper(build(), zero_stage=2)
    optimizer = zero_optim_wrapper(model, HybridAdam(model.parameters(), lr=1e-2), initial_scale=2**5,
                                   optim_config=dict(reduce_bucket_size=12 * 1024 * 1024, overlap_communication=True,
                                                     verbose=True))
    data = torch.randn(4, 8)
    losses = []
    for _ in range(args.train_step):
        loss = model(data).pow(2).mean()
        optimizer.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    if not losses[-1] < losses[0]:
        raise SystemExit(f"repro: the ZeRO-2 steps did not train: losses {losses}")
    path = os.path.join(tempfile.mkdtemp(), "model.pt")
    torch.save(model.state_dict(), path)
    again = build()
    again.load_state_dict(torch.load(path))
    if any(not torch.equal(a, b) for a, b in zip(model.state_dict().values(), again.state_dict().values())):
        raise SystemExit("repro: the checkpoint did not load back bit for bit")
    print(f"repro: ZeRO-2 trained {args.train_step} steps (loss {losses[0]:.4f} -> {losses[-1]:.4f}) and its "
          f"checkpoint loaded back bit for bit")


if __name__ == "__main__":
    main()
