"""The release sweep: every patch's repro (both ways, tests/test_repros.py) and its tests, on each release of its
target that the patches claim, one release at a time, in the environment `nox -s sweep` built for the stack.

  python tools/sweep.py STACK        (run by `python3 -m nox -s sweep`; STACK is one of STACKS)
  python tools/sweep.py STACK [RELEASE ...] [--patch NAME ...]
                                     some releases again (their rows replace theirs), or only some patches of the
                                     stack (a patch added to a large stack): their results replace theirs in the rows

For each release it installs the target (a release that cannot be installed, or cannot import and start here, is
recorded as such, with the reason), runs pytest, and records per patch: the repro's outcome ("verified": fails without zeropatch,
passes with it, the patch applied; "not-needed": passes without, the patch reported not-needed; "applied, not
forced": see gloo_exit), or FAILED with the test that failed; and how its tests went. Results go to
compat/results/STACK.json; tools/compat_table.py writes the documentation's table (docs/compatibility.md) from them.
"""

import datetime
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SWEPT = ("torch", "torchvision", "torchaudio", "colossalai", "deepspeed", "accelerate", "transformers", "pandas",
         "numpy", "setuptools", "yapf", "xformers", "timm", "huggingface_hub", "diffusers", "pillow", "pyyaml", "openai",
         "pytorch-lightning", "peft", "bitsandbytes", "omegaconf")
DEEPSPEED_AOT = {"DS_BUILD_OPS": "0", "DS_BUILD_SHM_COMM": "1", "DS_ACCELERATOR": "cpu"}
TARGETS = ("torch", "torchvision", "torchaudio", "colossalai", "deepspeed", "accelerate", "transformers", "pandas",
           "numpy", "setuptools", "yapf", "xformers", "timm", "huggingface_hub", "diffusers", "pillow", "pyyaml", "openai",
           "pytorch-lightning", "peft", "bitsandbytes", "omegaconf", "datasets", "evaluate")
INSTALL_SECONDS = 1800
TEST_SECONDS = 1800


def constraints():
    """tests/constraints.txt without the pins of the packages the sweep varies (torch stays pinned where the stack's
    environment holds the CPU build: a plain `torch` requirement would fetch the CUDA one)."""
    kept = [line for line in open(os.path.join(ROOT, "tests", "constraints.txt"))
            if line.split("==")[0].strip() not in SWEPT[1:]]
    path = os.path.join(tempfile.mkdtemp(prefix="zeropatch-sweep-"), "constraints.txt")
    with open(path, "w") as file:
        file.writelines(kept)
    return ["-c", path]


def colossalai(release):
    return [(["install", "--no-deps", "--force-reinstall", f"colossalai=={release}"], {})]


def deepspeed(releases):
    """(deepspeed, accelerate, transformers): the transformers of the accelerate release's time (5.x wants >= 1.1)."""
    deepspeed_release, accelerate_release, transformers_release = releases
    steps = []
    if installed("deepspeed") != deepspeed_release:  # its CPU communication op compiled at install, once per release
        steps.append((["install", "--no-build-isolation", "--no-cache-dir", "--force-reinstall", "--no-deps",
                       f"deepspeed=={deepspeed_release}"], DEEPSPEED_AOT))
    steps.append((["install", *constraints(), f"deepspeed=={deepspeed_release}", f"accelerate=={accelerate_release}",
                   f"transformers=={transformers_release}"], {}))
    return steps


def the_running_python(release):
    """Nothing to install: the release is the interpreter running the sweep, or the row says it cannot run here."""
    if platform.python_version() != release:
        return f"this interpreter is Python {platform.python_version()}: sweep {release} under it"
    return []


def pinned(distribution):
    """One release of a pure-Python target, with the dependencies that release asks for (torch held by constraints)."""
    return lambda release: [(["install", *constraints(), f"{distribution}=={release}"], {})]


def unconstrained(distribution):
    """One release of a target whose environment holds the registry's torch builds (no CPU-build pin)."""
    return lambda release: [(["install", f"{distribution}=={release}"], {})]


def with_transformers(distribution):
    """One release of a library built on transformers, with a transformers release of its time."""
    return lambda pair: [(["install", *constraints(), f"{distribution}=={pair[0]}", f"transformers=={pair[1]}"], {})]


