"""The ordering matrix, each case in a fresh interpreter, for every patch on its real target: zeropatch activated
before the target (start-up hook plus an explicit `import zeropatch`) and after it; install -> uninstall -> install;
`importlib.reload` of the target; two patches on the same class or target, uninstalled in either order; and a
failure injected half-way through `apply`, which must leave nothing changed. After every step the target works
(a small check per patch) and `status()` is true: `applied` exactly when every change the patch made is in place,
and after `uninstall` every original is back, by identity.

The test sessions run the per-patch cases for COVER, the fewest patches that between them change a library in every
way a patch can (each Patcher method, and providing a module): the orderings are the Patcher's and the import
watcher's, the same code for every patch. The release sweep runs every patch's cases on each release of its stack
(tools/sweep.py, by node id), and the other patches' cases carry the ``release_sweep`` mark, which the test sessions
leave out. Every patch's repro runs in the test sessions under a real ``zeropatch run`` (zeropatch before the target).
"""

import re

import pytest

from conftest import ROOT, assert_ok, clean_environment, installed, required_targets, run_python

pytestmark = pytest.mark.fresh_interpreter  # the orderings are the point: every case starts a real interpreter

LEGACY_EMA = ROOT / "patches" / "param_store"
SINGLE_RANK = 'os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="0")'

ATTENTION = "import torch; q = torch.ones(1, 1, 2, 4); torch.nn.functional.scaled_dot_product_attention(q, q, q)"

