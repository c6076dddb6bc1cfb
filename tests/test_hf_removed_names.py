"""hf_removed_names on the installed transformers: each removed name is back with its last meaning, where the release
lacks it; the top-level names survive transformers re-creating its top-level module (transformers.trainer's import
does, through direct_transformers_import); a TRANSFORMERS_CACHE that downloads no longer honour is said; a diffusers
pipeline of the 0.2x releases loads on transformers 5."""

import os
import sys

import pytest

from conftest import (ROOT, assert_ok, clean_environment, distribution_version, reference_release, requires,
                      run_command, run_python)

REPRO = ROOT / "patches" / "hf_removed_names" / "repro.py"


@requires("torch", "transformers")
def test_fastchat_and_taming_imports_and_the_4_38_filter():
    result = run_command([sys.executable, "-m", "zeropatch", "run", "--", sys.executable, REPRO])
    assert_ok(result)
    assert "the filter equals 4.38's" in result.stdout, result.stdout


@requires("torch", "transformers")
def test_names_answer_as_their_last_release_did():
    result = run_python('''
import importlib, os, zeropatch, transformers
import transformers.trainer  # re-creates the top-level module: its names must still answer
from transformers import TRANSFORMERS_CACHE, PYTORCH_TRANSFORMERS_CACHE, is_torch_tpu_available
from transformers.file_utils import is_torch_tpu_available as from_file_utils
import transformers.deepspeed as shim
from transformers.integrations import deepspeed as home
from huggingface_hub import constants
assert (TRANSFORMERS_CACHE, PYTORCH_TRANSFORMERS_CACHE) == ("/elsewhere", constants.HF_HUB_CACHE), TRANSFORMERS_CACHE
assert is_torch_tpu_available() is from_file_utils() is (importlib.util.find_spec("torch_xla") is not None)
assert shim.HfDeepSpeedConfig is home.HfDeepSpeedConfig and len(shim.__all__) == 10, shim.__all__
print("OK")
''', env=clean_environment(TRANSFORMERS_CACHE="/elsewhere"))
    assert_ok(result)
    assert "OK" in result.stdout
    if distribution_version("transformers") >= (5,):  # 4.x itself still had the constants, and downloaded there
        assert "transformers 5 downloads to huggingface_hub's HF_HUB_CACHE" in result.stderr, result.stderr[-2000:]


@requires("torch", "transformers")
def test_model_mask_helpers_compute_what_4_34_computed():
    """The five model modules' _expand_mask / _make_causal_mask (4.34's; checked bit for bit against transformers
    4.31.0's own, whose helpers 4.34 kept, when written) against the masks spelt out element by element."""
    assert_ok(run_python('''
import itertools, torch, zeropatch
from transformers.models.llama.modeling_llama import _expand_mask, _make_causal_mask
from transformers.models.opt import modeling_opt
from transformers.models.clip.modeling_clip import _expand_mask as clip_expand_mask
assert _expand_mask is not clip_expand_mask and clip_expand_mask.__module__ == "transformers.models.clip.modeling_clip"
torch.manual_seed(0)
for dtype, target, past in itertools.product((torch.float32, torch.bfloat16, torch.float16), (None, 1, 5), (0, 3)):
    lowest = torch.finfo(dtype).min
    mask = torch.randint(0, 2, (3, 7))
    expanded = _expand_mask(mask, dtype, target)
    rows = target or 7
    assert expanded.dtype == dtype and expanded.shape == (3, 1, rows, 7), expanded.shape
    for b, i, j in itertools.product(range(3), range(rows), range(7)):
        assert expanded[b, 0, i, j].item() == (0.0 if mask[b, j] else lowest), (b, i, j)
    assert torch.equal(clip_expand_mask(mask.bool(), dtype, target), expanded)
    length = target or 4
    causal = modeling_opt._make_causal_mask(torch.Size((2, length)), dtype, "cpu", past)
    assert causal.dtype == dtype and causal.shape == (2, 1, length, past + length), causal.shape
    for b, i, j in itertools.product(range(2), range(length), range(past + length)):
        assert causal[b, 0, i, j].item() == (0.0 if j <= past + i else lowest), (b, i, j)
print("OK")
'''))