def with_torch(distribution):
    """A torch / ``distribution`` pair of the registry's builds (a compiled extension of torch's), after the CUDA
    libraries of the release before are removed (pip keeps a CUDA 12 NCCL beside a CUDA 13 torch, which then does not
    load: "undefined symbol: ncclCommResume")."""
    def install(pair):
        torch_release, release = pair
        cuda_libraries = sorted({found.metadata["Name"] for found in importlib.metadata.distributions()
                                 if found.metadata["Name"].lower().startswith("nvidia-")})
        steps = [(["uninstall", "-y", *cuda_libraries], {})] if cuda_libraries else []
        return steps + [(["install", f"torch=={torch_release}", f"{distribution}=={release}"], {})]
    return install


# stack: (how to install one release, the releases, a probe that the target imports, the patches whose repros run,
#         the further tests that run on each release (pytest node ids or files))
STACKS = {
    "colossalai": (colossalai, ["0.3.6", "0.3.7", "0.3.8", "0.3.9", "0.4.0", "0.4.1", "0.4.2", "0.4.3", "0.4.4", "0.4.5",
                                "0.4.6", "0.4.7", "0.4.8", "0.4.9", "0.5.0"],
                   "import os; os.environ.update(RANK='0', LOCAL_RANK='0', WORLD_SIZE='1', LOCAL_WORLD_SIZE='1', "
                   "MASTER_ADDR='127.0.0.1', MASTER_PORT='0'); import colossalai; "
                   "from colossalai.booster.plugin import LowLevelZeroPlugin; from colossalai.nn.optimizer import HybridAdam; "
                   "from colossalai.shardformer import ShardConfig; colossalai.launch_from_torch({})",
                   ["param_store", "colossalai_cpu", "colossalai_kwargs", "colossalai_lr_scheduler",
                    "colossalai_legacy_api"],
                   ["tests/test_colossalai.py::test_legacy_ema_update_is_exact_and_both_spellings_share_state[2-2]",
                    "tests/test_colossalai.py::test_gradients_read_the_same_through_both_spellings[2]",
                    "tests/test_colossalai.py::test_fused_ema_matches_the_legacy_update_on_the_real_optimizer[2]",
                    "tests/test_colossalai.py::test_hybrid_adam_under_low_level_zero_trains_as_torch_adamw[2]",
                    "tests/test_colossalai.py::test_uninstall_restores_the_original_class",
                    "tests/test_colossalai_kwargs.py", "tests/test_colossalai_lr_scheduler.py",
                    "tests/test_colossalai_legacy_api.py",
                    "tests/test_put_back.py::test_names_put_back_are_reachable_picklable_and_not_listed"
                    "[colossalai_legacy_api]"]),
    "deepspeed": (deepspeed, [("0.16.9", "1.15.0", "5.23.0"), ("0.17.6", "1.15.0", "5.23.0"), ("0.18.9", "1.15.0", "5.23.0"),
                              ("0.19.1", "1.15.0", "5.23.0"), ("0.19.2", "1.15.0", "5.23.0"), ("0.19.8", "1.15.0", "5.23.0"),
                              ("0.19.8", "1.10.1", "5.23.0"), ("0.19.8", "1.5.2", "5.23.0"), ("0.19.8", "1.0.1", "4.51.3")],
                  "import deepspeed, accelerate; from deepspeed.runtime.engine import DeepSpeedEngine",
                  ["param_names", "ds_scheduler", "ds_launcher_env", "ds_config_keys", "ds_module_cast"],
                  ["tests/test_param_names.py::test_checkpoint_after_dispatch_restores_every_weight[2-frozen_and_trainable]",
                   "tests/test_param_names.py::test_any_replacement_not_only_dispatch",
                   "tests/test_ds_scheduler.py::test_scheduler_on_dummy_optim_matches_plain_torch[warmup_cosine]",
                   "tests/test_ds_scheduler.py::test_scheduler_on_dummy_optim_matches_plain_torch[sequential]",
                   "tests/test_ds_scheduler.py::test_what_cannot_be_deferred_says_what_to_do",
                   "tests/test_ds_config_keys.py", "tests/test_ds_module_cast.py",
                   # the HF Trainer's ZeRO-3 / FSDP launches rehearsed on two CPU ranks (not in the test sessions)
                   "tests/test_cpu_rehearsal.py::test_the_trainers_sharded_launches_train_save_and_resume_on_two_cpu_ranks"]),
    "transformers": (pinned("transformers"), ["4.46.3", "4.49.0", "4.51.3", "4.57.3", "5.0.0", "5.3.0", "5.7.0", "5.8.0",
                                              "5.9.0", "5.10.1", "5.12.1", "5.13.0", "5.23.0", "5.24.0"],
                     "import transformers; from transformers import PreTrainedModel, T5EncoderModel",
                     ["hf_post_init", "t5_apex_norm", "hf_frozen_params", "hf_checkpoint_dtype", "hf_training_args",
                      "hf_trainer_tokenizer", "hf_trainer_overrides", "hf_trainer_names", "hf_rope_scaling", "transformers_adamw", "shardformer_t5",
                      "transformers_use_auth_token", "transformers_shard_checkpoint", "hf_removed_names",
                      "hf_load_in_8bit", "hf_generate_cache_name", "hf_cache_legacy_api", "hf_attn_mask_utils", "hf_generation_mixin",
                      "hf_generate_position_ids", "hf_generate_tuple_cache", "hf_safe_serialization",
                      "hf_flash_attention_2", "hf_llama_byte_level", "hf_llama_bos_default", "hf_fsdp_version", "hf_model_utils",
                      "hf_additional_special_tokens"],
                     ["tests/test_hf_post_init.py", "tests/test_t5_apex_norm.py", "tests/test_hf_frozen_params.py",
                      "tests/test_hf_checkpoint_dtype.py", "tests/test_legacy.py", "tests/test_hf_training_args.py",
                      "tests/test_hf_trainer_tokenizer.py", "tests/test_hf_trainer_overrides.py",
                      "tests/test_hf_trainer_names.py", "tests/test_hf_rope_scaling.py",
                      "tests/test_transformers_adamw.py", "tests/test_shardformer_t5.py",
                      "tests/test_transformers_use_auth_token.py", "tests/test_transformers_shard_checkpoint.py",
                      "tests/test_hf_removed_names.py", "tests/test_hf_model_utils.py", "tests/test_hf_additional_special_tokens.py", "tests/test_hf_local_rank.py", "tests/test_hf_load_in_8bit.py",
                      "tests/test_hf_generate_cache_name.py", "tests/test_hf_cache_legacy_api.py",
                      "tests/test_hf_attn_mask_utils.py", "tests/test_hf_generation_mixin.py",
                      "tests/test_hf_generate_position_ids.py", "tests/test_hf_generate_tuple_cache.py",
                      "tests/test_hf_safe_serialization.py", "tests/test_hf_flash_attention_2.py",
                      "tests/test_hf_llama_byte_level.py", "tests/test_hf_llama_bos_default.py",
                      "tests/test_hf_fsdp_version.py"]),
    "pandas": (pinned("pandas"), ["2.3.3", "3.0.6", "3.1.0", "3.1.1"], "import pandas",
               ["pandas_groupby_names"], ["tests/test_pandas_groupby_names.py"]),
    "torchvision": (with_torch("torchvision"), [("2.10.0", "0.25.0"), ("2.11.0", "0.26.0"), ("2.15.0", "0.29.2")],
                    "import torch, torchvision, torchvision.io",
                    ["torchvision_video", "torchvision_model_urls", "torchvision_get_image_size", "pg_deepcopy",
                     "gloo_exit", "fused_ema"],
                    ["tests/test_torchvision_video.py", "tests/test_torchvision_model_urls.py",
                     "tests/test_torchvision_get_image_size.py", "tests/test_pg_deepcopy.py", "tests/test_gloo_exit.py"]),
    # 2.8.0: the last with its own backends and info; 2.9 and 2.10 load only with their own torch; 2.11 (abi3) with
    # today's too
    "torchaudio": (with_torch("torchaudio"), [("2.8.0", "2.8.0"), ("2.9.1", "2.9.1"), ("2.11.0", "2.11.0"),
                                              ("2.14.1", "2.11.0")],
                   "import torch, torchaudio", ["torchaudio_backends"],
                   ["tests/test_torchaudio_backends.py",
                    "tests/test_put_back.py::test_names_put_back_are_reachable_picklable_and_not_listed[torchaudio_backends]"]),
    "torch": (pinned("torch"), ["2.13.0"], "import torch, torch.distributed",
              ["pg_deepcopy", "gloo_exit", "fused_ema", "xformers_sdpa", "flash_attn_sdpa", "cpu_rehearsal",
               "torch_stft_real", "torch_removed_names"],
              ["tests/test_pg_deepcopy.py", "tests/test_gloo_exit.py", "tests/test_fused_ema.py", "tests/test_attention.py",
               "tests/test_cpu_rehearsal.py", "tests/test_torch_stft_real.py", "tests/test_torch_removed_names.py"]),
    # the registry's (CUDA) builds, which run on this machine's CPU, for the torch- and torchvision-level drift
    "torch_releases": (with_torch("torchvision"), [("2.6.0", "0.21.0"), ("2.10.0", "0.25.0"), ("2.15.0", "0.29.2")],
                       "import torch, torchvision, torchvision.transforms",
                       ["torch_load", "torch_six", "local_rank_arg", "torchvision_functional_tensor", "cpu_rehearsal"],
                       ["tests/test_torch_load.py", "tests/test_torch_six.py", "tests/test_local_rank_arg.py",
                        "tests/test_torchvision_functional_tensor.py", "tests/test_cpu_rehearsal.py"]),
    "numpy": (pinned("numpy"), ["1.24.4", "1.26.4", "2.0.2", "2.2.6", "2.4.6"], "import numpy, torch",
              ["numpy_aliases"], ["tests/test_numpy_aliases.py", "tests/test_torch_load.py"]),
    "setuptools": (pinned("setuptools"), ["69.5.1", "70.0.0", "70.3.0", "71.0.0", "81.0.0", "82.0.0", "84.2.1"],
                   "import setuptools", ["pkg_resources"], ["tests/test_pkg_resources.py"]),
    "accelerate": (pinned("accelerate"), ["0.27.2", "0.34.2", "1.0.1", "1.5.2", "1.10.1", "1.15.0"], "import accelerate, torch",
                   ["accelerate_kwargs"], ["tests/test_accelerate_kwargs.py"]),
    # xformers wheels built for another torch (0.0.35: torch 2.10 + CUDA) on the CPU build: no operator loads
    "xformers": (pinned("xformers"), ["0.0.35"], "import xformers.ops", ["xformers_fallback"],
                 ["tests/test_attention.py::test_installed_xformers_without_operators_falls_back_with_its_own_bias_objects"]),
    # 0.5.4: the last with add_weight_decay and the pooled forward (qk_scale went in 0.4.12); 1.0.16: attn_mask;
    # 1.0.11 / 1.0.12: the last with timm's own optimizers under their names, the first with torch's
    "timm": (unconstrained("timm"), ["0.5.4", "0.6.13", "0.9.16", "1.0.3", "1.0.11", "1.0.12", "1.0.16", "1.0.31"],
             "import timm, timm.models.layers",
             ["timm_layers", "timm_legacy_api", "timm_optimizers", "timm_legacy_optimizers"],
             ["tests/test_timm_layers.py", "tests/test_timm_legacy_api.py", "tests/test_timm_optimizers.py",
              "tests/test_timm_legacy_optimizers.py",
              *(f"tests/test_put_back.py::test_names_put_back_are_reachable_picklable_and_not_listed[{name}]"
                for name in ("timm_legacy_api", "timm_optimizers"))]),
    "huggingface_hub": (pinned("huggingface_hub"), ["0.25.2", "0.26.5", "0.36.2", "1.0.0", "2.4.0"],
                        "import huggingface_hub", ["hf_hub_legacy"], ["tests/test_hf_hub_legacy.py"]),
    "diffusers": (pinned("diffusers"), ["0.24.0", "0.27.2", "0.28.0", "0.31.0", "0.32.0", "0.33.0", "0.36.0", "0.42.1"],
                  "import os; os.environ['ZEROPATCH'] = 'hf_hub_legacy'; import zeropatch, diffusers.models.embeddings",
                  ["diffusers_legacy_names", "diffusers_gradient_checkpointing"],
                  ["tests/test_diffusers_legacy_names.py", "tests/test_diffusers_gradient_checkpointing.py"]),
    "yapf": (pinned("yapf"), ["0.40.1", "0.40.2", "0.43.0"], "import yapf, mmcv", ["mmcv_yapf"], ["tests/test_mmcv_yapf.py"]),
    # the first and last release of each Pillow series since the removals (with Pillow 9.5 beside, to compare sizes)
    "pillow": (pinned("pillow"), ["9.5.0", "10.0.1", "10.4.0", "11.3.0", "12.3.0", "13.0.0"],
               "from PIL import Image, ImageDraw, ImageFont", ["pillow_aliases"],
               ["tests/test_pillow_aliases.py", "tests/test_put_back.py::test_names_put_back_are_reachable_picklable_and_not_listed[pillow_aliases]"]),
    # PyYAML 5.4.1 and 6.0 have no wheel for this Python and do not build with today's Cython
    "pyyaml": (pinned("pyyaml"), ["6.0.1", "6.0.2", "6.0.3", "6.0.4"], "import yaml", ["yaml_load"],
               ["tests/test_yaml_load.py"]),
    # 2.0 does not install with today's pip (its metadata); 2.1.2, the first that does, to today's
    "omegaconf": (pinned("omegaconf"), ["2.1.2", "2.2.3", "2.3.0", "2.4.0"], "import omegaconf", ["omegaconf_legacy_api"],
                  ["tests/test_omegaconf_legacy_api.py"]),
    # 0.28.1: the last with openai_object (its own class runs the same test); 1.0.0, the last 2.x, today's
    "openai": (pinned("openai"), ["0.28.1", "1.0.0", "2.54.0", "3.57.0"], "import openai", ["openai_object"],
               ["tests/test_openai_object.py"]),
    # 2.21.0 (the last with load_metric), the first and last of each major release since, with today's evaluate
    # one interpreter at a time (a Python is not pip-installed): run under each release, naming it
    # (README: a Debian trixie chroot gives 3.13 here)
    "python": (the_running_python, ["3.11.7", "3.13.5"], "import zeropatch",
               ["python_removed_modules", "python_dataclass_defaults", "python_removed_names", "python_bracketed_host"],
               ["tests/test_python_removed_modules.py", "tests/test_python_dataclass_defaults.py",
                "tests/test_python_removed_names.py", "tests/test_python_bracketed_host.py",
                "tests/test_provided_modules.py::test_a_provided_module_lists_its_names_as_the_old_one_did"
                "[python_removed_modules]"]),
    "datasets": (lambda release: [(["install", *constraints(), f"datasets=={release}", "evaluate==0.4.6"], {})],
                 ["2.21.0", "3.0.0", "3.6.0", "4.0.0", "4.8.5", "5.0.0", "5.2.0"], "import datasets, evaluate",
                 ["datasets_load_metric", "datasets_use_auth_token"],
                 ["tests/test_datasets_load_metric.py", "tests/test_datasets_use_auth_token.py",
                  "tests/test_put_back.py::test_names_put_back_are_reachable_picklable_and_not_listed[datasets_load_metric]"]),
    # 0.6.2 (the last saving adapter_model.bin by default), 0.9.0 (the last with the alias) and releases since, each
    # with a transformers of its time
    "peft": (with_transformers("peft"), [("0.6.2", "4.51.3"), ("0.9.0", "4.51.3"), ("0.10.0", "4.51.3"), ("0.13.2", "4.51.3"),
                                         ("0.21.2", "5.23.0")],
             "import peft, transformers", ["peft_int8_training", "peft_adapter_bin"],
             ["tests/test_peft_int8_training.py", "tests/test_peft_adapter_bin.py",
              "tests/test_put_back.py::test_names_put_back_are_reachable_picklable_and_not_listed[peft_int8_training]"]),
    # bitsandbytes' CPU layers (0.48 and later) under the first transformers without load_in_8bit, and today's
    "bitsandbytes": (with_transformers("bitsandbytes"), [("0.48.2", "5.0.0"), ("0.50.2", "5.0.0"), ("0.50.2", "5.23.0")],
                     "import bitsandbytes, transformers", ["hf_load_in_8bit", "bnb_optimizer_args"],
                     ["tests/test_hf_load_in_8bit.py", "tests/test_bnb_optimizer_args.py"]),
    # 2.0.0 (the 1.x API's removal), a release a year since, today's
    "pytorch_lightning": (pinned("pytorch-lightning"), ["2.0.0", "2.2.5", "2.4.0", "2.6.6"], "import pytorch_lightning",
                          ["pl_trainer_args", "pl_legacy_hooks", "pl_moved_names", "pl_multiple_optimizers"],
                          ["tests/test_pytorch_lightning.py", "tests/test_pl_multiple_optimizers.py",
                           "tests/test_put_back.py::test_names_put_back_are_reachable_picklable_and_not_listed[pl_moved_names]"]),
}


