"""Launch code of 2021-2023 (DeepSpeed ``init_distributed`` callers, SLURM launchers) writes the rendezvous URL with the
master's address in brackets, so that one f-string serves an IPv4 host, a host name and an IPv6 address alike:
``init_method=f"tcp://[{MASTER_ADDR}]:{MASTER_PORT}"``. Here on one CPU rank, with ``MASTER_ADDR=localhost``.

Without zeropatch, on Python >= 3.11.4 (and the 3.9 / 3.10 security releases with gh-103848):
  ValueError: 'localhost' does not appear to be an IPv4 or IPv6 address
With `zeropatch run -- python repro.py` the group forms on localhost as it did on older Pythons, and an all_reduce runs.
"""

import os
import socket

import torch
import torch.distributed as dist


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


os.environ.setdefault("MASTER_ADDR", "localhost")
master_addr, port = os.environ["MASTER_ADDR"], free_port()
dist.init_process_group("gloo", init_method=f"tcp://[{master_addr}]:{port}", rank=0, world_size=1)
total = torch.ones(3)
dist.all_reduce(total)
if total.tolist() != [1.0, 1.0, 1.0]:
    raise AssertionError(f"all_reduce on one rank gave {total.tolist()}")
dist.destroy_process_group()
print(f"repro: the group formed through tcp://[{master_addr}]:{port} and reduced")