@requires("torch", "transformers")
def test_no_init_weights_builds_models_uninitialised_as_4_49_did():
    """modeling_utils.no_init_weights (5.0 moved it to transformers.initialization; 4.50 dropped ``_enable``): inside
    it a model is built without drawing its weights (no random number is consumed; loading fills them afterwards), and
    with ``_enable=False`` (4.49's switch, where zeropatch puts the name back) it is built exactly as outside."""
    assert_ok(run_python('''
import inspect, torch, zeropatch, transformers
from transformers import LlamaConfig, LlamaForCausalLM
from transformers import modeling_utils
from transformers.modeling_utils import no_init_weights
config = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2)
torch.manual_seed(0)
reference = LlamaForCausalLM(config).state_dict()
torch.manual_seed(0)
state = torch.random.get_rng_state()
with no_init_weights():
    LlamaForCausalLM(config)
assert torch.equal(torch.random.get_rng_state(), state), "weights were drawn inside no_init_weights()"
torch.manual_seed(0)
outside = torch.nn.Linear(4, 4).weight.clone()
torch.manual_seed(0)
assert torch.equal(torch.nn.Linear(4, 4).weight, outside), "initialisation did not come back after the block"
if "_enable" in inspect.signature(no_init_weights).parameters:  # 4.49's contract (zeropatch's on transformers 5)
    torch.manual_seed(0)
    with no_init_weights(_enable=False):
        built = LlamaForCausalLM(config).state_dict()
    assert all(torch.equal(built[name], value) for name, value in reference.items())
    with no_init_weights(True):
        assert LlamaForCausalLM(config) is not None
if transformers.__version__ >= "5":
    assert no_init_weights.__module__ == "transformers.modeling_utils" and "no_init_weights" not in dir(modeling_utils)
print("OK")
'''))


def legacy_diffusers_path():
    """Where a diffusers that imports FLAX_WEIGHTS_NAME (<= 0.35.1) comes from: the old release a session installs
    beside today's (0.24, Latte's pin), else the installed one if it is that old."""
    folder = reference_release("diffusers")
    if folder is None and not (distribution_version("diffusers") or (1,)) < (0, 35, 2):
        pytest.skip("no diffusers <= 0.35.1 here (today's session installs 0.24 beside its own)")
    return os.pathsep.join(filter(None, [folder, str(ROOT)]))


@requires("torch", "transformers", "diffusers")
def test_a_2023_diffusers_pipeline_loads_on_transformers_5():
    """diffusers <= 0.35.1 imports transformers.utils.FLAX_WEIGHTS_NAME when a pipeline is first asked for: on
    transformers 5 `from diffusers import DiffusionPipeline` stops there (hf_hub_legacy on, without which it stops
    earlier on huggingface_hub >= 1.0). With hf_removed_names too, a pipeline saved and loaded again has its weights."""
    code = '''
import tempfile, torch, diffusers
from diffusers import DDPMPipeline, DDPMScheduler, DiffusionPipeline, UNet2DModel
torch.manual_seed(0)
unet = UNet2DModel(sample_size=8, in_channels=1, out_channels=1, block_out_channels=(8, 8), norm_num_groups=4,
                   down_block_types=("DownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "UpBlock2D"))
with tempfile.TemporaryDirectory() as folder:
    DDPMPipeline(unet=unet, scheduler=DDPMScheduler(num_train_timesteps=10)).save_pretrained(folder)
    loaded = DiffusionPipeline.from_pretrained(folder)
assert all(torch.equal(a, b) for a, b in zip(loaded.unet.state_dict().values(), unet.state_dict().values()))
print("loaded with diffusers", diffusers.__version__)
'''
    path = legacy_diffusers_path()
    without = run_python(code, env=clean_environment(ZEROPATCH="hf_hub_legacy", PYTHONPATH=path))
    if distribution_version("transformers") >= (5,):
        assert without.returncode != 0
        error = "cannot import name 'FLAX_WEIGHTS_NAME' from 'transformers.utils'"
        assert error in without.stderr, without.stderr[-2000:]
    else:  # 4.x still has the name: the pipeline loads without the patch
        assert_ok(without)
    result = run_python(code, env=clean_environment(ZEROPATCH="hf_hub_legacy,hf_removed_names", PYTHONPATH=path))
    assert_ok(result)
    assert "loaded with diffusers 0." in result.stdout, result.stdout


