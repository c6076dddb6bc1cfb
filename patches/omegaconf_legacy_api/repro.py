"""taming-transformers' main.py configuration handling, tiny (written for omegaconf 2.0.0, pinned beside this file as
its environment.yaml pins it): the Trainer's settings read with `lightning_config.logger or ...` where the config has
no such key, and the merged configs printed with `cfg.pretty()`.

Without zeropatch, on omegaconf >= 2.1:
  omegaconf.errors.ConfigAttributeError: Missing key logger
With `zeropatch run -- python repro.py`: missing keys read as None, as omegaconf 2.0 gave them (the pin here says the
code was written for 2.0), and pretty() prints the YAML.
"""

import sys

from omegaconf import OmegaConf


def main():
    config = OmegaConf.create({"model": {"target": "taming.models.vqgan.VQModel", "params": {"embed_dim": 16}},
                               "lightning": {"trainer": {"max_steps": 6}}})
    lightning_config = config.pop("lightning", OmegaConf.create())
    trainer_config = lightning_config.get("trainer", OmegaConf.create())
    logger_config = lightning_config.logger or OmegaConf.create()
    checkpoint_config = lightning_config["modelcheckpoint"] or OmegaConf.create()
    callbacks_config = lightning_config.callbacks or OmegaConf.create()
    if (trainer_config.max_steps, dict(logger_config), dict(checkpoint_config), dict(callbacks_config)) != (6, {}, {}, {}):
        sys.exit("repro: the configs did not read as omegaconf 2.0 read them")
    printed = config.pretty()
    if "target: taming.models.vqgan.VQModel" not in printed:
        sys.exit(f"repro: pretty() gave {printed!r}")
    print("repro: missing keys read as None and pretty() printed the config, as omegaconf 2.0 did")


if __name__ == "__main__":
    main()
