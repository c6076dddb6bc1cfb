"""A training script's config reader written for PyYAML < 6 (the idiom of the 2019-2022 research repos): the config
is read with yaml.load(f) and no Loader, then its anchors, lists and nulls are used as the script was written to.

Without zeropatch, on PyYAML >= 6.0:
  TypeError: load() missing 1 required positional argument: 'Loader'
With `zeropatch run -- python repro.py` it runs: the config reads as yaml.safe_load reads it, the same values PyYAML
5's default loader gave for plain YAML.
"""

import os
import sys
import tempfile

import yaml

CONFIG = """
model: &base
  channels: 64
  attention_resolutions: [4, 2]
  dropout: 0.0
  use_checkpoint: null
first_stage:
  <<: *base
  channels: 128
trainer: {max_steps: 2, precision: 32, lr: 1.0e-4}
"""


def read_config(path):
    with open(path) as file:
        return yaml.load(file)  # PyYAML 5: read with its default Loader (a warning since 5.1)


def main():
    with tempfile.TemporaryDirectory(prefix="zeropatch-repro-") as folder:
        path = os.path.join(folder, "config.yaml")
        with open(path, "w") as file:
            file.write(CONFIG)
        config = read_config(path)
    first_stage, trainer = config["first_stage"], config["trainer"]
    if first_stage != {"channels": 128, "attention_resolutions": [4, 2], "dropout": 0.0, "use_checkpoint": None}:
        sys.exit(f"repro: the merged section reads {first_stage}")
    if trainer != {"max_steps": 2, "precision": 32, "lr": 1e-4} or type(trainer["lr"]) is not float:
        sys.exit(f"repro: the trainer section reads {trainer}")
    print(f"repro: the legacy config read without a Loader ({len(config)} sections, anchors merged)")


if __name__ == "__main__":
    main()
