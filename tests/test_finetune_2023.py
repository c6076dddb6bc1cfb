"""#19's end-to-end check: examples/finetune_2023.py (a 2023-style fine-tuner: accelerate + a DeepSpeed config of the
time, transformers' AdamW, a from_pretrained model with frozen parts trained with gradient checkpointing, diffusers'
CaptionProjection) runs unmodified under `zeropatch run` with DeepSpeed on CPU, its frozen weights bit-identical;
without zeropatch it stops."""

import sys

from conftest import ROOT, assert_ok, clean_environment, requires, run_command

pytestmark = requires("torch", "deepspeed", "accelerate", "transformers", "diffusers")
SCRIPT = ROOT / "examples" / "finetune_2023.py"


def test_the_2023_finetuner_trains_under_zeropatch_and_keeps_frozen_weights():
    result = run_command([sys.executable, "-m", "zeropatch", "run", "--", sys.executable, SCRIPT, "--steps", "3"],
                         env=clean_environment(), step="finetune_2023 under zeropatch run")
    assert_ok(result)
    assert "5 frozen weights bit-identical" in result.stdout, result.stdout[-2000:]
    plain = run_command([sys.executable, SCRIPT, "--steps", "1"], env=clean_environment(), step="finetune_2023 plain")
    assert plain.returncode != 0, plain.stdout[-2000:]
