"""hf_trainer_tokenizer on the real transformers: ``tokenizer=`` is ``processing_class`` for Trainer and
Seq2SeqTrainer (a subclass without its own ``__init__`` too), both given is refused as 4.5x refused it,
``trainer.tokenizer`` reads and sets the processing class, and uninstall takes the property away again. The repro
trains and saves with alpaca-lora's call."""

import pytest

from conftest import assert_ok, distribution_version, requires, run_python

pytestmark = [requires("torch", "transformers"),
              pytest.mark.skipif((distribution_version("transformers") or (0,)) < (5,), reason="transformers >= 5")]


def test_tokenizer_is_the_processing_class_and_both_are_refused():
    assert_ok(run_python('''
import tempfile, torch, zeropatch, transformers
from transformers import Seq2SeqTrainer, Seq2SeqTrainingArguments, Trainer, TrainingArguments
class LegacyTrainer(Trainer):  # LLaVA's LLaVATrainer: no __init__ of its own
    pass
model = torch.nn.Linear(2, 2)
args = TrainingArguments(output_dir=tempfile.mkdtemp(), report_to=[], use_cpu=True)
first, second = object(), object()
trainer = LegacyTrainer(model=model, args=args, tokenizer=first)
assert trainer.processing_class is first and trainer.tokenizer is first
trainer.tokenizer = second
assert trainer.processing_class is second
seq2seq = Seq2SeqTrainer(model=model, args=Seq2SeqTrainingArguments(output_dir=args.output_dir, report_to=[], use_cpu=True),
                         tokenizer=first)
assert seq2seq.processing_class is first
try:
    Trainer(model=model, args=args, tokenizer=first, processing_class=second)
except ValueError as error:
    assert "Both `tokenizer` and `processing_class` are set" in str(error), error
else:
    raise AssertionError("both given must be refused")
zeropatch.uninstall("hf_trainer_tokenizer")
assert not hasattr(Trainer, "tokenizer")
print("ok")
'''))