def installed(distribution):
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def run(command, timeout, env=None):
    """(exit code, combined output) of a bounded command."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              env=dict(os.environ, **(env or {})), cwd=ROOT, stdin=subprocess.DEVNULL)
        return done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as error:
        return -1, f"timed out after {timeout} s: {(error.stdout or b'')[-500:]!r}"


def last_line(output, marker=("ERROR", "Error", "error")):
    """The line that says what went wrong (for a pip conflict, the requirements that conflict)."""
    lines = [line.strip() for line in output.splitlines() if line.strip() and not line.startswith("WARNING: Location")]
    if "The conflict is caused by:" in lines:
        start = lines.index("The conflict is caused by:") + 1
        return "; ".join(line for line in lines[start:start + 4] if "depends on" in line)[:300]
    flagged = [line for line in lines if any(word in line for word in marker)]
    return (flagged or lines or ["(no output)"])[-1][:300]


def versions():
    return {"python": platform.python_version(), **{name: installed(name) for name in TARGETS}}


def test_results(junit_path):
    """{test id: (outcome, message)} from pytest's junit XML."""
    results = {}
    for case in ElementTree.parse(junit_path).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        failure = case.find("failure") if case.find("failure") is not None else case.find("error")
        skipped = case.find("skipped")
        if failure is not None:
            results[name] = ("failed", (failure.get("message") or "")[:300])
        elif skipped is not None:
            results[name] = ("skipped", (skipped.get("message") or "")[:200])
        else:
            results[name] = ("passed", "")
    return results


