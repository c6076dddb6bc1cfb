"""Every patch's repro.py, run as a user runs it, both ways. Where the installed target has the bug, the repro must
fail without the patch (with the documented error: the patch is still needed) and pass with it, the patch
reported `applied` in the job's records as `zeropatch run` gathers them (its environment; both runs in a fork of the
warm interpreter where they can: tests/forkserver.py). Where the installed release does not have the bug, the repro
must pass without zeropatch and the patch must report `not-needed` (it changes nothing there)."""

import json
import os
import re
import sys

import pytest

from conftest import (ROOT, STAND_INS, assert_ok, clean_environment, distribution_version, installed, run_command,
                      run_python)


UNFORCED = "present, but this repro cannot force it on this release"


def xformers_has_no_operator():
    """True where the installed xformers cannot run attention (its compiled operators do not load, or a CPU)."""
    return run_python("import torch, xformers.ops as x; q = torch.zeros(1, 2, 1, 8); "
                      "x.memory_efficient_attention(q, q, q)").returncode != 0


def t5_replacement_behind_transformers():
    """Whether ColossalAI's T5 self-attention layer replacement lacks a parameter transformers' layer forward has
    (``cache_position`` before ColossalAI 0.5, ``past_key_values`` on transformers 5), or transformers keeps T5's past
    keys and values in a Cache, which ColossalAI's flash-attention forward reads as a tuple."""
    return run_python(
        "import inspect, sys; from transformers.models.t5 import modeling_t5; "
        "from colossalai.shardformer.modeling.t5 import get_T5_layer_self_attention_forward as getter; "
        "lacks = set(inspect.signature(modeling_t5.T5LayerSelfAttention.forward).parameters) - {'kwargs'} "
        "- set(inspect.signature(getter()).parameters); "
        "sys.exit(0 if lacks or hasattr(modeling_t5, 'EncoderDecoderCache') else 1)").returncode == 0


def diffusers_lost_legacy_names():
    """Whether the installed diffusers lacks what the repro imports from 0.2x (checked with hf_hub_legacy on, without
    which an old diffusers does not import on huggingface_hub >= 1.0 at all); 0.24 already lacked randn_tensor."""
    return run_python("from diffusers.models.embeddings import CaptionProjection; from diffusers.utils import randn_tensor",
                      env=clean_environment(ZEROPATCH="hf_hub_legacy")).returncode != 0


def generate_hands_a_cache_object_to_tuple_models():
    """transformers' generate builds a Cache object from 4.54 on, except on 5.0.x (which built none unless
    cache_implementation asked for one: the models made their own, tuples for a tuple-cache model)."""
    release = distribution_version("transformers")[:2]
    return release >= (4, 54) and release != (5, 0)


def accelerate_lost_a_keyword():
    """accelerate 1.0 removed the dataloader keywords (and ignores split_batches); logging_dir went in 0.2x."""
    return distribution_version("accelerate") >= (1,) or run_python(
        "import inspect, sys; from accelerate import Accelerator; "
        "sys.exit(0 if 'logging_dir' not in inspect.signature(Accelerator.__init__).parameters else 1)").returncode == 0


def python_refuses_a_bracketed_host_name():
    """Python's urlsplit refuses a host name in brackets since gh-103848 (3.11.4, and 3.9 / 3.10 security releases)."""
    import urllib.parse

    try:
        urllib.parse.urlsplit("tcp://[localhost]:1")
    except ValueError:
        return True
    return False


def transformers_lacks_model_helpers():
    """Whether the installed transformers lacks a helper the vendored BERT uses (one flag went in 4.31, the mask
    helpers with 5.0)."""
    return run_python("from transformers.pytorch_utils import is_torch_greater_or_equal_than_1_10\n"
                      "from transformers.modeling_utils import SequenceSummary, find_pruneable_heads_and_indices, "
                      "ModuleUtilsMixin as M\n"
                      "import transformers.utils.model_parallel_utils\nM.get_head_mask").returncode != 0


