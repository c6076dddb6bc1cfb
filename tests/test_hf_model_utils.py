"""hf_model_utils on the real transformers: where a 4.x release is installed (the pinned session), each restored
helper gives exactly what the library's own gives, on the same inputs; on transformers 5 a vendored BERT calls them
and `zeropatch check` names the calls, except where the repository defines the method itself (BLIP's med.py)."""

import sys

import pytest

from conftest import assert_ok, distribution_version, requires, run_command, run_python

pytestmark = requires("torch", "transformers")

COMPARE = '''
import torch
from transformers import BertConfig, BertModel, GPT2Config
from transformers import modeling_utils, pytorch_utils
from transformers.utils import model_parallel_utils
from zeropatch.patches.transformers import hf_model_utils as ours

torch.manual_seed(0)
checked = []
def same(name, a, b):
    if isinstance(a, (list, tuple)):
        ok = len(a) == len(b) and all(x is y or torch.equal(x, y) for x, y in zip(a, b))
    elif torch.is_tensor(a):
        ok = a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    else:
        ok = a == b
    if not ok:
        raise SystemExit(f"{name}: {a!r} != {b!r}")
    checked.append(name)

for decoder in (False, True):
    model = BertModel(BertConfig(hidden_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=8,
                                 is_decoder=decoder)).to(torch.float16 if decoder else torch.float32)
    for mask in (torch.tensor([[1, 1, 0], [1, 0, 0]]), torch.randint(0, 2, (2, 3, 3))):
        same("get_extended_attention_mask", ours.get_extended_attention_mask(model, mask, (2, 3)),
             model.get_extended_attention_mask(mask, (2, 3)))
    past = torch.tensor([[1, 1, 1, 1, 0]])
    same("create_extended_attention_mask_for_decoder", ours.create_extended_attention_mask_for_decoder((1, 2), past),
         modeling_utils.ModuleUtilsMixin.create_extended_attention_mask_for_decoder((1, 2), past))
    for mask in (torch.tensor([[1, 0, 1]]), torch.randint(0, 2, (2, 3, 4))):
        same("invert_attention_mask", ours.invert_attention_mask(model, mask), model.invert_attention_mask(mask))
    for head_mask in (None, torch.tensor([1.0, 0.0]), torch.rand(2, 2)):
        for chunked in (False, True):
            same("get_head_mask", ours.get_head_mask(model, head_mask, 2, chunked),
                 model.get_head_mask(head_mask, 2, chunked))
    inputs = {"input_ids": torch.ones(2, 5, dtype=torch.long)}
    same("floating_point_ops", ours.floating_point_ops(model, inputs), model.floating_point_ops(inputs))
    same("estimate_tokens", ours.estimate_tokens(model, {}), model.estimate_tokens({}))
    same("get_parameter_dtype", ours.get_parameter_dtype(model), modeling_utils.get_parameter_dtype(model))
    same("get_parameter_device", ours.get_parameter_device(model), modeling_utils.get_parameter_device(model))
for module in (torch.nn.Module(), torch.nn.Sequential(torch.nn.Embedding(3, 2))):
    module.register_buffer("counts", torch.zeros(2, dtype=torch.int64))
    same("get_parameter_dtype", ours.get_parameter_dtype(module), modeling_utils.get_parameter_dtype(module))

for heads, pruned in (([1], set()), ([0, 3], {1}), ([2, 2], {0, 2})):
    a, b = ours.find_pruneable_heads_and_indices(heads, 4, 3, pruned), \\
        pytorch_utils.find_pruneable_heads_and_indices(heads, 4, 3, pruned)
    if a[0] != b[0] or not torch.equal(a[1], b[1]):
        raise SystemExit(f"find_pruneable_heads_and_indices: {a} != {b}")
    checked.append("find_pruneable_heads_and_indices")
conv = pytorch_utils.Conv1D(6, 4)
index = torch.tensor([0, 2, 5])
for dim in (0, 1):
    where = index if dim else index[:2]
    a, b = ours.prune_conv1d_layer(conv, where, dim), pytorch_utils.prune_conv1d_layer(conv, where, dim)
    same("prune_conv1d_layer", [a.weight, a.bias], [b.weight, b.bias])
    same("prune_conv1d_layer requires_grad", (a.weight.requires_grad, a.nf), (b.weight.requires_grad, b.nf))
linear = torch.nn.Linear(4, 6)
for layer in (linear, conv):
    a, b = ours.prune_layer(layer, index[:2]), pytorch_utils.prune_layer(layer, index[:2])
    same("prune_layer", [a.weight, a.bias], [b.weight, b.bias])

for kind in ("last", "first", "mean", "cls_index"):
    config = GPT2Config(n_embd=6, summary_type=kind, summary_use_proj=True, summary_proj_to_labels=True, num_labels=3,
                        summary_activation="tanh", summary_first_dropout=0.1, summary_last_dropout=0.0)
    theirs_module = modeling_utils.SequenceSummary(config).eval()
    ours_module = ours._sequence_summary_class()(config).eval()
    ours_module.load_state_dict(theirs_module.state_dict())
    hidden = torch.randn(2, 4, 6)
    for cls_index in (None, torch.tensor([1, 3])):
        same(f"SequenceSummary {kind}", ours_module(hidden, cls_index), theirs_module(hidden, cls_index))
    same("SequenceSummary modules", [type(m).__name__ for m in ours_module.children()],
         [type(m).__name__ for m in theirs_module.children()])

for layers, devices in ((12, ["a", "b", "c"]), (5, [0, 1]), (3, [0, 1, 2, 3])):
    same("get_device_map", ours.get_device_map(layers, devices), model_parallel_utils.get_device_map(layers, devices))
for device_map in ({0: [0, 1], 1: [2]}, {0: [0, 0, 1], 1: [2]}, {0: [0]}, {0: [0, 1, 2, 3]}):
    said = []
    for function in (ours.assert_device_map, model_parallel_utils.assert_device_map):
        try:
            function(device_map, 3)
            said.append(None)
        except ValueError as error:
            said.append(str(error))
    same("assert_device_map", *said)
print(len(checked), "comparisons equal")
'''


