"""fairseq's configuration (``fairseq/dataclass/configs.py``, 0.10-0.12.2, the last release): the top-level
``FairseqConfig`` nests each group's dataclass as its default, as the hydra-style configurations of 2020-2022 did, and
``import fairseq`` builds it. No pin or declaration is needed: Python >= 3.11 refuses this configuration outright.

Without zeropatch, on Python >= 3.11:
  ValueError: mutable default <class '__main__.CommonConfig'> for field common is not allowed: use default_factory
With `zeropatch run -- python repro.py` the configuration builds as on Python 3.10: each group's default is one
instance, shared by the configurations that are not given their own.
"""

import dataclasses
import inspect
import sys
from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass
class FairseqDataclass:
    _name: Optional[str] = None


@dataclass
class CommonConfig(FairseqDataclass):
    seed: int = field(default=1, metadata={"help": "pseudo random number generator seed"})
    fp16: bool = field(default=False, metadata={"help": "use FP16"})
    log_interval: int = 100


@dataclass
class OptimizationConfig(FairseqDataclass):
    max_epoch: int = 0
    lr: Any = field(default_factory=lambda: [0.25])


@dataclass
class FairseqConfig(FairseqDataclass):
    common: CommonConfig = CommonConfig()
    optimization: OptimizationConfig = OptimizationConfig()
    task: Any = None


def main():
    default, given = FairseqConfig(), FairseqConfig(common=CommonConfig(seed=2))
    shared = FairseqConfig.common  # 3.10: the default is the class attribute and __init__'s default, one object
    if not (default.common is shared is FairseqConfig().common
            and inspect.signature(FairseqConfig).parameters["common"].default is shared
            and dataclasses.fields(FairseqConfig)[1].default is shared):
        sys.exit("repro: the default is not 3.10's shared instance")
    if (default.common.seed, given.common.seed, default.optimization.lr) != (1, 2, [0.25]):
        sys.exit(f"repro: the configuration answered {default}, {given}")
    try:
        @dataclass
        class Refused:  # what 3.10 refused too
            ids: list = []
    except ValueError as error:
        refused = str(error)
    else:
        sys.exit("repro: a list default was accepted")
    print(f"repro: fairseq's FairseqConfig built as on Python 3.10 (seed {default.common.seed}, {given.common.seed}); "
          f"still refused: {refused}")


if __name__ == "__main__":
    main()