# name: (modules needed, modules to import (the targets), a check that the target works, whether reloading the
#        target is a thing its library survives)
CASES = {
    "param_store": (("colossalai",), ("colossalai.zero.low_level.low_level_optim",),
                    "import inspect; from colossalai.zero.low_level.low_level_optim import LowLevelZeroOptimizer as O; "
                    "assert 'optimizer' in inspect.signature(O.__init__).parameters", True),
    "pg_deepcopy": (("torch",), ("torch.distributed",),
                    "import copy, torch; t = torch.ones(2); assert torch.equal(copy.deepcopy(t), t)", False),
    "gloo_exit": (("torch",), ("torch.distributed",), "import torch.distributed as d; assert d.is_available()", False),
    "param_names": (("deepspeed",), ("deepspeed.runtime.engine",),
                    "from deepspeed.runtime.engine import DeepSpeedEngine as E; assert callable(E.save_checkpoint)", True),
    "fused_ema": (("torch",), ("opensora_v1",),
                  "import copy, torch, opensora_v1 as m; a = torch.nn.Linear(2, 2); e = copy.deepcopy(a).requires_grad_(False); "
                  "torch.nn.init.zeros_(e.weight); m.update_ema(e, a, decay=0.5, sharded=False); "
                  "torch.testing.assert_close(e.weight, a.weight * 0.5)", True),
    "ds_scheduler": (("accelerate", "torch"), ("accelerate.utils.deepspeed",),
                     "import torch; o = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=1); "
                     "s = torch.optim.lr_scheduler.LambdaLR(o, lambda step: 0.5); assert type(s).__name__ == 'LambdaLR'", True),
    "ds_config_keys": (("deepspeed",), ("deepspeed.runtime.config",),
                       "from deepspeed.runtime.config import DeepSpeedConfig as C; assert C({'train_batch_size': 2}).train_batch_size == 2",
                       True),
    "ds_module_cast": (("deepspeed",), ("deepspeed.runtime.engine",),
                       "from deepspeed.runtime.engine import DeepSpeedEngine as E; assert callable(E._configure_distributed_model)",
                       True),
    "ds_launcher_env": (("deepspeed",), ("deepspeed.launcher.runner",),
                        "import deepspeed.launcher.runner as r; assert 'PYTHON' in r.EXPORT_ENVS", True),
    "colossalai_legacy_api": (("colossalai",), ("colossalai.tensor", "colossalai.zero"),
                              "import inspect; from colossalai.zero import zero_optim_wrapper as w; "
                              "assert 'optimizer' in inspect.signature(w).parameters", False),
    "colossalai_lr_scheduler": (("colossalai",), ("colossalai.interface.optimizer",),
                                "import torch; o = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=1); "
                                "assert torch.optim.lr_scheduler.StepLR(o, 1).optimizer is o", True),
    "colossalai_cpu": (("colossalai",), ("colossalai.zero.low_level.low_level_optim", "colossalai.kernel.kernel_loader"),
                       "from colossalai.kernel.kernel_loader import CPUAdamLoader; assert callable(CPUAdamLoader.load)", True),
    "torchvision_video": (("torchvision",), ("torchvision.io",), "import torchvision.io as io; assert callable(io.read_image)", True),
    "colossalai_kwargs": (("colossalai",), ("colossalai.initialize", "colossalai.shardformer.shard.shard_config"),
                          "from colossalai.shardformer import ShardConfig; ShardConfig(enable_tensor_parallelism=False)", True),
    "hf_post_init": (("transformers",), ("transformers.modeling_utils",),
                     "from transformers import BertConfig, BertModel; BertModel(BertConfig(hidden_size=8, num_hidden_layers=1, "
                     "num_attention_heads=2, intermediate_size=8))", False),
    "t5_apex_norm": (("transformers",), ("transformers.models.t5.modeling_t5",),
                     "from transformers import T5Config, T5EncoderModel; T5EncoderModel(T5Config(vocab_size=8, d_model=8, d_kv=4, "
                     "d_ff=8, num_layers=1, num_heads=2))", True),
    "shardformer_t5": (("colossalai", "transformers"), ("colossalai.shardformer.modeling.t5", "colossalai.shardformer.policies.t5"),
                       "from colossalai.shardformer.modeling.t5 import get_jit_fused_T5_layer_ff_forward as g; assert callable(g())",
                       False),
    "pandas_groupby_names": (("pandas",), ("pandas.core.window.expanding", "pandas.core.window.rolling"),
                             "import pandas as pd; f = pd.DataFrame({'k': [1, 1, 2], 'v': [1, 2, 3]}); "
                             "assert f.groupby('k').v.rolling(2).sum().tolist()[1] == 3", True),
    "accelerate_kwargs": (("accelerate",), ("accelerate.accelerator",),
                          "from accelerate import Accelerator; assert Accelerator().num_processes == 1", True),
    "hf_frozen_params": (("transformers",), ("transformers.modeling_utils",),
                         "from transformers import BertConfig, BertModel; BertModel(BertConfig(hidden_size=8, "
                         "num_hidden_layers=1, num_attention_heads=2, intermediate_size=8))", False),
    "hf_checkpoint_dtype": (("transformers",), ("transformers.modeling_utils", "transformers.models.auto.modeling_auto"),
                            "from transformers import BertConfig, BertModel; BertModel(BertConfig(hidden_size=8, "
                            "num_hidden_layers=1, num_attention_heads=2, intermediate_size=8))", False),
    "bnb_optimizer_args": (("bitsandbytes",), ("bitsandbytes.optim",),
                           "import torch, bitsandbytes as bnb; bnb.optim.AdamW8bit(torch.nn.Linear(2, 2).parameters())",
                           False),
    "hf_load_in_8bit": (("transformers",), ("transformers.modeling_utils",),
                        "import transformers.modeling_utils as m; assert callable(m.PreTrainedModel.from_pretrained)", False),
    "hf_training_args": (("transformers",), ("transformers.hf_argparser", "transformers.training_args"),
                         "from transformers import HfArgumentParser, TrainingArguments; "
                         "HfArgumentParser((TrainingArguments,)).parse_dict({'output_dir': 'x', 'eval_strategy': 'no'})", False),
    "hf_fsdp_version": (("transformers",), ("transformers.training_args",),
                        "from transformers import TrainingArguments as A; A(output_dir='x', report_to='none')",
                        False),
    "python_removed_modules": ((), ("imp", "distutils.version"),
                               "import importlib, json; assert importlib.reload(json) is json", False),
    "python_dataclass_defaults": ((), ("dataclasses",),
                                  "import dataclasses; C = dataclasses.make_dataclass('C', [('x', list, "
                                  "dataclasses.field(default_factory=list))]); assert C().x == [] and C().x is not C().x",
                                  False),
    "python_bracketed_host": (("torch",), ("torch.distributed.rendezvous",),
                              "import sys, torch.distributed.rendezvous; from urllib.parse import urlsplit; "
                              "r = sys.modules['torch.distributed.rendezvous']; "
                              "assert r._rendezvous_helper.__name__ == '_rendezvous_helper' and "
                              "urlsplit('tcp://[::1]:1').hostname == '::1'", True),
    "moved_names": (("transformers",), ("transformers",),
                    "from transformers.modeling_utils import PreTrainedModel; import transformers; "
                    "assert transformers.BertConfig.__name__ == 'BertConfig'", False),
    "python_removed_names": ((), ("collections", "inspect", "fractions", "base64", "threading"),
                             "import collections.abc, inspect; assert inspect.getfullargspec(lambda a, *, b: 0).kwonlyargs == "
                             "['b'] and isinstance({}, collections.abc.Mapping)", False),
    "hf_safe_serialization": (("transformers",), ("transformers.modeling_utils", "transformers.trainer"),
                              "from transformers import PreTrainedModel, Trainer; assert callable(Trainer._save)", False),
    "hf_trainer_tokenizer": (("transformers",), ("transformers.trainer", "transformers.trainer_seq2seq"),
                             "from transformers import Trainer; assert callable(Trainer.train)", False),
    "hf_trainer_overrides": (("transformers",), ("transformers.trainer",),
                             "from transformers import Trainer; assert callable(Trainer.train)", False),
    "hf_llama_bos_default": (("transformers",), ("transformers.models.llama.tokenization_llama",),  # as the next
                             "from transformers import LlamaTokenizerFast as T; assert callable(T.from_pretrained)",
                             True),
    "hf_llama_byte_level": (("transformers",), ("transformers.models.llama.tokenization_llama",),  # 4.x: +sentencepiece
                            "from transformers import LlamaTokenizerFast as T; assert callable(T.from_pretrained)",
                            True),
    "hf_flash_attention_2": (("transformers",), ("transformers.modeling_utils",),
                             "from transformers import LlamaConfig as C, LlamaForCausalLM as M; M(C(hidden_size=8, "
                             "intermediate_size=8, num_hidden_layers=1, num_attention_heads=2, vocab_size=8))", False),
    "hf_trainer_names": (("transformers",), ("transformers.trainer",),
                         "from transformers.trainer import get_parameter_names, has_length", False),
    "hf_generate_cache_name": (("transformers",), ("transformers.generation.utils",),
                               "from transformers.generation.utils import GenerationMixin as G; assert callable(G.generate)",
                               False),
    "hf_generation_mixin": (("transformers",), ("transformers.modeling_utils",),
                            "from transformers import BertConfig, BertModel; BertModel(BertConfig(hidden_size=8, "
                            "num_hidden_layers=1, num_attention_heads=2, intermediate_size=8))", False),
    "hf_generate_position_ids": (("transformers",), ("transformers.generation.utils",),
                                 "from transformers.generation.utils import GenerationMixin as G; assert callable(G.generate)",
                                 False),
    "hf_generate_tuple_cache": (("transformers",), ("transformers.generation.utils",),
                                "from transformers.generation.utils import GenerationMixin as G; assert callable(G.generate)",
                                False),
    "hf_attn_mask_utils": (("transformers",), ("transformers.modeling_attn_mask_utils",),
                           "import transformers; assert transformers.__version__", False),
    "hf_cache_legacy_api": (("transformers",), ("transformers.cache_utils",),
                            "from transformers.cache_utils import DynamicCache; assert DynamicCache().get_seq_length() == 0",
                            False),
    "hf_rope_scaling": (("transformers",), ("transformers.configuration_utils",),
                        "from transformers import LlamaConfig; LlamaConfig(hidden_size=8, num_attention_heads=2)", False),
    "hf_removed_names": (("transformers",), ("transformers", "transformers.deepspeed", "transformers.generation.utils",
                                              "transformers.utils", "transformers.utils.hub", "transformers.file_utils"),
                         "import transformers.utils.hub as hub; assert hub.cached_file", False),
    "hf_additional_special_tokens": (("transformers",), ("transformers.tokenization_utils_base",),
                                     "from transformers import BertTokenizer as T; assert T.SPECIAL_TOKENS_ATTRIBUTES and "
                                     "callable(T.add_special_tokens)", False),
    "hf_model_utils": (("transformers",), ("transformers.modeling_utils", "transformers.pytorch_utils",
                                           "transformers.utils.model_parallel_utils"),
                       "from transformers import BertConfig, BertModel; BertModel(BertConfig(hidden_size=8, "
                       "num_hidden_layers=1, num_attention_heads=2, intermediate_size=8))", False),
    "transformers_adamw": (("transformers",), ("transformers", "transformers.optimization"),
                           "import torch, transformers.optimization as o; o.get_linear_schedule_with_warmup("
                           "torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=1), 1, 2)", False),
    "torch_load": (("torch",), ("torch",), "import io, torch; b = io.BytesIO(); torch.save({'a': torch.ones(1)}, b); "
                   "b.seek(0); assert torch.load(b)['a'].sum() == 1", False),
    "numpy_aliases": (("numpy",), ("numpy",), "import numpy as np; assert np.zeros(2).sum() == 0", False),
    "torchvision_functional_tensor": (("torchvision",), ("torchvision.transforms.functional_tensor",),
                                      "import torchvision.transforms.functional as F, torch; F.hflip(torch.ones(1, 2, 2))", False),
    "peft_int8_training": (("peft",), ("peft",), "import peft; assert callable(peft.get_peft_model)", False),
    "peft_adapter_bin": (("peft",), ("peft.peft_model",),
                         "from peft import PeftModel; assert callable(PeftModel.save_pretrained)", False),
    "torchvision_get_image_size": (("torchvision",), ("torchvision.transforms.functional",),
                                   "import torchvision.transforms.functional as F, torch; F.hflip(torch.ones(1, 2, 2))",
                                   False),
    "torchaudio_backends": (("torchaudio",), ("torchaudio",), "import torchaudio, torch; "
                            "assert torchaudio.functional.gain(torch.ones(1, 2), 0.0).sum() == 2", False),
    "torchvision_model_urls": (("torchvision",), ("torchvision.models.utils", "torchvision.models.resnet"),
                               "import torchvision.models as m; assert m.resnet18().fc.out_features == 1000", False),
    "pkg_resources": ((), ("pkg_resources",), "import importlib.metadata as m; assert m.version('wrapt')", False),
    "local_rank_arg": ((), ("argparse",), "import argparse; p = argparse.ArgumentParser(); p.add_argument('--x'); "
                       "assert p.parse_args(['--x', '1']).x == '1'", True),
    "mmcv_yapf": (("yapf",), ("yapf.yapflib.yapf_api",),
                  "from yapf.yapflib.yapf_api import FormatCode; assert FormatCode('x=1\\n')[0] == 'x = 1\\n'", True),
    "torch_six": (("torch",), ("torch._six",), "import torch; assert torch.ones(1).sum() == 1", False),
    "torch_removed_names": (("torch",), ("torch._utils", "torch.autograd.profiler", "torch.profiler.profiler"),
                            "import torch; assert torch.utils.data.random_split(range(4), [3, 1])[0].indices and "
                            "torch.autograd.profiler.profile(use_device=None).use_device is None", False),
    "torch_stft_real": (("torch",), ("torch",), "import torch; w = torch.ones(4); assert torch.stft(torch.ones(8), 4, "
                        "window=w, return_complex=True).is_complex() and torch.ones(8).stft(4, window=w, "
                        "return_complex=False).shape[-1] == 2", False),
    "hf_hub_legacy": (("huggingface_hub",), ("huggingface_hub", "huggingface_hub.constants",
                                              "huggingface_hub.utils._validators"),
                      "import huggingface_hub as h; assert h.hf_hub_url('a/b', 'c').endswith('/a/b/resolve/main/c')", False),
    "transformers_use_auth_token": (("transformers",), ("transformers.modeling_utils", "transformers.configuration_utils",
                                                       "transformers.models.auto.auto_factory"),
                                    "from transformers import BertConfig; assert BertConfig(hidden_size=8).hidden_size == 8",
                                    False),
    "transformers_shard_checkpoint": (("transformers",), ("transformers.modeling_utils",),
                                      "import transformers.modeling_utils as m; assert callable(m.PreTrainedModel.from_pretrained)",
                                      False),
    "diffusers_gradient_checkpointing": (("diffusers",), ("diffusers.models.modeling_utils",),
                                         "from diffusers.models.modeling_utils import ModelMixin; assert ModelMixin.enable_gradient_checkpointing",
                                         False),
    "diffusers_legacy_names": (("diffusers",), ("diffusers.models.embeddings", "diffusers.models.attention_processor"),
                               "from diffusers.models.embeddings import PatchEmbed; PatchEmbed(height=4, width=4, patch_size=2, in_channels=1, embed_dim=4)",
                               False),
    "timm_legacy_api": (("timm",), ("timm.models.vision_transformer", "timm.optim.optim_factory"),
                        "import torch, timm.models.vision_transformer as v; assert v.Block(8, 2)(torch.ones(1, 2, 8)).shape == (1, 2, 8)",
                        False),
    "timm_optimizers": (("timm",), ("timm.optim", "timm.optim.nadam", "timm.optim.radam"),
                        "import torch, timm.optim as o; o.AdamP([torch.nn.Parameter(torch.ones(2))]).step()", False),
    "timm_legacy_optimizers": (("timm",), ("timm.optim",),  # (its factory's module since 1.0.12 with it)
                               "import torch, timm.optim as o; o.create_optimizer_v2(torch.nn.Linear(2, 2), 'radam').step()",
                               False),
    "timm_layers": (("timm",), ("timm.models.layers.helpers",),
                    "from timm.models.layers import to_2tuple; assert to_2tuple(2) == (2, 2)", False),
    "pillow_aliases": (("PIL",), ("PIL.Image", "PIL.ImageDraw", "PIL.ImageFont"),
                       "from PIL import Image, ImageDraw; d = ImageDraw.Draw(Image.new('L', (8, 8))); "
                       "assert d.textbbox((0, 0), 'a')[2] > 0", False),
    "openai_object": (("openai",), ("openai.openai_object",), "import openai; assert openai.__version__", False),
    "datasets_load_metric": (("datasets",), ("datasets", "datasets.load"),
                             "import datasets; assert callable(datasets.load_dataset)", False),
    "datasets_use_auth_token": (("datasets",), ("datasets.load", "datasets"),
                                "import inspect, datasets; assert all('path' in inspect.signature(f).parameters for f in "
                                "(datasets.load_dataset, datasets.load.load_dataset_builder))", False),
    "omegaconf_legacy_api": (("omegaconf",), ("omegaconf",),
                             "from omegaconf import OmegaConf; assert OmegaConf.create({'a': 1}).a == 1", False),
    "yaml_load": (("yaml",), ("yaml",), "import yaml; assert yaml.safe_load('a: [1]') == {'a': [1]}", True),
    "xformers_fallback": (("xformers",), ("xformers.ops.fmha", "xformers.ops"),
                          "from xformers.ops import fmha; assert fmha.BlockDiagonalMask.from_seqlens([2]).q_seqinfo", False),
    "xformers_sdpa": (("torch",), ("xformers.ops",), ATTENTION, False),
    "flash_attn_sdpa": (("torch",), ("flash_attn",), ATTENTION, False),
    "pl_trainer_args": (("pytorch_lightning",), ("pytorch_lightning.trainer.trainer", "pytorch_lightning.core.datamodule"),
                        "import pytorch_lightning as pl; assert callable(pl.Trainer.fit)", False),
    "pl_legacy_hooks": (("pytorch_lightning",), ("pytorch_lightning.trainer.call", "pytorch_lightning.trainer.trainer",
                                                 "pytorch_lightning.loops.fit_loop"),
                        "from pytorch_lightning.trainer import call; assert callable(call._call_callback_hooks)", False),
    "pl_multiple_optimizers": (("pytorch_lightning",), ("pytorch_lightning.core.optimizer",
                                                        "pytorch_lightning.loops.optimization.automatic",
                                                        "pytorch_lightning.loops.training_epoch_loop",
                                                        "pytorch_lightning.trainer.call"),
                               "from pytorch_lightning.core import optimizer; assert callable(optimizer._configure_optimizers)",
                               False),
    "pl_moved_names": (("pytorch_lightning",), ("pytorch_lightning.utilities.distributed", "pytorch_lightning.loggers",
                                                "pytorch_lightning.utilities.seed"),
                       "import pytorch_lightning.loggers as loggers; assert loggers.TensorBoardLogger", False),
    "cpu_rehearsal": (("torch", "accelerate", "transformers", "pytorch_lightning"),
                      ("torch", "accelerate.state", "transformers.models.t5.modeling_t5", "transformers.training_args",
                       "pytorch_lightning.trainer.connectors.accelerator_connector", "lightning_fabric.connector",
                       "torch.distributed.fsdp.fully_sharded_data_parallel", "transformers.modeling_utils"),
                      "import torch; assert torch.nn.Linear(2, 2)(torch.ones(1, 2)).device.type == 'cpu'", False),
}
OPT_IN = {"colossalai_cpu", "xformers_sdpa", "flash_attn_sdpa", "cpu_rehearsal"}
PROVIDES = {"openai_object", "torch_six", "torchvision_functional_tensor", "pkg_resources", "xformers_sdpa", "flash_attn_sdpa",
            "timm_layers", "pl_moved_names", "hf_removed_names", "torchvision_model_urls", "hf_attn_mask_utils",
            "python_removed_modules", "hf_model_utils"}  # their targets exist only while the patch is installed: "target first" imports the parent

