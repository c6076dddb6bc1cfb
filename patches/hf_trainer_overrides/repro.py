"""A Trainer subclass written for transformers 4.3x, as LLaVA-1.5's ``LLaVATrainer`` and the fine-tuning forks of
2023 wrote them: ``compute_loss(self, model, inputs, return_outputs=False)``, ``_get_train_sampler(self)`` and
``_save_checkpoint(self, model, trial, metrics=None)`` handing ``metrics`` on to the Trainer's. One optimizer step
of two accumulated micro-batches on a tiny LLaMA with plain SGD, a checkpoint saved, and the weights compared with
4.3x's arithmetic done by hand: each micro-batch's mean loss divided by the accumulation steps.

Without zeropatch, on transformers >= 4.46 (which error comes first depends on the release):
  TypeError: LegacyTrainer._get_train_sampler() takes 1 positional argument but 2 were given
  TypeError: LegacyTrainer.compute_loss() got an unexpected keyword argument 'num_items_in_batch'
With `zeropatch run -- python repro.py` it trains, saves, and the step is 4.3x's.
"""

import copy
import os
import sys
import tempfile

import torch
import transformers

ACCUMULATION_STEPS = 2
LEARNING_RATE = 1.0


class LegacyTrainer(transformers.Trainer):
    def compute_loss(self, model, inputs, return_outputs=False):
        outputs = model(**inputs)
        return (outputs["loss"], outputs) if return_outputs else outputs["loss"]

    def _get_train_sampler(self):
        return torch.utils.data.SequentialSampler(self.train_dataset)

    def _save_checkpoint(self, model, trial, metrics=None):
        super()._save_checkpoint(model, trial, metrics)


def examples(lengths, width=8, vocabulary=32):
    """Token sequences of the given lengths, padded to ``width`` (labels -100 on the padding, as the collators do)."""
    rows = []
    for number, length in enumerate(lengths):
        tokens = [(number * 7 + position * 3) % (vocabulary - 1) + 1 for position in range(length)]
        padding = width - length
        rows.append({"input_ids": torch.tensor(tokens + [0] * padding),
                     "attention_mask": torch.tensor([1] * length + [0] * padding),
                     "labels": torch.tensor(tokens + [-100] * padding)})
    return rows


def step_as_4x(model, batches):
    """4.3x's step, by hand: the mean loss of each micro-batch over the accumulation steps, then SGD."""
    for batch in batches:
        (model(**batch).loss / ACCUMULATION_STEPS).backward()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter -= LEARNING_RATE * parameter.grad
    return model


def own_step_regression():
    """Why this release's Trainer takes no 4.3x step for any model (its own regression), or None."""
    release = tuple(int(part) for part in transformers.__version__.split(".")[:2])
    if release < (4, 48):
        return "4.46 / 4.47 divide no such loss by the accumulation steps"
    if (5, 2) <= release < (5, 6):
        return "5.2 - 5.5 divide every loss by the accumulation steps twice"
    return None


def main():
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=32, hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=16)
    model = transformers.LlamaForCausalLM(config)
    expected = copy.deepcopy(model)
    data = examples([3, 5, 2, 7])  # micro-batches of different token counts
    collator = transformers.default_data_collator
    output = tempfile.mkdtemp(prefix="zeropatch-repro-")
    args = transformers.TrainingArguments(output_dir=output, max_steps=1, per_device_train_batch_size=2,
                                          gradient_accumulation_steps=ACCUMULATION_STEPS, optim="sgd",
                                          learning_rate=LEARNING_RATE, lr_scheduler_type="constant", max_grad_norm=0.0,
                                          weight_decay=0.0, save_strategy="steps", save_steps=1, report_to=[],
                                          use_cpu=True, logging_steps=1)
    trainer = LegacyTrainer(model=model, args=args, train_dataset=data, data_collator=collator)
    trainer.train()
    if not os.path.isdir(os.path.join(output, "checkpoint-1")):
        raise SystemExit("repro: no checkpoint-1 saved")
    regression = own_step_regression()
    if regression:
        print(f"repro: the 4.3x Trainer subclass trained {trainer.state.global_step} step of {ACCUMULATION_STEPS} "
              f"accumulated micro-batches and saved ({regression}, their regression: the step is not compared)")
        return
    step_as_4x(expected, [collator(data[:2]), collator(data[2:])])
    worst = max((trained - wanted).abs().max().item() / (wanted.abs().max().item() or 1.0) for trained, wanted in
                zip(model.parameters(), expected.parameters()))
    if worst > 1e-5:
        raise SystemExit(f"repro: the step is not 4.3x's (largest relative difference {worst:.3g}): the loss was not "
                         f"divided by the {ACCUMULATION_STEPS} accumulation steps")
    print(f"repro: the 4.3x Trainer subclass trained {trainer.state.global_step} step of {ACCUMULATION_STEPS} "
          f"accumulated micro-batches as 4.3x did, and saved")


if __name__ == "__main__":
    sys.exit(main())
