"""colossalai_legacy_api on the real ColossalAI (0.5.0 in one session, 0.4.0 in another): ColoInitContext builds a
model as 0.3's did (each parameter moved at the end of its module's constructor: the values of a model built plainly
and then cast, shared parameters still shared, buffers on the device) and refuses the tensor-parallel sharding it
cannot bridge; Gemini takes 0.3's keywords and placements as the static placements ColossalAI documents as equal;
zero_optim_wrapper takes verbose from optim_config; two CPU ranks train the 0.2 ZeRO-2 path alike. (One rank, both
ways, and a checkpoint read back: the repro.)"""

from conftest import assert_ok, clean_environment, requires, run_python, run_ranks

pytestmark = requires("torch", "colossalai")

REHEARSED = clean_environment(ZEROPATCH="all,colossalai_cpu,cpu_rehearsal")


def test_colo_init_context_builds_as_0_3_did_and_refuses_what_it_cannot_bridge():
    assert_ok(run_python('''
import torch, zeropatch
from colossalai.zero import ColoInitContext
from colossalai.utils.model.colo_init_context import ColoInitContext as of_0_2
from colossalai.tensor import ShardSpec
assert of_0_2 is ColoInitContext and ColoInitContext.__module__.startswith("colossalai.")

class Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(10, 4)
        self.head = torch.nn.Linear(4, 10, bias=False)
        self.head.weight = self.embed.weight   # tied, as GPT-2's head
        self.norm = torch.nn.BatchNorm1d(4)

torch.manual_seed(0)
plain = Tied().half()
torch.manual_seed(0)
with ColoInitContext(device=torch.device("cpu"), dtype=torch.half):
    built = Tied()
assert built.head.weight is built.embed.weight, "a shared parameter was copied twice"
assert all(p.dtype == torch.half for p in built.parameters()) and built.norm.running_mean.dtype == torch.float32
for (name, a), b in zip(plain.state_dict().items(), built.state_dict().values()):
    assert torch.equal(a.float(), b.float()), name   # initialised in float32, then cast: 0.3's order
assert all(type(p) is torch.nn.Parameter and p.requires_grad for p in built.parameters())
try:
    with ColoInitContext(device=torch.device("cpu"), default_dist_spec=ShardSpec([0], [2])):
        pass
except NotImplementedError as error:
    assert "tp_size" in str(error), error
else:
    raise AssertionError("sharding at init was accepted")
print("ok")
'''))


def test_gemini_takes_0_3_keywords_and_placements_and_zero_optim_wrapper_its_config_s_verbose():
    assert_ok(run_python('''
import inspect, os, torch
os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="0")
import zeropatch, colossalai
colossalai.launch_from_torch()
from colossalai.booster.plugin import GeminiPlugin
plugin = GeminiPlugin(device=torch.device("cpu"), placement_policy="cpu", search_range_mb=16)
config = plugin.gemini_config
assert config["placement_policy"] == "static" and config["chunk_init_device"] == torch.device("cpu"), config
assert (config["shard_param_frac"], config["offload_optim_frac"], config["offload_param_frac"]) == (1.0, 1.0, 1.0)
assert config["search_range_m"] == 16, config
config = GeminiPlugin(placement_policy="cuda").gemini_config
assert (config["placement_policy"], config["offload_optim_frac"], config["offload_param_frac"]) == ("static", 0.0, 0.0)
try:
    GeminiPlugin(placement_policy="cpu", offload_optim_frac=0.5)
except TypeError as error:
    assert "placement_policy='static'" in str(error), error
else:
    raise AssertionError("a fraction beside 0.3's 'cpu' placement was accepted")
from colossalai.nn.parallel import zero_model_wrapper, zero_optim_wrapper
model = zero_model_wrapper(torch.nn.Linear(4, 2), zero_stage=1)
optimizer = zero_optim_wrapper(model, torch.optim.SGD(model.parameters(), lr=0.1), optim_config={"verbose": True})
assert type(optimizer).__name__ == "LowLevelZeroOptimizer"
print("ok")
''', env=REHEARSED))


def test_two_ranks_train_the_0_2_zero_2_path_alike():
    results = run_ranks('''
import torch, torch.distributed as dist
import zeropatch, colossalai
from colossalai.nn.optimizer import HybridAdam
from colossalai.nn.parallel import zero_model_wrapper, zero_optim_wrapper
from colossalai.tensor import ProcessGroup
from colossalai.utils.model.colo_init_context import ColoInitContext
colossalai.launch_from_torch(config={})
torch.manual_seed(0)
with ColoInitContext(device=torch.device("cpu"), default_pg=ProcessGroup(tp_degree=1)):
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
model = zero_model_wrapper(model, zero_stage=2)
optimizer = zero_optim_wrapper(model, HybridAdam(model.parameters(), lr=1e-2), initial_scale=2**5,
                               optim_config=dict(reduce_bucket_size=1024, overlap_communication=True, verbose=True))
torch.manual_seed(1 + dist.get_rank())   # each rank its own batch
for _ in range(2):
    loss = model(torch.randn(4, 8)).pow(2).mean()
    optimizer.backward(loss)
    optimizer.step()
    optimizer.zero_grad()
weights = torch.cat([p.detach().flatten() for p in model.parameters()])
gathered = [torch.zeros_like(weights) for _ in range(2)]
dist.all_gather(gathered, weights)
assert torch.equal(gathered[0], gathered[1]), "the ranks' weights differ after ZeRO-2 steps"
print("rank trained alike")
''', 2, env=REHEARSED)
    for result in results:
        assert_ok(result)
        assert "rank trained alike" in result.stdout