ORDERINGS = ("test_zeropatch_first_then_cycle_and_reload",
             "test_target_first_then_zeropatch_then_a_failure_half_way_through_apply")


def orderings(patches):
    """The ordering matrix's cases of these patches (CI runs the whole matrix on today's releases only)."""
    return [f"tests/test_orderings.py::{test}[{patch}]" for patch in patches for test in ORDERINGS]


def sweep_release(stack, release, only=()):
    """A row: each patch's results on ``release`` (only those of the patches ``only`` names, where it names some:
    their repros, their own test files and their ordering cases)."""
    install, _, probe, patches, tests_to_run = STACKS[stack]
    if only:
        patches = [patch for patch in patches if patch in only]
        tests_to_run = [path for path in tests_to_run if os.path.basename(path).split("::")[0] in
                        {f"test_{patch}.py" for patch in patches}]
    tests_to_run = [*tests_to_run, *orderings(patches)]
    row = {"release": release, "patches": {}}
    steps = install(release)
    if isinstance(steps, str):
        row["patches"] = {patch: {"outcome": "cannot run here", "detail": steps} for patch in patches}
        return row
    for arguments, env in steps:
        code, output = run([sys.executable, "-m", "pip", *arguments, "-q"], INSTALL_SECONDS, env)
        if code != 0:
            row["patches"] = {patch: {"outcome": "cannot install", "detail": last_line(output)} for patch in patches}
            return row
    row["versions"] = versions()
    code, output = run([sys.executable, "-c", probe], 300, {"OMP_NUM_THREADS": "1"})
    if code != 0:
        row["patches"] = {patch: {"outcome": "cannot run here", "detail": last_line(output)} for patch in patches}
        return row
    folder = tempfile.mkdtemp(prefix="zeropatch-sweep-")
    record, junit = os.path.join(folder, "records.jsonl"), os.path.join(folder, "junit.xml")
    selected = ["-k", " or ".join(patches)]
    code, output = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}",
                        "tests/test_repros.py", *selected], TEST_SECONDS, {"ZEROPATCH_SWEEP_RECORD": record})
    outcomes = {}
    if os.path.exists(record):
        for line in open(record):
            entry = json.loads(line)
            outcomes[entry["patch"]] = entry["outcome"]
    repro_tests = test_results(junit) if os.path.exists(junit) else {}
    tests = {}
    if tests_to_run:
        extra_junit = os.path.join(folder, "extra.xml")
        run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={extra_junit}", *tests_to_run],
            TEST_SECONDS)
        tests = test_results(extra_junit) if os.path.exists(extra_junit) else {}
    for patch in patches:
        repro = next(((outcome, message) for name, (outcome, message) in repro_tests.items() if f"[{patch}]" in name),
                     ("missing", "the repro test did not run"))
        if repro[0] == "passed":
            result = {"outcome": outcomes.get(patch, "passed")}
        elif repro[0] == "skipped":
            result = {"outcome": "skipped", "detail": repro[1]}
        else:
            result = {"outcome": "FAILED", "detail": repro[1] or last_line(output)}
        result["tests"] = {name: outcome for name, (outcome, _) in tests.items()}
        row["patches"][patch] = result
    return row