def training_arguments_lost_an_option():
    """TrainingArguments kept evaluation_strategy up to 4.49.0 (4.51.3 has not); the rest went in 5.0."""
    return run_python("import dataclasses, sys; from transformers import TrainingArguments as T; "
                      "sys.exit(0 if 'evaluation_strategy' in {f.name for f in dataclasses.fields(T)} else 1)",
                      env=clean_environment(ZEROPATCH="0")).returncode != 0


def transformers_quantizes_on_this_cpu():
    """transformers 5 runs bitsandbytes' 8-bit layers on a CPU (bitsandbytes 0.48 and later); 4.x refuses a CPU there
    without Intel's PyTorch extension ("None of the available devices ... are supported"), so on 4.x this repro cannot
    show on a CPU that the keywords still work: skipped (test_orderings checks the patch is not needed there)."""
    if distribution_version("transformers") >= (5,):
        return True
    pytest.skip("transformers 4.x loads bitsandbytes models on a GPU only (without Intel's extension)")


def transformers_lacks_attn_mask_utils():
    """transformers 5.24 removed modeling_attn_mask_utils; a later release may have it again (asked without
    zeropatch, which provides it)."""
    return run_python("import importlib.util, sys; "
                      "sys.exit(0 if importlib.util.find_spec('transformers.modeling_attn_mask_utils') else 1)",
                      env=clean_environment(ZEROPATCH="0")).returncode != 0


def transformers_moved_its_helpers():
    """transformers 4.56 stopped answering apply_chunking_to_forward from modeling_utils (4.51.3 still does): there the
    repro cannot show the answer, and moved_names applies all the same (its answers are asked for, not forced), so it is
    skipped (tests/test_moved_names.py covers the rest)."""
    if distribution_version("transformers") >= (4, 56):
        return True
    pytest.skip("transformers < 4.56 still has the helpers in modeling_utils")


def bitsandbytes_lacks_the_keywords():
    """bitsandbytes 0.50 removed the keywords, and steps its 8-bit optimizers on a CPU; 0.48.2, which still has them,
    steps them on a GPU only ("All input tensors need to be on the same GPU"): skipped there (test_orderings checks
    that the patch is not needed)."""
    if distribution_version("bitsandbytes") >= (0, 50):
        return True
    pytest.skip("bitsandbytes < 0.50 steps its 8-bit optimizers on a GPU only")


def trainer_lets_peft_choose_the_format():
    """peft >= 0.7 writes safetensors unless told; transformers 5's Trainer lets it choose, while 4.35-4.57 ask for
    safetensors themselves (save_safetensors=True, kept as the caller's choice, whatever the peft): there the repro
    cannot pass, with or without zeropatch."""
    if distribution_version("transformers") < (5,):
        pytest.skip("transformers 4.35-4.57's Trainer asks for safetensors itself (--save_safetensors False: .bin)")
    return distribution_version("peft") >= (0, 7)


def torchaudio_without_torchcodec():
    """torchaudio 2.9 reads audio through TorchCodec only: where it imports (its FFmpeg found), the repro's reads need
    no patch but `torchaudio.info` is still gone; 2.8 and earlier have their own backends and `info`."""
    if distribution_version("torchaudio") < (2, 9):
        return False
    if run_python("import torchcodec.decoders").returncode == 0:
        pytest.skip("TorchCodec imports here: torchaudio reads through it (tests/test_torchaudio_backends.py covers it)")
    return True


def no_gpu():
    """The rehearsal is for machines without a GPU; where CUDA is available it stays off (not-needed)."""
    return run_python("import sys, torch; sys.exit(1 if torch.cuda.is_available() else 0)").returncode == 0


def gloo_exit_forced():
    """gloo_exit's repro forces the exit race on torch 2.10-2.13 (swept). 2.14 and 2.15 have the same abort (a plain
    two-rank script: 15 of 30 processes on 2.14.1, 12 of 60 on 2.15) but keep fire-and-forget collectives alive
    elsewhere: this trigger cannot force it there (0 aborts in 18 jobs on 2.14.1)."""
    return True if distribution_version("torch") < (2, 14) else UNFORCED


