"""Every patch's repro.py, run as a user runs it: it must fail without the patch (with the documented
error, which proves the patch is still needed) and pass with it (`zeropatch run`, so the bootstrap
activation is exercised too)."""

import re
import sys

import pytest

from conftest import ROOT, assert_ok, clean_environment, installed, run_command

# name: (modules needed, patches for the failing run (None: plain python), patches for the passing run,
#        extra environment, what the failing run must print (None: the patch's declared error texts),
#        what the passing run must print)
REPROS = {
    "param_store": (("torch", "colossalai"), "colossalai_cpu", "all,colossalai_cpu", {}, None,
                    "repro: legacy EMA update and gradient read completed"),
    "colossalai_cpu": (("torch", "colossalai"), None, "colossalai_cpu", {}, r"AssertionError: device is required",
                       "repro: LowLevelZero trained on CPU"),
    "pg_deepcopy": (("torch",), None, "all", {}, None, "it shares the group: True"),
    "param_names": (("torch", "deepspeed", "accelerate"), None, "all", {}, None,
                    "checkpoint after dispatch_model restored all 4 weights bit for bit"),
    "fused_ema": (("torch",), None, "all", {"ZEROPATCH_EMA_TARGETS": "opensora_v1:update_ema"},
                  r"SLOW PATH: the legacy per-parameter update_ema is in use",
                  "repro: update_ema swapped for zeropatch.fused_update_ema"),
    "ds_scheduler": (("torch", "accelerate", "deepspeed"), None, "all", {}, None,
                     "repro: LambdaLR on DummyOptim drove DeepSpeed's optimizer"),
    "ds_launcher_env": (("deepspeed",), None, "all", {}, r"does not forward ZEROPATCH to the other nodes",
                        "repro: the launcher forwards ZEROPATCH=all to every node"),
}


def run(name, patches, extra_env):
    repro = ROOT / "patches" / name / "repro.py"
    env = clean_environment(**extra_env)
    if patches is None:
        return run_command([sys.executable, repro], env=env)
    return run_command([sys.executable, "-m", "zeropatch", "run", "--patches", patches, "--", sys.executable, repro], env=env)


def test_every_patch_has_a_repro_and_a_readme():
    from zeropatch._core import PATCH_MODULES

    for name in PATCH_MODULES:
        assert (ROOT / "patches" / name / "README.md").is_file(), name
        assert (ROOT / "patches" / name / "repro.py").is_file(), name
    assert set(REPROS) <= set(PATCH_MODULES)


@pytest.mark.parametrize("name", list(REPROS))
def test_repro_fails_without_the_patch_and_passes_with_it(name):
    from zeropatch import _core

    needs, without_patches, with_patches, extra_env, failure, success = REPROS[name]
    missing = [module for module in needs if not installed(module)]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}")
    without = run(name, without_patches, extra_env)
    assert without.returncode != 0, without.stdout
    output = without.stdout + without.stderr
    declared = _core._registry()[name].patch.errors
    patterns = [failure] if failure else declared
    assert any(re.search(pattern, output) for pattern in patterns), output[-3000:]
    if declared:  # `zeropatch explain` recognises the real failure
        from zeropatch._cli import matching_patches

        assert name in [patch.name for patch in matching_patches(output)]
    with_patch = run(name, with_patches, extra_env)
    assert_ok(with_patch)
    assert success in with_patch.stdout, with_patch.stdout
