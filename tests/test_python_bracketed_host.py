"""python_bracketed_host on the real torch.distributed (gloo): two ranks form a group through
``tcp://[127.0.0.1]:PORT`` (the IPv4 form Python refuses in brackets; the repro runs ``[localhost]`` on one rank);
which URLs are rewritten (host names and IPv4 addresses unbracketed, IPv6 kept) and that urllib itself still refuses
them, as Python's security fix means."""

from conftest import assert_ok, requires, run_python, run_ranks

pytestmark = requires("torch")


def test_two_ranks_form_a_group_through_a_bracketed_ipv4_master():
    results = run_ranks('''
import os, torch, torch.distributed as dist
import zeropatch
dist.init_process_group("gloo", init_method=f"tcp://[{os.environ['MASTER_ADDR']}]:{os.environ['MASTER_PORT']}",
                        rank=int(os.environ["RANK"]), world_size=2)
total = torch.ones(2) * (dist.get_rank() + 1)
dist.all_reduce(total)
assert total.tolist() == [3.0, 3.0], total
dist.destroy_process_group()
print("rank reduced")
''', 2)
    for result in results:
        assert_ok(result)
        assert "rank reduced" in result.stdout


def test_only_a_bracketed_host_name_or_ipv4_address_loses_its_brackets_and_urllib_still_refuses_it():
    assert_ok(run_python('''
import urllib.parse, zeropatch, torch.distributed.rendezvous
from zeropatch.patches.python.python_bracketed_host import unbracketed
cases = {"tcp://[localhost]:29500": "tcp://localhost:29500", "tcp://[node-07.cluster]:1": "tcp://node-07.cluster:1",
         "tcp://[10.0.0.1]:29500?rank=0": "tcp://10.0.0.1:29500?rank=0", "tcp://user@[host]:1": "tcp://user@host:1",
         "tcp://[::1]:29500": "tcp://[::1]:29500", "tcp://[fe80::1%eth0]:1": "tcp://[fe80::1%eth0]:1",
         "tcp://localhost:29500": "tcp://localhost:29500", "env://": "env://", "file:///tmp/[x]": "file:///tmp/[x]"}
for given, expected in cases.items():
    assert unbracketed(given) == expected, (given, unbracketed(given))
assert unbracketed(b"tcp://[localhost]:1") == b"tcp://[localhost]:1"  # bytes are torch's to refuse, as before
for refused in ("tcp://[localhost]:29500", "tcp://[10.0.0.1]:29500"):
    try:
        urllib.parse.urlsplit(refused)
    except ValueError:
        continue
    raise AssertionError(f"urllib accepted {refused} with zeropatch on")
print("ok")
'''))