# a legacy pin of the target that imports only with another patch (diffusers 0.24 on huggingface_hub >= 1.0)
NEEDS_ANOTHER_PATCH = {"diffusers_gradient_checkpointing": "diffusers", "diffusers_legacy_names": "diffusers"}
PROVIDED_PACKAGES = ("xformers", "flash_attn", "distutils")  # whole packages provided: no parent exists before


def _ways():
    """patch -> the ways its module changes a library: each Patcher method it calls, and whether it provides modules
    (read from the declarations and the patch sources)."""
    from zeropatch._index import PATCHES

    declared = {declaration["name"]: declaration for _, declaration in PATCHES}
    found = {}
    for path in sorted((ROOT / "zeropatch" / "patches").glob("*/*.py")):
        if path.stem in declared:
            methods = set(re.findall(r"patcher\.(\w+)\(", path.read_text()))
            found[path.stem] = {*methods, "provides a module" if declared[path.stem]["provides"] else "in place"}
    return found


def _cover(found):
    """The fewest patches, chosen greedily in name order, that hold every way of ``found`` between them."""
    ways = set().union(*found.values())
    chosen = []
    while ways:
        best = max(sorted(found), key=lambda name: len(found[name] & ways))
        chosen.append(best)
        ways -= found[best]
    return set(chosen)


