"""bnb_optimizer_args: bitsandbytes' optimizers take ``percentile_clipping=`` and ``block_wise=`` again, where the
value asks for what they still do.

Breaks: bitsandbytes 0.50 removed the non-blockwise 8-bit optimizer path and percentile clipping (PR #1871, deprecated
since 0.45), and with them the two keywords of every optimizer's constructor (``Adam8bit``, ``AdamW``, ``Lion8bit``,
``SGD8bit``, ``LAMB``, ``LARS``, their paged forms, ...). Code and configurations written for 0.3x-0.49 that spell out
the defaults, ``bnb.optim.AdamW8bit(params, lr=..., percentile_clipping=100, block_wise=True)``, stop at construction:
"__init__() got an unexpected keyword argument 'percentile_clipping'".

Changes, on releases whose optimizers lack the keywords, for each optimizer family that took them up to 0.49
(``LARS`` took only ``percentile_clipping``): ``percentile_clipping=100`` (no clipping: 0.49 clipped only below 100)
and ``block_wise=True`` (block-wise 8-bit state, the only kind 0.50 has) are accepted and change nothing, so the
optimizer steps exactly as one built without them. Any other value asked for what is gone: it is refused with a
TypeError that says so and what to do (clip gradients yourself, drop ``block_wise``, or install bitsandbytes < 0.50),
never dropped silently. Not restored: the keywords given by position; 0.50's other change of the same release to
``Lion``'s weight decay (reported in OneTrainer#1708; not verified here).
"""

import inspect

from zeropatch._core import NotNeeded, Patch, inform_once, installed_version

# optimizer family (the class name without "Paged" and "8bit" / "32bit") -> the removed keywords it took, with the
# value that asks for what the release still does
TOOK = {family: {"percentile_clipping": 100, "block_wise": True}
        for family in ("Adam", "AdamW", "Adagrad", "LAMB", "Lion", "RMSprop", "SGD")}
TOOK["LARS"] = {"percentile_clipping": 100}
PAGED = ("Adam", "AdamW", "Lion")  # the families with paged forms
GONE = {"percentile_clipping": "percentile clipping (clip the gradients before step(), e.g. with "
                               "torch.nn.utils.clip_grad_norm_, or install bitsandbytes<0.50)",
        "block_wise": "tensor-wise 8-bit optimizer state (block-wise is the only kind: drop block_wise, or install "
                      "bitsandbytes<0.50)"}


def _family(cls):
    name = cls.__name__.removeprefix("Paged")
    return name.removesuffix("8bit").removesuffix("32bit")


def _taking(took):
    """The wrapper of an optimizer family's ``__init__`` (``took``: its removed keywords and their default values)."""
    def taking_the_removed_keywords(wrapped, instance, args, kwargs):
        given = {name: kwargs.pop(name) for name in list(kwargs) if name in took}
        for name, value in given.items():
            if value != took[name]:
                raise TypeError(f"zeropatch (bnb_optimizer_args): {type(instance).__name__}({name}={value!r}): "
                                f"bitsandbytes {_release()} removed {GONE[name]}")
        if given:
            inform_once(f"bnb_optimizer_args: {', '.join(f'{name}={value!r}' for name, value in given.items())} "
                        "taken as bitsandbytes < 0.50 took it (the default: nothing changes)")
        return wrapped(*args, **kwargs)

    return taking_the_removed_keywords


def _release():
    return installed_version("bitsandbytes") or "0.50"


def apply(patcher, module):
    import torch

    classes = {value for value in vars(module).values() if isinstance(value, type)
               and issubclass(value, torch.optim.Optimizer) and _family(value) in TOOK}
    lacking = sorted((cls for cls in classes
                      if "percentile_clipping" not in inspect.signature(cls.__init__).parameters), key=lambda c: c.__name__)
    if not lacking:
        raise NotNeeded("bitsandbytes' optimizers still take percentile_clipping and block_wise (bitsandbytes < 0.50)")
    wrappers = {family: _taking(took) for family, took in TOOK.items()}
    for cls in lacking:
        patcher.wrap(cls, "__init__", wrappers[_family(cls)])
    return f"{len(lacking)} optimizers take percentile_clipping=100 / block_wise=True again"


PATCH = Patch(
    "bnb_optimizer_args",
    since="0.4.0",
    summary="bitsandbytes optimizers take percentile_clipping=100 and block_wise=True again (the defaults; other "
    "values, asking for what 0.50 removed, are refused with what to do)",
    package="bitsandbytes",
    affected="0.50.2 (swept; the keywords went in 0.50)",
    targets=("bitsandbytes.optim",),
    apply=apply,
    errors=(r"__init__\(\) got an unexpected keyword argument '(percentile_clipping|block_wise)'",),
    looks_for=tuple(f"call bitsandbytes.optim.{prefix}{family}{suffix} with {'|'.join(took)}"
                    for family, took in TOOK.items() for prefix in ("", *(("Paged",) if family in PAGED else ()))
                    for suffix in ("", "8bit", "32bit")),
)
