"""transformers_adamw: ``transformers.AdamW``, removed in 4.50, is back with transformers' own defaults and arithmetic.

Breaks: transformers deprecated its ``AdamW`` (``transformers.optimization.AdamW``) for ``torch.optim.AdamW`` and
removed it in 4.50: ``from transformers import AdamW`` in BERT-era fine-tuning code (ColBERT, AlignScore, the
course notebooks, legacy trainers) dies with "cannot import name 'AdamW' from 'transformers'". A bare alias to
``torch.optim.AdamW`` would silently change training: transformers' defaults are ``eps=1e-6``, ``weight_decay=0.0``
and ``correct_bias=True`` (torch's: ``eps=1e-8``, ``weight_decay=1e-2``), it adds ``eps`` to the un-corrected
``sqrt(v)`` and folds both bias corrections into the step size, and it applies the decoupled decay after the Adam
update, from the updated weight.

Changes: ``transformers.optimization.AdamW`` (and ``transformers.AdamW``) is a torch Optimizer with 4.49's signature,
defaults, per-parameter arithmetic in the same order of operations (so the same floats come out) and state keys
(``step``, ``exp_avg``, ``exp_avg_sq``), so its state dicts load both ways. On transformers < 4.50 nothing changes.
"""

import importlib
import importlib.util

from zeropatch._core import NotNeeded, Patch, Skip
from zeropatch.patches.transformers._top_level import answer_at_top_level


def _legacy_adamw(torch):
    import math

    class AdamW(torch.optim.Optimizer):
        """transformers < 4.50's AdamW (decoupled weight decay), as it computed (restored by zeropatch)."""

        def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0, correct_bias=True,
                     no_deprecation_warning=False):
            if lr < 0.0:
                raise ValueError(f"Invalid learning rate: {lr} - should be >= 0.0")
            for beta in betas:
                if not 0.0 <= beta < 1.0:
                    raise ValueError(f"Invalid beta parameter: {beta} - should be in [0.0, 1.0)")
            if eps < 0.0:
                raise ValueError(f"Invalid epsilon value: {eps} - should be >= 0.0")
            super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                                      "correct_bias": correct_bias})

        @torch.no_grad()
        def step(self, closure=None):
            loss = closure() if closure is not None else None
            for group in self.param_groups:
                beta1, beta2 = group["betas"]
                for parameter in group["params"]:
                    if parameter.grad is None:
                        continue
                    if parameter.grad.is_sparse:
                        raise RuntimeError("Adam does not support sparse gradients, please consider SparseAdam instead")
                    state = self.state[parameter]
                    if not state:
                        state.update(step=0, exp_avg=torch.zeros_like(parameter), exp_avg_sq=torch.zeros_like(parameter))
                    state["step"] += 1
                    state["exp_avg"].mul_(beta1).add_(parameter.grad, alpha=1.0 - beta1)
                    state["exp_avg_sq"].mul_(beta2).addcmul_(parameter.grad, parameter.grad, value=1.0 - beta2)
                    denominator = state["exp_avg_sq"].sqrt().add_(group["eps"])
                    step_size = group["lr"]
                    if group["correct_bias"]:
                        step_size *= math.sqrt(1.0 - beta2 ** state["step"]) / (1.0 - beta1 ** state["step"])
                    parameter.addcdiv_(state["exp_avg"], denominator, value=-step_size)
                    if group["weight_decay"] > 0.0:
                        parameter.add_(parameter, alpha=-group["lr"] * group["weight_decay"])
            return loss

    return AdamW


def apply(patcher, module):
    if module.__name__ == "transformers.optimization":
        if "AdamW" in vars(module):
            raise NotNeeded("transformers.optimization still has AdamW (transformers < 4.50)")
        import torch

        patcher.put_back(module, {"AdamW": _legacy_adamw(torch)})
        return "transformers.optimization.AdamW restored with 4.49's defaults and arithmetic"
    if importlib.util.find_spec("transformers.optimization") is None:
        raise Skip("transformers has no transformers.optimization module")
    if "AdamW" in getattr(module, "_class_to_module", {}) or "AdamW" in vars(module):
        raise NotNeeded("transformers still exports AdamW (transformers < 4.50)")
    answer_at_top_level(patcher, module, {"AdamW": lambda: importlib.import_module("transformers.optimization").AdamW})
    return "transformers.AdamW resolves to transformers.optimization.AdamW"


PATCH = Patch(
    "transformers_adamw",
    since="0.3.0",
    summary="transformers.AdamW (removed in 4.50) back with transformers' own defaults (eps=1e-6, weight_decay=0, "
    "correct_bias) and arithmetic, not torch's AdamW",
    package="transformers",
    affected="4.51.3-5.23.0",
    targets=("transformers", "transformers.optimization"),
    apply=apply,
    errors=(r"cannot import name 'AdamW' from 'transformers'", r"module 'transformers(\.optimization)?' has no attribute 'AdamW'"),
    looks_for=("name transformers.AdamW", "name transformers.optimization.AdamW"),
)