COVER = _cover(_ways())
PER_PATCH = [name if name in COVER else pytest.param(name, marks=pytest.mark.release_sweep) for name in CASES]

HELPERS = f'''
import importlib, os, sys
sys.path.insert(0, {str(LEGACY_EMA)!r})
{SINGLE_RANK}

def works(check):
    exec(check, {{}})

def truth(name):
    """status() agrees with what the patch changed; returns the state."""
    from zeropatch import _core
    entry = _core._registry()[name]
    record = _core.status(name)[0]
    if record.state == "applied":
        assert entry.patchers, record
        assert not any(patcher.replaced() for patcher in entry.patchers.values()), record
    else:
        assert not entry.patchers, record
    return record.state

def changes(name):
    from zeropatch import _core
    return [change for patcher in _core._registry()[name].patchers.values() for change in patcher.changes()]

def assert_reverted(recorded, undone=()):
    """Every change in ``recorded`` is undone. ``undone``: the values another patch set, uninstalled before: an
    original that was one of them (this patch stacked on it) is what that one wrapped."""
    from zeropatch._core import _ABSENT
    from zeropatch._patcher import ModuleGetter
    for owner, attr, original, value in recorded:
        while any(original is other for other in undone):
            original = original.__wrapped__
        current = vars(owner).get(attr, _ABSENT)
        while current is not original and current is not value and (
                hasattr(current, "_self_wrapper") or isinstance(current, ModuleGetter)):
            # another patch's wrapper (or module __getattr__), still on: the original must be right under it
            current = current.previous if isinstance(current, ModuleGetter) else current.__wrapped__
            current = _ABSENT if current is None else current  # a getter now on its own: the module had none
        if attr == "__new__" and current is not original:   # documented: CPython cannot take a __new__ back off a class
            from zeropatch.patches.accelerate.ds_scheduler import pass_through_new
            assert current is pass_through_new, (owner, attr)
            continue
        assert current is original, (owner, attr)
'''