@requires("torch", "transformers")
def test_the_2021_training_arguments_decorators_behave_as_their_last_release():
    """SimCSE's TrainingArguments subclass: ``@cached_property @torch_required def _setup_devices``, read through its
    ``device``; each decorator as its last release had it (4.56's cached_property: computed at the first read, kept as
    ``__cached_<name>``, None computed again; 4.25's torch_required: the method, or an ImportError without torch), one
    object wherever it is imported from, named as its home module's, out of ``dir()``. Where the installed release
    still has cached_property (4.51.3 in the 0.4.0 session), zeropatch's is compared with it, read for read. Its
    Trainer subclass's ``default_hp_space[backend]``: each backend's own default search space."""
    assert_ok(run_python('''
import pickle, zeropatch
import transformers.utils as utils
from dataclasses import dataclass, field
from transformers import TrainingArguments
from transformers.file_utils import cached_property, torch_required
from transformers.utils.import_utils import torch_required as home_torch_required
from zeropatch.patches.transformers import hf_removed_names as patch

assert torch_required is home_torch_required and pickle.loads(pickle.dumps(torch_required)) is torch_required
assert "torch_required" not in dir(utils) and torch_required.__module__ == "transformers.utils.import_utils"
mine = patch.cached_property

def reads(descriptor):
    class Counted:
        calls = 0
        def compute(self):
            Counted.calls += 1
            return self.answer
        value = descriptor(compute)
    counted = Counted()
    seen = []
    for answer in (None, None, "cpu", "cuda"):
        counted.answer = answer
        seen.append((counted.value, Counted.calls))
    del counted.__dict__["__cached_compute"]
    seen.append((counted.value, Counted.calls, sorted(vars(counted))))
    return seen, Counted.value is Counted.__dict__["value"]

assert reads(mine) == ([(None, 1), (None, 2), ("cpu", 3), ("cpu", 3), ("cuda", 4, ["__cached_compute", "answer"])],
                       True), reads(mine)
assert reads(cached_property) == reads(mine)  # the library's own where the installed release still has it

@dataclass
class SimCSEArguments(TrainingArguments):
    eval_transfer: bool = field(default=False)

    @cached_property
    @torch_required
    def _setup_devices(self):
        return "set up once"

arguments = SimCSEArguments(output_dir="out")
assert arguments._setup_devices == "set up once" and arguments.__dict__["__cached__setup_devices"] == "set up once"
assert SimCSEArguments._setup_devices.fget.__name__ == "_setup_devices"

import transformers.trainer_utils as trainer_utils
from transformers.trainer_utils import HPSearchBackend, default_hp_space
assert default_hp_space[HPSearchBackend("optuna")] is trainer_utils.default_hp_space_optuna
assert set(default_hp_space) == {backend for backend in HPSearchBackend
                                 if hasattr(trainer_utils, f"default_hp_space_{backend.value}")} >= {
                                     HPSearchBackend.OPTUNA, HPSearchBackend.RAY, HPSearchBackend.WANDB}
assert "default_hp_space" not in dir(trainer_utils)
print("OK")
'''))


@requires("torch", "transformers")
def test_the_example_scripts_telemetry_sends_nothing_and_vision_2_seq_is_4_57s_table():
    """Where the release still has AutoModelForVision2Seq (4.x: the pinned session's 4.51.3), its own table is part of
    ours, class for class (4.57 added four types); where it lacks it, ours builds what 4.57 built and refuses what it
    refused; send_example_telemetry returns None without calling the hub's telemetry."""
    result = run_python('''
import zeropatch, huggingface_hub.utils
def no_telemetry(*args, **kwargs):
    raise SystemExit("telemetry sent")
huggingface_hub.utils.send_telemetry = no_telemetry
from transformers.models.auto import modeling_auto
from zeropatch.patches.transformers.hf_removed_names import VISION_2_SEQ
ours = dict(VISION_2_SEQ)
if hasattr(modeling_auto, "MODEL_FOR_VISION_2_SEQ_MAPPING_NAMES"):
    own = modeling_auto.MODEL_FOR_VISION_2_SEQ_MAPPING_NAMES
    assert all(ours.get(model) == name for model, name in own.items()), set(own.items()) - set(ours.items())
    raise SystemExit(print("compared", len(own)))
from transformers.utils import send_example_telemetry
assert send_example_telemetry("run_glue", object(), framework="pytorch") is None
from transformers import AutoModelForVision2Seq, BertConfig, BlipConfig
mapping = AutoModelForVision2Seq._model_mapping
assert sorted(config.model_type for config in mapping.keys()) == sorted(ours), sorted(ours)
assert all(model.__name__ == ours[config.model_type] for config, model in mapping.items())
try:
    AutoModelForVision2Seq.from_config(BertConfig())
    raise SystemExit("a BERT configuration was taken")
except ValueError as error:
    assert "Unrecognized configuration class" in str(error), error
tiny = dict(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16)
config = BlipConfig(text_config=dict(tiny, vocab_size=50, max_position_embeddings=16),
                    vision_config=dict(tiny, image_size=32, patch_size=16), projection_dim=16)
print(type(AutoModelForVision2Seq.from_config(config)).__name__, AutoModelForVision2Seq.__module__)
''')
    assert_ok(result)
    if distribution_version("transformers") < (5,):
        assert result.stdout.startswith("compared "), result.stdout
    else:
        assert result.stdout.split()[-2:] == ["BlipForConditionalGeneration", "transformers.models.auto.modeling_auto"], \
            result.stdout
