"""hf_trainer_overrides on the real transformers: a Trainer subclass with 4.3x's signatures is adapted on its
instance (never on the class), one written for the new release is left alone, and the repro's comparison with
4.3x's arithmetic can fail: a subclass that merely accepts ``num_items_in_batch`` and ignores it (the usual hand
fix) gets the new release's step, ``gradient_accumulation_steps`` times 4.3x's, on every release that scales so."""

import os

import pytest

from conftest import assert_ok, distribution_version, requires, run_python

pytestmark = [requires("torch", "transformers"),
              pytest.mark.skipif((distribution_version("transformers") or (0,)) < (4, 46),
                                 reason="transformers >= 4.46")]

REPRO = os.path.join(os.path.dirname(__file__), os.pardir, "patches", "hf_trainer_overrides", "repro.py")


def test_adapters_live_on_the_legacy_instance_and_new_code_is_left_alone():
    assert_ok(run_python('''
import inspect, tempfile, torch, zeropatch, transformers
from transformers import Trainer, TrainingArguments

class Legacy(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False):
        return model(**inputs)
    def _get_train_sampler(self):
        return "legacy sampler"

class Current(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        return model(**inputs)

model = transformers.LlamaForCausalLM(transformers.LlamaConfig(vocab_size=8, hidden_size=8, intermediate_size=8,
    num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2))
args = TrainingArguments(output_dir=tempfile.mkdtemp(), report_to=[], use_cpu=True)
legacy, current = Legacy(model=model, args=args), Current(model=model, args=args)
assert "compute_loss" in vars(legacy) and "compute_loss" not in vars(current)
assert vars(Legacy)["compute_loss"].__code__ is Legacy.compute_loss.__code__  # the user's class is untouched
assert legacy.model_accepts_loss_kwargs is False and current.model_accepts_loss_kwargs is True
assert list(inspect.signature(legacy.compute_loss).parameters) == ["model", "inputs", "return_outputs"]
assert legacy.compute_loss(lambda **inputs: inputs, {"x": 1}, num_items_in_batch=3) == {"x": 1}
if "train_dataset" in inspect.signature(Trainer._get_train_sampler).parameters:  # 4.52+
    assert legacy._get_train_sampler(["a dataset"]) == "legacy sampler"
zeropatch.uninstall("hf_trainer_overrides")
assert "compute_loss" not in vars(Legacy(model=model, args=args))
print("ok")
'''))


def test_a_subclass_that_only_accepts_num_items_in_batch_gets_the_new_step():
    """The repro's check has teeth: with the hand fix (``num_items_in_batch=None`` accepted and ignored) the
    subclass is code for the new release, zeropatch leaves it alone, and the step is not 4.3x's."""
    result = run_python(f'''
import runpy, sys, zeropatch
repro = runpy.run_path({REPRO!r})
regression = repro["own_step_regression"]()
if regression:
    sys.exit(f"the release's own step is not 4.3x's for any model ({{regression}}): the repro does not compare it")
legacy = repro["LegacyTrainer"]
old_compute_loss = legacy.compute_loss
def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
    return old_compute_loss(self, model, inputs, return_outputs)
legacy.compute_loss = compute_loss
repro["main"]()
''')
    if "the repro does not compare it" in result.stderr:
        pytest.skip(result.stderr.strip().splitlines()[-1])
    assert "the step is not 4.3x's" in result.stderr, result.stderr[-3000:]