# name: (modules needed, patches for the failing run (None: plain python), patches for the run with zeropatch,
#        extra environment, whether the installed release has
#        the bug (None: always; a callable: True, False, or UNFORCED), what the failing run must print (None: the
#        patch's declared error texts), what the passing run must print)
REPROS = {
    "param_store": (("torch", "colossalai"), "colossalai_cpu", "all,colossalai_cpu", {}, None, None,
                    "repro: legacy EMA update and gradient read completed"),
    "colossalai_lr_scheduler": (("torch", "colossalai"), "colossalai_cpu", "all,colossalai_cpu", {},
                                lambda: distribution_version("colossalai") >= (0, 3, 3), None,
                                "repro: the cosine schedule drove the ZeRO optimizer's learning rate"),
    "colossalai_legacy_api": (("torch", "colossalai"), "colossalai_cpu,cpu_rehearsal", "all,colossalai_cpu,cpu_rehearsal",
                              {}, lambda: distribution_version("colossalai") >= (0, 3, 3), None,
                              "repro: ZeRO-2 trained 2 steps"),
    "colossalai_cpu": (("torch", "colossalai"), None, "colossalai_cpu", {}, None,
                       r"No usable kernel found for CPUAdamLoader|device is required", "repro: LowLevelZero trained on CPU"),
    "pg_deepcopy": (("torch",), None, "all", {}, None, None, "it shares the group: True"),
    "gloo_exit": (("torch",), None, "all", {}, gloo_exit_forced, r"terminate called without an active exception",
                  "repro: both ranks finished and exited cleanly"),
    "param_names": (("torch", "deepspeed", "accelerate"), None, "all", {}, None, None,
                    "checkpoint after dispatch_model restored all 4 weights bit for bit"),
    "fused_ema": (("torch",), None, "all", {"ZEROPATCH_EMA_TARGETS": "opensora_v1:update_ema"}, None,
                  r"SLOW PATH: the legacy per-parameter update_ema is in use",
                  "repro: update_ema swapped for zeropatch.fused_update_ema"),
    "ds_scheduler": (("torch", "accelerate", "deepspeed"), None, "all", {}, None, None,
                     "repro: LambdaLR on DummyOptim drove DeepSpeed's optimizer"),
    "ds_config_keys": (("torch", "deepspeed"), None, "all", {}, None, None,
                       "repro: the legacy ds_config trained 2 bf16 steps under ZeRO-2"),
    "ds_module_cast": (("torch", "deepspeed"), None, "all", {}, lambda: distribution_version("deepspeed") >= (0, 19, 2),
                       None, "repro: ZeRO-3 trained 2 bf16 steps with a projector added after zero.Init"),
    "ds_launcher_env": (("deepspeed",), None, "all", {}, None, r"does not forward ZEROPATCH to the other nodes",
                        "repro: the launcher forwards ZEROPATCH=all to every node"),
    "torchvision_video": (("torch", "torchvision", "av"), None, "all", {},
                          lambda: distribution_version("torchvision") >= (0, 26), None, "bit for bit"),
    "colossalai_kwargs": (("torch", "colossalai", "transformers"), None, "all,colossalai_cpu", {},
                          lambda: distribution_version("colossalai") >= (0, 3, 8), None,
                          "repro: ShardFormer optimised the T5 encoder"),
    "hf_post_init": (("torch", "transformers"), None, "all", {}, lambda: distribution_version("transformers") >= (5,), None,
                     "repro: from_pretrained loaded all 7 tensors of the legacy model as saved"),
    # apex needs CUDA to build: a stand-in apex (tests/stand_ins) simulates a GPU machine that has it
    "t5_apex_norm": (("torch", "transformers"), None, "all", {"PYTHONPATH": STAND_INS},
                     lambda: distribution_version("transformers") >= (5, 8), None,
                     "repro: all 5 T5 layer norms are apex's FusedRMSNorm"),
    "shardformer_t5": (("torch", "colossalai", "transformers"), None, "all", {}, t5_replacement_behind_transformers,
                       None,
                       "repro: the shardformer-optimised T5 encoder and encoder-decoder ran"),
    "accelerate_kwargs": (("torch", "accelerate"), None, "all", {}, accelerate_lost_a_keyword,
                          None, "repro: logging_dir, even_batches and split_batches took effect"),
    "hf_frozen_params": (("torch", "transformers"), None, "all", {}, lambda: distribution_version("transformers") >= (5,),
                         None, "repro: 4 frozen parameters stayed frozen and bit-identical"),
    "hf_checkpoint_dtype": (("torch", "transformers"), None, "all", {}, lambda: distribution_version("transformers") >= (5,),
                            None, "repro: float32 master weights, one mixed-precision step trained"),
    "hf_training_args": (("torch", "transformers"), None, "all", {}, training_arguments_lost_an_option,
                         None, "repro: the alpaca command line parsed with its 4.x effects; 2 steps trained"),
    "hf_fsdp_version": (("torch", "transformers", "accelerate"), "cpu_rehearsal", "all,cpu_rehearsal", {},
                        lambda: distribution_version("transformers") >= (5, 10), None,
                        "repro: FastChat's FSDP save wrote"),
    "python_removed_modules": ((), None, "all", {}, lambda: sys.version_info >= (3, 12), None,
                               "repro: options, configuration and versions read as on Python 3.11"),
    "python_dataclass_defaults": ((), None, "all", {}, lambda: sys.version_info >= (3, 11), None,
                                  "repro: fairseq's FairseqConfig built as on Python 3.10"),
    "python_bracketed_host": (("torch",), None, "all", {}, python_refuses_a_bracketed_host_name, None,
                              "repro: the group formed through tcp://[localhost]"),
    # diffusers 0.24 (the colossalai sessions) imports on huggingface_hub >= 1.0 only with hf_hub_legacy
    "moved_names": (("torch", "transformers", "diffusers"), "hf_hub_legacy", "all", {}, transformers_moved_its_helpers,
                    r"cannot import name 'apply_chunking_to_forward' from 'transformers.modeling_utils'",
                    "repro: BLIP's transformers imports and a diffusers 0.11 model file worked"),
    "python_removed_names": ((), None, "all", {}, lambda: sys.version_info >= (3, 9), None,
                             "repro: the 2019 toolkit's utilities ran as on Python 3.8-3.10"),
    "hf_safe_serialization": (("torch", "transformers"), None, "all", {},
                              lambda: distribution_version("transformers") >= (5,), None,
                              "repro: pytorch_model.bin holds the"),
    "hf_trainer_tokenizer": (("torch", "transformers"), None, "all", {}, lambda: distribution_version("transformers") >= (5,),
                             None, "repro: Trainer(tokenizer=...) trained 2 steps and saved the tokenizer"),
    "hf_trainer_overrides": (("torch", "transformers"), None, "all", {},
                             lambda: distribution_version("transformers") >= (4, 46), None,
                             "repro: the 4.3x Trainer subclass trained 1 step of 2 accumulated micro-batches"),
    "hf_flash_attention_2": (("torch", "transformers"), None, "all", {}, lambda: not installed("flash_attn"), None,
                             "repro: the flash_attention_2 model loaded with sdpa attention"),
    "hf_llama_bos_default": (("transformers", "sentencepiece", "google.protobuf"), None, "all", {},
                             lambda: distribution_version("transformers") >= (5,),
                             r"repro: LlamaTokenizer added no beginning-of-sequence token",
                             "began each of 3 texts with <s>"),
    "hf_llama_byte_level": (("transformers", "tokenizers"), None, "all", {},
                            lambda: distribution_version("transformers") >= (5,),
                            r"repro: LlamaTokenizer lost the spaces",
                            "gave the checkpoint's own ids for 3 texts"),
    "hf_trainer_names": (("torch", "transformers"), None, "all", {},
                         lambda: distribution_version("transformers") >= (4, 53), None,
                         "repro: LLaVA's imports from transformers.trainer worked"),
    "hf_generate_cache_name": (("torch", "transformers"), None, "all", {},
                               lambda: distribution_version("transformers") >= (5, 24), None,
                               "repro: both legacy models generated transformers' own tokens"),
    "hf_generation_mixin": (("torch", "transformers"), None, "all", {},
                            lambda: distribution_version("transformers") >= (4, 52), None,
                            "repro: the 4.51-style model generated its greedy tokens"),
    # on 5.24 the model's forward names past_key_values: the failing run keeps hf_generate_cache_name, which 5.24 needs
    "hf_generate_position_ids": (("torch", "transformers"), "hf_generate_cache_name", "all", {},
                                 lambda: distribution_version("transformers") >= (5, 3), None,
                                 "repro: generate with the cache gave the greedy tokens"),
    "hf_generate_tuple_cache": (("torch", "transformers"), "hf_generate_cache_name", "all", {},
                                generate_hands_a_cache_object_to_tuple_models, None,
                                "repro: the tuple-cache model generated its greedy tokens"),
    # 5.24 removed the module; a later release may have it again (the patch is then not needed)
    "hf_attn_mask_utils": (("torch", "transformers"), None, "all", {},
                           transformers_lacks_attn_mask_utils, None,
                           "repro: the 2024 decoder layer's masks are 4.57's"),
    "hf_cache_legacy_api": (("torch", "transformers"), None, "all", {},
                            lambda: distribution_version("transformers") >= (4, 49), None,
                            "repro: cached decoding (from a tuple and from a DynamicCache) equals decoding without a cache"),
    "hf_rope_scaling": (("torch", "transformers"), None, "all", {}, lambda: distribution_version("transformers") >= (5,),
                        None, "repro: linear RoPE scaling x2 with theta 500000 kept, saved and loaded as in 4.x"),
    "hf_additional_special_tokens": (("torch", "transformers"), None, "all", {},
                                     lambda: distribution_version("transformers") >= (5,), None,
                                     "repro: BLIP's [ENC] is token"),
    "hf_model_utils": (("torch", "transformers"), None, "all", {}, transformers_lacks_model_helpers, None,
                       "repro: the vendored BERT trained 2 steps"),
    "hf_removed_names": (("torch", "transformers"), None, "all", {},
                         lambda: distribution_version("transformers") >= (4, 46, 1), None,
                         "repro: FastChat's and taming-transformers' transformers imports work; the filter equals 4.38's"),
    "transformers_adamw": (("torch", "transformers"), None, "all", {},
                           lambda: distribution_version("transformers") >= (4, 50), None,
                           "repro: transformers.AdamW trained 5 steps with its own defaults"),
    "hf_hub_legacy": (("torch", "diffusers", "huggingface_hub"), None, "all", {},
                      lambda: distribution_version("huggingface_hub") >= (0, 25), None,
                      "imported and loaded its VAE from the hub cache"),
    "hf_load_in_8bit": (("torch", "transformers", "bitsandbytes"), None, "all", {}, transformers_quantizes_on_this_cpu,
                        None,
                        "repro: loaded in 8 bits (14 Linear8bitLt), the rest float16"),
    "bnb_optimizer_args": (("torch", "bitsandbytes"), None, "all", {}, bitsandbytes_lacks_the_keywords, None,
                           "repro: AdamW8bit took percentile_clipping=100, block_wise=True and stepped as without them"),
    "transformers_use_auth_token": (("torch", "transformers"), None, "all", {},
                                    lambda: distribution_version("transformers") >= (5,), None,
                                    "repro: config and model loaded with use_auth_token=True"),
    "transformers_shard_checkpoint": (("torch", "transformers"), None, "all", {},
                                      lambda: distribution_version("transformers") >= (4, 47), None,
                                      "repro: saved in"),
    # diffusers 0.24 imports on huggingface_hub >= 1.0 only with hf_hub_legacy: the plain run keeps that one
    "diffusers_gradient_checkpointing": (("torch", "diffusers"), "hf_hub_legacy", "all", {},
                                         lambda: distribution_version("diffusers") >= (0, 33), None,
                                         "repro: the legacy model trained with gradient checkpointing"),
    "diffusers_legacy_names": (("torch", "diffusers"), "hf_hub_legacy", "all", {}, diffusers_lost_legacy_names,
                               None, "repro: Latte's diffusers 0.24 imports built the model"),
    "torch_load": (("torch", "numpy"), None, "all", {}, lambda: distribution_version("torch") >= (2, 6), None,
                   "repro: DiT checkpoint with args, numpy RNG state and scalars loaded"),
    "torchvision_functional_tensor": (("torch", "torchvision"), None, "all", {},
                                      lambda: distribution_version("torchvision") >= (0, 17), None, "bit for bit"),
    "peft_int8_training": (("torch", "transformers", "peft"), None, "all", {},
                           lambda: distribution_version("peft") >= (0, 10), None,
                           "repro: prepared as peft 0.3-0.9 prepared it"),
    "torchvision_get_image_size": (("torch", "torchvision"), None, "all", {},
                                   lambda: distribution_version("torchvision") >= (0, 11), None,
                                   "repro: MAE's RandomResizedCrop read [40, 24]"),
    "torchaudio_backends": (("torch", "torchaudio", "soundfile"), None, "all", {}, torchaudio_without_torchcodec, None,
                            "repro: YESNO read (1, 800) at 8000 Hz"),
    "torchvision_model_urls": (("torch", "torchvision"), None, "all", {},
                               lambda: distribution_version("torchvision") >= (0, 15), None,
                               "repro: the legacy backbone found model_urls"),
    "pkg_resources": (("torch",), None, "all", {},
                      lambda: run_python("from pkg_resources import packaging").returncode != 0, None,
                      "repro: CLIP's version check, require() and entry points ran"),
    "local_rank_arg": (("torch",), None, "all", {}, lambda: distribution_version("torch") >= (2,), None,
                       "repro: the worker read --local_rank=0 from the launcher"),
    "mmcv_yapf": (("mmcv", "yapf"), None, "all", {}, lambda: distribution_version("yapf") >= (0, 40, 2), None,
                  "repro: mmcv Config.dump wrote the config"),
    "timm_legacy_api": (("torch", "timm"), None, "all", {}, lambda: distribution_version("timm") >= (0, 4, 12), None,
                        "repro: MAE's blocks, pooled ViT and weight-decay groups"),
    "timm_optimizers": (("torch", "timm"), None, "all", {}, lambda: distribution_version("timm") >= (0, 5), None,
                        "repro: timm's own Nadam, RAdam and NovoGrad trained under their old names"),
    "timm_legacy_optimizers": (("torch", "timm"), None, "all", {}, lambda: distribution_version("timm") >= (1, 0, 12),
                               "radam's weight decay is not timm's", "repro: radam decayed the weights as timm 0.4.12"),
    "timm_layers": (("torch", "timm"), None, "all", {}, lambda: distribution_version("timm") >= (0, 9), None,
                    "repro: timm 0.6's layer paths imported and the timm 0.6 checkpoint loaded"),
    "torch_six": (("torch",), None, "all", {}, lambda: distribution_version("torch") >= (2,), None,
                  "repro: torch._six imported and used"),
    "torch_removed_names": (("torch",), None, "all", {}, lambda: distribution_version("torch") >= (2, 3), None,
                            "repro: the dataset split into [6, 3, 1] with torch 2.2's _accumulate"),
    "torch_stft_real": (("torch",), None, "all", {}, lambda: distribution_version("torch") >= (2,), None,
                        "repro: spectrograms, STFT loss and resynthesis as on torch 1.x"),
    "numpy_aliases": (("numpy",), None, "all", {}, lambda: distribution_version("numpy") >= (1, 24), None,
                      "repro: legacy numpy aliases resolved as before their removal"),
    "pillow_aliases": (("PIL", "numpy"), None, "all", {}, lambda: distribution_version("pillow") >= (10,), None,
                       "repro: sample logged with its caption"),
    "datasets_load_metric": (("datasets", "evaluate"), None, "all", {}, lambda: distribution_version("datasets") >= (3,),
                             None, "repro: load_metric('accuracy') computed {'accuracy': 0.75}"),
    "datasets_use_auth_token": (("datasets",), None, "all", {}, lambda: distribution_version("datasets") >= (3,), None,
                                "repro: run_glue's load_dataset call read 4 train and 2 validation rows"),
    "peft_adapter_bin": (("torch", "transformers", "peft"), None, "all", {}, trainer_lets_peft_choose_the_format, None,
                         "repro: resumed from adapter_model.bin"),
    "openai_object": (("openai",), None, "all", {}, lambda: distribution_version("openai") >= (1,), None,
                      "repro: alpaca's utils imported"),
    "omegaconf_legacy_api": (("omegaconf",), None, "all", {}, lambda: distribution_version("omegaconf") >= (2, 1), None,
                             "repro: missing keys read as None and pretty() printed the config"),
    "yaml_load": (("yaml",), None, "all", {}, lambda: distribution_version("pyyaml") >= (6,), None,
                  "repro: the legacy config read without a Loader"),
    "xformers_fallback": (("torch", "xformers"), None, "all", {}, xformers_has_no_operator, None,
                          "repro: Open-Sora's and PixArt's attention trained 2 steps"),
    # opt-in, provided where the package is absent; where it is installed, the default set must already pass
    "xformers_sdpa": (("torch",), "all", "all,xformers_sdpa", {}, lambda: not installed("xformers"), None,
                      "repro: Open-Sora's cross-attention trained 2 steps"),
    "flash_attn_sdpa": (("torch",), "all", "all,flash_attn_sdpa", {}, lambda: not installed("flash_attn"), None,
                        "repro: Open-Sora's flash-attention block and the varlen form trained"),
    "cpu_rehearsal": (("torch",), None, "cpu_rehearsal", {}, no_gpu, None,
                      "repro: the GPU script trained, saved and resumed"),
    "pandas_groupby_names": (("pandas", "pandarallel"), None, "all", {}, lambda: distribution_version("pandas") >= (3, 1), None,
                             "repro: pandarallel's parallel_apply equals apply"),
    "pl_trainer_args": (("torch", "pytorch_lightning"), None, "all", {},
                        lambda: distribution_version("pytorch-lightning") >= (2,), None,
                        "repro: the 1.x-built Trainer trained 4 steps on the CPU (root_gpu None) and resumed to 6"),
    "pl_legacy_hooks": (("torch", "pytorch_lightning"), None, "all", {},
                        lambda: distribution_version("pytorch-lightning") >= (2,), None,
                        "repro: the 1.x hooks ran with 1.x's arguments and outputs"),
    "pl_multiple_optimizers": (("torch", "pytorch_lightning"), None, "all", {},
                               lambda: distribution_version("pytorch-lightning") >= (2,), None,
                               "repro: both optimizers trained in turn each batch, as pytorch-lightning 1.9 trained them"),
    "pl_moved_names": (("torch", "pytorch_lightning", "tensorboardX"), None, "all", {},
                       lambda: distribution_version("pytorch-lightning") >= (2,), None,
                       "TestTubeLogger logged version_0"),
}


