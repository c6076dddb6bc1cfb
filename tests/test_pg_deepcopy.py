"""pg_deepcopy on real torch.distributed (CPU, gloo, 1 and 2 ranks)."""

import pytest

from conftest import assert_ok, requires, run_ranks

pytestmark = requires("torch")

MODEL = '''
import copy, pickle, io
import torch, torch.distributed as dist
dist.init_process_group("gloo")
world = dist.get_world_size()
sp_group = dist.new_group(list(range(world)))

class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)
        self.sp_group = sp_group
        self.groups = {"sp": sp_group, "pair": [dist.group.WORLD, (sp_group,)]}
        self.register_buffer("scale", torch.ones(8))

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([torch.nn.Sequential(Attention()) for _ in range(4)])
        self.head = torch.nn.Linear(8, 2)

model = Net().to(torch.bfloat16)
'''


@pytest.mark.parametrize("world_size", [1, 2])
def test_deepcopy_shares_groups_and_copies_tensors(world_size):
    results = run_ranks("import zeropatch\n" + MODEL + '''
ema = copy.deepcopy(model).to(torch.float32)
for original, copied in zip(model.modules(), ema.modules()):
    if isinstance(original, torch.nn.Sequential) and isinstance(original[0], torch.nn.Module) and hasattr(original[0], "sp_group"):
        a, b = original[0], copied[0]
        assert b.sp_group is sp_group and b.groups["sp"] is sp_group
        assert b.groups["pair"][0] is dist.group.WORLD and b.groups["pair"][1][0] is sp_group
        assert b.groups is not a.groups                     # containers are copied, handles shared
for (name, p), q in zip(model.named_parameters(), ema.parameters()):
    assert p.data_ptr() != q.data_ptr() and p.dtype == torch.bfloat16 and q.dtype == torch.float32
    assert torch.equal(p.float(), q), name
for b, c in zip(model.buffers(), ema.buffers()):
    assert b.data_ptr() != c.data_ptr() and torch.equal(b.float(), c)
# the copied reference still communicates
t = torch.ones(3) * (dist.get_rank() + 1)
dist.all_reduce(t, group=ema.blocks[2][0].sp_group)
assert t.tolist() == [world * (world + 1) / 2] * 3, t
# deep-copying a handle directly, and a Work object
assert copy.deepcopy(sp_group) is sp_group
work = dist.all_reduce(torch.ones(1), group=sp_group, async_op=True)
assert copy.deepcopy([work])[0] is work
work.wait()
print("ok")
''', world_size)
    assert_ok(results)


def test_pickling_still_refuses_but_names_the_group_and_path():
    result = run_ranks("import zeropatch\n" + MODEL + '''
try:
    pickle.dumps(model)
except TypeError as error:
    text = str(error)
    assert "cannot pickle" in text and "ProcessGroup" in text and "ranks [0]" in text, text
    assert "state_dict()" in text, text
else:
    raise AssertionError("pickling a process group must still fail")
try:
    torch.save(model, io.BytesIO())
except TypeError as error:
    text = str(error)
    assert "held at: blocks.0.0.sp_group" in text, text
    assert "blocks.0.0.groups['pair'][0]" in text, text
else:
    raise AssertionError("torch.save of a model holding a group must still fail")
buffer = io.BytesIO()
torch.save(model.state_dict(), buffer)                 # the suggested way works
assert buffer.tell() > 0
print("ok")
''', 1)
    assert_ok(result)


def test_uninstall_brings_the_original_error_back():
    result = run_ranks("import zeropatch\n" + MODEL + '''
copy.deepcopy(model)
original_save = torch.serialization.save.__wrapped__
zeropatch.uninstall("pg_deepcopy")
assert torch.save is original_save and torch.serialization.save is original_save
try:
    copy.deepcopy(model)
except TypeError as error:
    assert str(error) == "cannot pickle 'torch._C._distributed_c10d.ProcessGroup' object", error
else:
    raise AssertionError("expected the original error")
print("ok")
''', 1)
    assert_ok(result)


def test_patch_applies_when_torch_was_imported_first():
    result = run_ranks(MODEL + '''
import zeropatch
assert zeropatch.status("pg_deepcopy")[0].state == "applied"
copy.deepcopy(model)
try:
    torch.save(model, io.BytesIO())
except TypeError as error:
    assert "held at:" in str(error)
print("ok")
''', 1)
    assert_ok(result)