def environment():
    return clean_environment(ZEROPATCH_EMA_TARGETS="opensora_v1:update_ema")


def case(name):
    needs, targets, check, reloadable = CASES[name]
    missing = [module for module in needs if not installed(module)]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}")
    if name in NEEDS_ANOTHER_PATCH and run_python(f"import {NEEDS_ANOTHER_PATCH[name]}",
                                                 env=clean_environment(ZEROPATCH="0")).returncode != 0:
        pytest.skip(f"{NEEDS_ANOTHER_PATCH[name]} does not import here without another patch")
    return targets, check, reloadable


def imported_before(name, targets):
    """What "the target first" imports before zeropatch: the targets, or for a provided module its parent package."""
    if name not in PROVIDES:
        return targets
    parents = (target.rpartition(".")[0] for target in targets if "." in target)
    return tuple(parent for parent in parents if parent.split(".")[0] not in PROVIDED_PACKAGES)


def test_the_matrix_covers_every_patch():
    from zeropatch._core import valid_names

    assert set(CASES) == set(valid_names())


@pytest.mark.parametrize("name", PER_PATCH)
def test_zeropatch_first_then_cycle_and_reload(name):
    targets, check, reloadable = case(name)
    selection = f"all,{name}" if name in OPT_IN else name
    env = dict(environment(), ZEROPATCH=selection)  # the start-up hook activates it before anything is imported
    hooked = bool(required_targets())  # a nox session: the regular install's start-up hook is there
    assert_ok(run_python(HELPERS + f'''
assert "zeropatch" in sys.modules or not {hooked!r}, "the start-up hook did not activate zeropatch"
import zeropatch                                    # an explicit import on top of the start-up hook: one install
name, check = {name!r}, {check!r}
modules = [importlib.import_module(target) for target in {targets!r}]
state = truth(name)
works(check)
recorded = changes(name)
zeropatch.uninstall(name)
assert truth(name) == "disabled"
assert_reverted(recorded)
works(check)
zeropatch.install(name)
modules = [importlib.import_module(target) for target in {targets!r}]  # a provided module must be imported again
assert truth(name) == state, (truth(name), state)
works(check)
if {reloadable!r}:
    for module in modules:
        importlib.reload(module)
    assert truth(name) == state, (truth(name), state)  # renewed on the reloaded module
    works(check)
    zeropatch.uninstall(name)
    assert_reverted(changes(name))
    works(check)
print(name, state)
''', env=env, step=f"{name}: zeropatch first"))