def run(name, patches, extra_env, job_folder=None):
    """The repro without zeropatch (``patches`` None), or as ``zeropatch run --patches PATCHES`` runs it: the job's
    environment (``_job.run_environment``), its processes' records left in ``job_folder``. The bootstrap folder is left
    off ``PYTHONPATH``: the regular install's start-up hook reads ``ZEROPATCH`` as it does, and the case can then run
    in a fork of the warm interpreter (torch, or transformers' Trainer, imported before zeropatch: the order every
    patch supports; the ordering matrix runs the other order)."""
    from zeropatch import _job

    repro = ROOT / "patches" / name / "repro.py"
    env = clean_environment(**extra_env)
    if patches is None:
        return run_command([sys.executable, repro], env=env, step=f"{name} repro without zeropatch")
    env = _job.run_environment(env, patches, str(job_folder))
    env["PYTHONPATH"] = os.pathsep.join(path for path in env["PYTHONPATH"].split(os.pathsep)
                                        if path != _job.bootstrap_path())
    return run_command([sys.executable, repro], env=env, step=f"{name} repro with zeropatch (--patches {patches})")


def reported_states(job_folder, name):
    """The states the job's processes recorded for patch ``name`` (``zeropatch run``'s report, gathered)."""
    from zeropatch import _job

    return {record["state"] for process in _job.gather(str(job_folder), [], 0)["processes"]
            for record in process["patches"] if record["name"] == name}


