"""transformers' example scripts of 2021-2023 (run_glue.py, run_summarization.py, run_clm.py) and the fine-tuners
written from them: `from datasets import load_metric`, then `metric = load_metric("accuracy")` and its `compute` in
`compute_metrics`.

Without zeropatch, on datasets >= 3.0:
  ImportError: cannot import name 'load_metric' from 'datasets'
With `zeropatch run -- python repro.py` it runs: the canonical metric is loaded through evaluate.load.

This machine reaches no Hub: the metric is loaded offline, from a module cache (a temporary HF_HOME) seeded with the
script each library would have downloaded, `metrics/accuracy` for datasets 2.x (a datasets.Metric) and
`evaluate-metric/accuracy` for evaluate (an evaluate.Metric); a release with its own load_metric reads the first.
"""

import os
import sys
import tempfile

SCRIPT = '''
import datasets
import {library}


class Accuracy({library}.Metric):
    def _info(self):
        return {library}.MetricInfo(
            description="accuracy", citation="", inputs_description="predictions, references",
            features=datasets.Features({{"predictions": datasets.Value("int32"),
                                        "references": datasets.Value("int32")}}))

    def _compute(self, predictions, references, normalize=True):
        right = sum(int(p == r) for p, r in zip(predictions, references))
        return {{"accuracy": right / len(predictions) if normalize else float(right)}}
'''
CACHED = {"datasets": ("datasets_modules", "accuracy"), "evaluate": ("evaluate_modules", "evaluate-metric--accuracy")}


def seed_module_caches(home):
    for library, (modules, name) in CACHED.items():
        folder = os.path.join(home, "modules", modules, "metrics", name, "0" * 64)
        os.makedirs(folder)
        for package in (os.path.join(home, "modules"), os.path.dirname(os.path.dirname(os.path.dirname(folder))),
                        os.path.dirname(os.path.dirname(folder)), os.path.dirname(folder), folder):
            open(os.path.join(package, "__init__.py"), "a").close()
        with open(os.path.join(folder, "accuracy.py"), "w") as script:
            script.write(SCRIPT.format(library=library))


def main():
    with tempfile.TemporaryDirectory(prefix="repro-hf-") as home:
        seed_module_caches(home)
        os.environ.update(HF_HOME=home, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_EVALUATE_OFFLINE="1")
        evaluate(home)


def evaluate(home):
    from datasets import load_metric  # as run_glue.py has it

    metric = load_metric("accuracy", experiment_id="repro")
    for predictions, labels in (([1, 0, 1], [1, 1, 1]), ([0], [0])):  # the Trainer's evaluation batches
        metric.add_batch(predictions=predictions, references=labels)
    result = metric.compute()
    if result != {"accuracy": 0.75}:
        sys.exit(f"repro: the metric computed {result}")
    print(f"repro: load_metric('accuracy') computed {result} over the evaluation batches")


if __name__ == "__main__":
    main()