def arguments(words):
    """(releases named, patches named with --patch) of the command line after STACK."""
    releases, patches = [], []
    while words:
        word, words = words[0], words[1:]
        if word == "--patch" and words:
            patches.append(words[0])
            words = words[1:]
        else:
            releases.append(word)
    return releases, patches


def release_key(release):
    """A release as the results file and the command line name it: a pair, read back from JSON as a list, is its
    tuple."""
    return str(tuple(release)) if isinstance(release, list) else str(release)


def named_by(release, named):
    """Whether the command line names ``release``: as written, or a torch pair by its torch release."""
    return str(release) in named or isinstance(release, tuple) and release[0] in named


def merged(rows, path, only):
    """The stack's rows in ``path`` with each new row's results put in: the whole row, or only the patches ``only``
    names (a row not swept before comes in whole)."""
    if not os.path.exists(path):
        return rows
    with open(path) as file:
        old = {release_key(row["release"]): row for row in json.load(file)["rows"]}
    for row in rows:
        key = release_key(row["release"])
        if only and key in old:
            old[key]["patches"].update(row["patches"])
            old[key]["date"], old[key]["seconds"] = row["date"], old[key]["seconds"] + row["seconds"]
        else:
            old[key] = row
    return list(old.values())


def main():
    stack = sys.argv[1] if len(sys.argv) > 1 else None
    if stack not in STACKS:
        sys.exit(f"usage: python tools/sweep.py STACK [RELEASE ...] [--patch NAME ...] "
                 f"(STACK one of {', '.join(STACKS)})")
    named, only = arguments(sys.argv[2:])
    if stack == "python" and not named:  # only the running interpreter's row: the others' stay
        named = [platform.python_version()]
    releases = [release for release in STACKS[stack][1] if not named or named_by(release, named)]
    unknown = {name for name in named if not any(named_by(release, [name]) for release in STACKS[stack][1])}
    if unknown:
        sys.exit(f"unknown release(s) {sorted(unknown)} of {stack} (valid: {', '.join(map(str, STACKS[stack][1]))})")
    strangers = set(only) - set(STACKS[stack][3])
    if strangers:
        sys.exit(f"unknown patch(es) {sorted(strangers)} of {stack} (valid: {', '.join(STACKS[stack][3])})")
    started = time.monotonic()
    rows = []
    for release in releases:
        begin = time.monotonic()
        row = sweep_release(stack, release, only)
        row["seconds"] = round(time.monotonic() - begin)
        row["date"] = datetime.date.today().isoformat()
        rows.append(row)
        summary = ", ".join(f"{patch}: {result['outcome']}" for patch, result in row["patches"].items())
        print(f"sweep {stack} {release}: {summary} [{row['seconds']} s]", flush=True)
    path = os.path.join(ROOT, "compat", "results", f"{stack}.json")
    if named or only:  # some releases or patches again: the others stay
        order = [str(release) for release in STACKS[stack][1]]
        rows = sorted(merged(rows, path, only), key=lambda row: order.index(release_key(row["release"]))
                      if release_key(row["release"]) in order else 0)
    result = {"stack": stack, "date": datetime.date.today().isoformat(), "python": platform.python_version(),
              "machine": f"{os.cpu_count()} cores, {platform.machine()}", "seconds": round(time.monotonic() - started),
              "rows": rows}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as file:
        json.dump(result, file, indent=1)


if __name__ == "__main__":
    main()