def test_every_patch_has_a_repro_and_a_readme():
    from zeropatch._core import valid_names

    for name in valid_names():
        assert (ROOT / "patches" / name / "README.md").is_file(), name
        assert (ROOT / "patches" / name / "repro.py").is_file(), name
    assert set(REPROS) == set(valid_names())


def test_no_repro_checks_with_assert():
    """A repro's checks must survive `python -O`, which strips assert statements: explicit `if ...: raise`."""
    import ast

    found = [f"{path.relative_to(ROOT)}:{node.lineno}" for path in sorted((ROOT / "patches").glob("*/repro.py"))
             for node in ast.walk(ast.parse(path.read_text(), filename=str(path))) if isinstance(node, ast.Assert)]
    assert not found, "assert statements in repros (stripped by python -O): " + ", ".join(found)


@pytest.mark.parametrize("name", list(REPROS))
def test_repro_fails_without_the_patch_and_passes_with_it(name, tmp_path):
    from zeropatch import _core

    needs, without_patches, with_patches, extra_env, expected_when, failure, success = REPROS[name]
    missing = [module for module in needs if not installed(module)]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}")
    bug = True if expected_when is None else expected_when()
    if bug is True:
        without = run(name, without_patches, extra_env)
        assert without.returncode != 0, without.stdout
        output = without.stdout + without.stderr
        declared = _core._registry()[name].patch.errors
        assert any(re.search(pattern, output) for pattern in ([failure] if failure else declared)), output[-3000:]
        if declared:  # `zeropatch explain` recognises the real failure
            assert name in [patch.name for patch in _core.patches_for_error(output)]
    elif bug is False:
        assert_ok(run(name, without_patches, extra_env))
    # UNFORCED: the plain run is left out, since the race may strike or not
    job_folder = tmp_path / "job"
    job_folder.mkdir()
    with_patch = run(name, with_patches, extra_env, job_folder)
    assert_ok(with_patch)
    assert success in with_patch.stdout, with_patch.stdout
    states = reported_states(job_folder, name)
    if bug:  # UNFORCED included: the patch applies there too
        assert "applied" in states, states
    else:
        assert "not-needed" in states and states <= {"not-needed", "waiting"}, states
    record_for_the_sweep(name, "verified" if bug is True else "not-needed" if bug is False else "applied, not forced")


def record_for_the_sweep(name, outcome):
    """Under the release sweep (tools/sweep.py sets ZEROPATCH_SWEEP_RECORD), what this repro showed on this release."""
    path = os.environ.get("ZEROPATCH_SWEEP_RECORD")
    if path:
        with open(path, "a") as file:
            file.write(json.dumps({"patch": name, "outcome": outcome}) + "\n")
