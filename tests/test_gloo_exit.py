"""gloo_exit on the real torch.distributed (gloo): exit is bounded when a peer never joins a pending collective,
the workers of groups that outlive destroy_process_group() are found and waited for, and forked children leave
the parent's groups alone. That the abort is gone is shown by the repro (both ways) and measured by
patches/gloo_exit/count_aborts.py."""

import time

import pytest

from conftest import assert_ok, distribution_version, kill, requires, run_python, start_ranks

pytestmark = requires("torch")


def test_exit_is_bounded_when_a_peer_never_joins_the_last_collective():
    processes = start_ranks('''
import time, torch, torch.distributed as dist
import zeropatch
from zeropatch.patches.torch import gloo_exit
gloo_exit.SHUTDOWN_SECONDS = 2
dist.init_process_group("gloo")
dist.barrier()
if dist.get_rank() == 0:
    dist.all_reduce(torch.ones(4), async_op=True)   # rank 1 never joins it
    print("rank 0 leaving", flush=True)
else:
    time.sleep(60)
''', 2)
    try:
        started = time.monotonic()
        out, err = processes[0].communicate(timeout=60)
        elapsed = time.monotonic() - started
    finally:
        for process in processes:
            kill(process)
    assert "rank 0 leaving" in out, err
    assert "did not shut down within 2 s at exit" in err, err
    assert elapsed < 30, elapsed


def test_a_forked_child_leaves_the_parents_groups_alone():
    assert_ok(run_python('''
import os, torch, torch.distributed as dist
import zeropatch
os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="0")
dist.init_process_group("gloo")
pid = os.fork()
if pid == 0:             # a forked worker: it runs the exit handlers it inherited, then leaves as such workers do
    import atexit
    atexit._run_exitfuncs()
    os._exit(0)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0
tensor = torch.ones(2)
dist.all_reduce(tensor)   # the parent's group still works
assert dist.is_initialized()
dist.destroy_process_group()   # destroyed by the script itself: the handler finds nothing to do
print("ok")
''', timeout=120))


def test_workers_of_groups_that_outlive_destroy_process_group_are_waited_for():
    if distribution_version("torch") < (2, 11):  # seen in the release sweep on torch 2.10.0
        pytest.skip("torch < 2.11 does not name its gloo worker threads: there are none to find and wait for")
    assert_ok(run_python('''
import os, time, torch, torch.distributed as dist
import zeropatch
from zeropatch.patches.torch import gloo_exit
os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="0")
dist.init_process_group("gloo")
kept = dist.new_group([0])        # held by the script, as ColossalAI's plugins and optimizers hold theirs
dist.all_reduce(torch.ones(4), group=kept)
named_by = time.monotonic() + 10  # a worker names itself when it first runs: on a loaded machine, after all_reduce
while len(gloo_exit.gloo_worker_states()) < 2 and time.monotonic() < named_by:
    time.sleep(0.05)
assert len(gloo_exit.gloo_worker_states()) >= 2, "torch no longer names its gloo workers " + gloo_exit.GLOO_WORKER_THREAD
dist.destroy_process_group()
time.sleep(0.2)
assert gloo_exit.gloo_worker_states(), "the kept group's workers live on until finalisation"
assert gloo_exit._wait_for_quiet_gloo_workers(time.monotonic() + 10)
print("ok")
''', timeout=120))
