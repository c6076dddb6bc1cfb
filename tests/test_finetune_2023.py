"""#19's end-to-end check: examples/finetune_2023.py (a 2023-style fine-tuner: accelerate + a DeepSpeed config of the
time, transformers' AdamW, a from_pretrained model with frozen parts trained with gradient checkpointing, diffusers'
CaptionProjection) runs unmodified under `zeropatch run` with DeepSpeed on CPU, its frozen weights bit-identical;
without zeropatch it stops with an error one of the patches it needs declares."""

import sys

from conftest import ROOT, assert_ok, clean_environment, requires, run_command

pytestmark = requires("torch", "deepspeed", "accelerate", "transformers", "diffusers")
SCRIPT = ROOT / "examples" / "finetune_2023.py"
# the patches the fine-tuner needs: the plain run stops at the first whose target has the change (which one depends
# on the releases installed: diffusers 0.24 on huggingface_hub >= 1.0 stops at hf_hub_legacy's, before the rest)
NEEDED = {"hf_hub_legacy", "diffusers_legacy_names", "transformers_adamw", "accelerate_kwargs", "ds_config_keys",
          "transformers_use_auth_token", "hf_frozen_params"}


def test_the_2023_finetuner_trains_under_zeropatch_and_keeps_frozen_weights():
    result = run_command([sys.executable, "-m", "zeropatch", "run", "--", sys.executable, SCRIPT, "--steps", "3"],
                         env=clean_environment(), step="finetune_2023 under zeropatch run")
    assert_ok(result)
    assert "5 frozen weights bit-identical" in result.stdout, result.stdout[-2000:]
    plain = run_command([sys.executable, SCRIPT, "--steps", "1"], env=clean_environment(), step="finetune_2023 plain")
    output = plain.stdout + plain.stderr
    assert plain.returncode != 0, output[-2000:]
    from zeropatch import _core

    recognised = {patch.name for patch in _core.patches_for_error(output)}
    assert recognised & NEEDED, f"the plain run failed with none of the errors {sorted(NEEDED)} declare:\n{output[-3000:]}"