@pytest.mark.skipif((distribution_version("transformers") or (0,)) >= (4, 53),
                    reason="compares with transformers 4.x's own helpers (the pinned session holds 4.51.3); "
                           "SequenceSummary left modeling_utils in 4.53")
def test_each_helper_gives_what_transformers_4x_gives():
    result = run_python(COMPARE)
    assert_ok(result)
    assert result.stdout.strip().endswith("comparisons equal") and int(result.stdout.split()[-3]) == 60, result.stdout


@pytest.mark.skipif((distribution_version("transformers") or (0,)) < (5,), reason="the methods left with transformers 5")
def test_the_methods_are_back_on_every_model_and_leave_with_uninstall():
    result = run_python('''
import zeropatch, torch
from transformers import BertConfig, BertModel
from transformers.modeling_utils import ModuleUtilsMixin
model = BertModel(BertConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8))
mask = model.get_extended_attention_mask(torch.tensor([[1, 0]]), (1, 2))
# 4.x's device, positionally (the copies) and 5.0-5.12's dtype in its place (code written for those releases)
legacy = model.get_extended_attention_mask(torch.tensor([[1, 0]]), (1, 2), torch.device("cpu"))
half = model.get_extended_attention_mask(torch.tensor([[1, 0]]), (1, 2), torch.float16)
print(mask.tolist() == [[[[0.0, torch.finfo(torch.float32).min]]]] and torch.equal(mask, legacy),
      half.dtype, ModuleUtilsMixin.get_head_mask.__qualname__)
# where the release kept the method (5.0-5.12, without its device parameter), the patch wrapped it
kept = hasattr(vars(ModuleUtilsMixin)["get_extended_attention_mask"], "_self_wrapper")
zeropatch.uninstall("hf_model_utils")
method = vars(ModuleUtilsMixin).get("get_extended_attention_mask")
print(not hasattr(method, "_self_wrapper") if kept else method is None)
''')
    assert_ok(result)
    assert result.stdout == "True torch.float16 ModuleUtilsMixin.get_head_mask\nTrue\n", result.stdout


@pytest.mark.skipif((distribution_version("transformers") or (0,)) < (5,), reason="the methods left with transformers 5")
def test_check_names_the_calls_but_not_a_repository_s_own_method(tmp_path):
    """A repository that defines the method itself (BLIP's med.py gives its BertModel its own
    get_extended_attention_mask) calls its own: no line; the same calls in a copy without it are fixed."""
    copied, blip = tmp_path / "copied", tmp_path / "blip"
    for folder, method in ((copied, ""), (blip, "def get_extended_attention_mask(self, mask, shape, device, decoder):\n"
                                               "        return mask\n")):
        folder.mkdir()
        (folder / "med.py").write_text(
            "from transformers.modeling_utils import PreTrainedModel\n\n\n"
            "class BertModel(PreTrainedModel):\n"
            f"    {method}\n"
            "    def forward(self, ids, mask):\n"
            "        return self.get_extended_attention_mask(mask, ids.shape, ids.device, True)\n")
    found = {}
    for folder in (copied, blip):
        result = run_command([sys.executable, "-m", "zeropatch", "check", str(folder)])
        found[folder.name] = [line.split()[:2] for line in result.stdout.splitlines() if ".py:" in line]
    assert found == {"copied": [["fixed", "med.py:7"]], "blip": []}, found