@pytest.mark.parametrize("name", PER_PATCH)
def test_target_first_then_zeropatch_then_a_failure_half_way_through_apply(name):
    """One interpreter for two orderings: the target imported before zeropatch (install, uninstall, install), then a
    failure injected half-way through a fresh apply on the imported target, which must leave nothing changed."""
    targets, check, _ = case(name)
    assert_ok(run_python(HELPERS + f'''
from zeropatch import _core
name, check = {name!r}, {check!r}
modules = [importlib.import_module(target) for target in {imported_before(name, targets)!r}]
works(check)
import zeropatch
zeropatch.install(name)
modules = [importlib.import_module(target) for target in {targets!r}]
state = truth(name)
assert state in ("applied", "not-needed", "skipped"), state
works(check)
recorded = changes(name)
zeropatch.uninstall(name)
assert_reverted(recorded)
zeropatch.install(name)
modules = [importlib.import_module(target) for target in {targets!r}]
assert truth(name) == state
works(check)
print(name, state)

first_target = [patcher.changes() for patcher in _core._registry()[name].patchers.values()][:1]
recorded = changes(name)
zeropatch.uninstall(name)
if not first_target or not first_target[0]:
    print(name, "changes no attribute (nothing to interrupt)")
    raise SystemExit(0)
interrupt_at = len(first_target[0])   # the last change to the first target: everything before it must be undone
owners = {{id(owner): owner for owner, _, _, _ in recorded}}
before = {{key: dict(vars(owner)) for key, owner in owners.items()}}
calls = []
original_set = _core.Patcher.set
def failing_set(self, owner, attr, value):
    calls.append(attr)
    if len(calls) == interrupt_at:
        raise RuntimeError("injected failure")
    return original_set(self, owner, attr, value)
_core.Patcher.set = failing_set
try:
    zeropatch.install(name)
    if {name in PROVIDES!r}:  # applied at the import, which a failure must not break beyond what it was without us
        for target in {targets!r}:
            try:
                importlib.import_module(target)
            except ModuleNotFoundError:
                raise zeropatch.PatchError("injected failure: the provided module is not there, as without zeropatch")
except zeropatch.PatchError as error:
    assert "injected failure" in str(error), error
else:
    raise AssertionError("an explicitly named patch that fails must raise")
_core.Patcher.set = original_set
assert zeropatch.status(name)[0].state == "failed"
for key, owner in owners.items():
    after = dict(vars(owner))
    assert after.keys() == before[key].keys(), (owner, after.keys() ^ before[key].keys())
    assert all(after[attr] is before[key][attr] for attr in after), owner
works(check)
print(name, "rolled back", len(calls) - 1, "changes")
''', env=environment(), step=f"{name}: target first, then an injected failure"))


# patch -> (modules needed, the library imported first, which imports the target, and the legacy line; what the line
# fails with where nothing answers it). peft imports transformers.processing_utils, whose direct_transformers_import
# runs transformers/__init__.py again: a new lazy top-level module replaces the one imported and patched
LIBRARY_FIRST = {
    "moved_names": (("peft", "transformers"), "peft", "from transformers import CLIPFeatureExtractor",
                    "cannot import name 'CLIPFeatureExtractor'"),
}


@pytest.mark.parametrize("name", list(LIBRARY_FIRST))
def test_a_library_that_imports_the_target_first(name):
    """zeropatch activated, then a library that imports the target (and may put another module object in its place)
    before the legacy line: the line fails without zeropatch and works with it, on the module objects old and new;
    what is answered stays out of dir() and pickles by reference; uninstall reverts every change and the line fails
    again; install answers it again."""
    needs, library, line, failure = LIBRARY_FIRST[name]
    if any(not installed(module) for module in needs):
        pytest.skip(f"not installed: {', '.join(module for module in needs if not installed(module))}")
    code = f"import {library}\n{line}\nprint('imported')"
    plain = run_python(code, env=clean_environment(ZEROPATCH="0"), step=f"{name}: {library} first, zeropatch off")
    if plain.returncode == 0:
        pytest.skip(f"the installed release still has what {line!r} imports")
    assert failure in plain.stderr and "ImportError" in plain.stderr, plain.stderr
    target = line.split()[1]
    asked = line.split()[-1]
    assert_ok(run_python(HELPERS + f'''
import pickle
import zeropatch
name, line, target, asked = {name!r}, {line!r}, {target!r}, {asked!r}
import {library}
exec(line, {{}})
holders = [sys.modules[target]] + [owner for owner, _, _, _ in changes(name)   # and the object the patch changed
                                   if isinstance(owner, type(sys)) and owner.__name__ == target]
for holder in {{id(one): one for one in holders}}.values():
    value = getattr(holder, asked)               # whichever object code holds answers
    assert asked not in dir(holder) and asked not in vars(holder), holder
    assert value.__module__.split(".")[0] == target.split(".")[0], value.__module__
    assert pickle.loads(pickle.dumps(value)) is value
state = truth(name)
assert state == "applied", state
recorded = changes(name)
zeropatch.uninstall(name)
assert truth(name) == "disabled"
assert_reverted(recorded)
try:
    exec(line, {{}})
except ImportError as error:
    assert asked in str(error), error
else:
    raise AssertionError(f"{{line!r}} still works after uninstall")
zeropatch.install(name)
exec(line, {{}})
assert truth(name) == state
print(name, state, "with", {library!r}, "first")
''', env=dict(environment(), ZEROPATCH=name), step=f"{name}: {library} first"))


SAME_PLACE = {  # two patches on the same target module or class
    ("pg_deepcopy", "gloo_exit"): ("torch",),
    ("param_store", "colossalai_cpu"): ("colossalai",),
    ("hf_post_init", "t5_apex_norm"): ("transformers",),
    ("hf_post_init", "hf_frozen_params"): ("transformers",),
    ("hf_frozen_params", "transformers_use_auth_token"): ("transformers",),
    ("hf_frozen_params", "hf_checkpoint_dtype"): ("transformers",),  # both wrap PreTrainedModel.from_pretrained
    ("hf_checkpoint_dtype", "hf_load_in_8bit"): ("transformers",),  # both wrap PreTrainedModel.from_pretrained
    ("torch_load", "cpu_rehearsal"): ("torch", "accelerate", "transformers"),  # both wrap torch.load
    ("hf_checkpoint_dtype", "cpu_rehearsal"): ("transformers",),  # both wrap PreTrainedModel.from_pretrained
    ("hf_trainer_tokenizer", "hf_trainer_overrides"): ("transformers",),  # both wrap Trainer.__init__
    ("hf_llama_byte_level", "hf_llama_bos_default"): ("transformers",),  # both on LlamaTokenizer's construction
    ("hf_training_args", "hf_fsdp_version"): ("transformers",),  # both on TrainingArguments' processing
}


@pytest.mark.parametrize("pair", list(SAME_PLACE), ids="+".join)
def test_two_patches_on_the_same_place_uninstall_in_either_order(pair):
    """One interpreter, both orders: the pair installed, one uninstalled (the other stays as it was), then the other;
    installed again, and uninstalled the other way round."""
    if any(not installed(module) for module in SAME_PLACE[pair]):
        pytest.skip("target not installed")
    targets = sorted({target for name in pair for target in CASES[name][1]})
    checks = [CASES[name][2] for name in pair]
    assert_ok(run_python(HELPERS + f'''
import zeropatch
pair = {pair!r}
for first_out in (0, 1):
    zeropatch.install(*pair)
    modules = [importlib.import_module(target) for target in {targets!r}]
    states = {{name: truth(name) for name in pair}}
    recorded = {{name: changes(name) for name in pair}}
    out, stays = pair[first_out], pair[1 - first_out]
    zeropatch.uninstall(out)
    assert_reverted(recorded[out])
    assert truth(stays) == states[stays]
    zeropatch.uninstall(stays)
    assert_reverted(recorded[stays], undone=[value for _, _, _, value in recorded[out]])
    for check in {checks!r}:
        works(check)
    print("ok", first_out, states)
''', env=environment(), step=f"{'+'.join(pair)}"))
