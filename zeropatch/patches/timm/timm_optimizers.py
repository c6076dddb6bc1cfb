"""timm_optimizers: timm's own optimizers import again under the names the releases before 1.0.12 (and 0.5) gave them.

Breaks, read in the sdists of 0.4.12, 0.5.4, 1.0.11 and 1.0.12:
- timm 1.0.12 renamed its own Nadam, RAdam and AdamW (``NAdamLegacy``, ``RAdamLegacy``, ``AdamWLegacy``, the same
  classes) when torch's took their place: ``from timm.optim.nadam import Nadam``, ``from timm.optim.radam import
  RAdam``, ``from timm.optim.adamw import AdamW`` and ``from timm.optim import Nadam`` (the ``optim_factory.py`` that
  DeiT, Swin and their forks copied from timm) fail: "cannot import name 'Nadam' from 'timm.optim.nadam'".
- timm 0.5 removed ``timm.optim.novograd`` (Kimura's NovoGrad; the factory's ``novograd`` became NVIDIA's
  ``NvNovoGrad``, a different algorithm): the same copies' ``from timm.optim import ..., NovoGrad, NvNovoGrad`` and
  ``from timm.optim.novograd import NovoGrad`` fail: "cannot import name 'NovoGrad' from 'timm.optim'".

Changes, each only where the installed timm lacks the name:
- ``Nadam``, ``RAdam`` and ``AdamW`` back in their modules, and ``Nadam`` in ``timm.optim``, as the classes timm
  renamed: 1.0.11's arithmetic bit for bit (the tests step them against its own) wherever the parameter groups share
  a learning rate; RAdam's step-size cache, which gave every group the step size of the first group to reach a step
  (a bug timm fixed after 1.0.12), is not brought back.
- ``NovoGrad`` back in ``timm.optim`` and in a ``timm.optim.novograd`` zeropatch provides, with 0.4.12's arithmetic
  (tested against it): the constructor's betas, eps and weight decay for every group, each group's lr; the gradient
  normalised in place by a running average of its squared norm; moments of the layer's norm; and, as there, the first
  step of each instance starting the moments afresh, a loaded state included.
What 1.0.12 changed silently for the names that stayed (``timm.optim.RAdam`` / ``AdamW`` and the factory's ``radam``
/ ``nadam``, torch's classes now) is ``timm_legacy_optimizers``: it restores them for legacy code only.
"""

import functools
import math

from zeropatch._core import NotNeeded, Patch, Skip, is_provided, lacks

OPTIM = "timm.optim"
NOVOGRAD = "timm.optim.novograd"
RENAMED = {  # module -> (the name before 1.0.12, the class's name since)
    "timm.optim.nadam": ("Nadam", "NAdamLegacy"),
    "timm.optim.radam": ("RAdam", "RAdamLegacy"),
    "timm.optim.adamw": ("AdamW", "AdamWLegacy"),
}


@functools.lru_cache(maxsize=None)
def novograd_class():
    """NovoGrad as timm 0.4.12 computed it (written here from reading it), built on first use (torch is imported
    then)."""
    import torch

    class NovoGrad(torch.optim.Optimizer):
        """NovoGrad (Kimura's, arXiv:1905.11286) as timm 0.4 had it (restored by zeropatch): betas, eps and weight
        decay from the constructor for every group, each group's lr."""

        def __init__(self, params, grad_averaging=False, lr=0.1, betas=(0.95, 0.98), eps=1e-8, weight_decay=0):
            super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))
            self._lr = lr
            self._beta1, self._beta2 = betas
            self._eps = eps
            self._wd = weight_decay
            self._grad_averaging = grad_averaging
            self._momentum_initialized = False

        def _with_gradients(self):
            return [(group, p) for group in self.param_groups for p in group["params"] if p.grad is not None]

        @torch.no_grad()
        def step(self, closure=None):
            loss = None
            if closure is not None:
                with torch.enable_grad():
                    loss = closure()
            if not self._momentum_initialized:
                for _, p in self._with_gradients():
                    if p.grad.is_sparse:
                        raise RuntimeError("NovoGrad does not support sparse gradients")
                    norm_squared = torch.norm(p.grad) ** 2
                    self.state[p].update(step=0, v=norm_squared, grad_ema=None,
                                         m=p.grad / (torch.sqrt(norm_squared) + self._eps) + self._wd * p)
                self._momentum_initialized = True
            beta1, beta2, eps = self._beta1, self._beta2, self._eps
            for group, p in self._with_gradients():
                state = self.state[p]
                state["step"] += 1
                grad = p.grad  # normalised in place, as 0.4.12 did
                norm_squared = torch.norm(grad) ** 2
                grad_ema = state["grad_ema"]
                grad_ema = norm_squared if grad_ema is None else grad_ema * beta2 + norm_squared * (1.0 - beta2)
                grad *= 1.0 / (torch.sqrt(grad_ema) + eps)
                if self._grad_averaging:
                    grad *= 1.0 - beta1
                v = beta2 * state["v"] + (1.0 - beta2) * torch.norm(grad) ** 2
                m = beta1 * state["m"] + (grad / (torch.sqrt(v) + eps) + self._wd * p)
                step_size = group["lr"] * math.sqrt(1 - beta2 ** state["step"]) / (1 - beta1 ** state["step"])
                state.update(v=v, m=m, grad_ema=grad_ema)
                p.add_(m, alpha=-step_size)
            return loss

    return NovoGrad


def apply(patcher, module):
    name = module.__name__
    if name == NOVOGRAD:
        if not is_provided(module):
            raise NotNeeded("timm still has timm.optim.novograd (timm < 0.5)")
        patcher.fill(module, {"NovoGrad": novograd_class()}, "timm < 0.5's timm.optim.novograd: Kimura's NovoGrad "
                     "(provided by zeropatch)")
        return "timm.optim.novograd provided: NovoGrad as timm 0.4.12 computed it"
    if name in RENAMED:
        old, new = RENAMED[name]
        if not lacks(module, old):
            raise NotNeeded(f"{name} still has {old} (timm < 1.0.12)")
        if not isinstance(getattr(module, new, None), type):
            raise Skip(f"{name} has neither {old} nor {new}")
        patcher.put_back(module, {old: getattr(module, new)})
        return f"{name}.{old} back, as {new} (the class 1.0.12 renamed)"
    nadam = lacks(module, "Nadam") and isinstance(getattr(module, "NAdamLegacy", None), type)
    novograd = lacks(module, "NovoGrad")
    if not nadam and not novograd:
        raise NotNeeded("timm.optim still has Nadam and NovoGrad (timm < 0.5)")
    done = []
    if nadam:
        patcher.put_back(module, {"Nadam": module.NAdamLegacy})
        done.append("timm.optim.Nadam back, as NAdamLegacy")
    if novograd:
        patcher.put_back(module, {"NovoGrad": novograd_class()}, home=NOVOGRAD)
        done.append("timm.optim.NovoGrad back, as timm 0.4.12 computed it")
    return "; ".join(done)


PATCH = Patch(
    "timm_optimizers",
    since="0.8.0",
    summary="timm's own Nadam, RAdam and AdamW under their names before 1.0.12 (timm.optim.nadam.Nadam, ...), and "
    "0.4's NovoGrad (timm.optim.novograd): the optim_factory.py DeiT and Swin copied imports again",
    package="timm",
    affected="0.5.4-1.0.31 (swept: NovoGrad from 0.5.4, Nadam / RAdam / AdamW from 1.0.12)",
    targets=(OPTIM, *RENAMED, NOVOGRAD),
    provides=(NOVOGRAD,),
    apply=apply,
    errors=(r"cannot import name '(Nadam|NovoGrad)' from 'timm\.optim'",
            r"cannot import name 'Nadam' from 'timm\.optim\.nadam'",
            r"cannot import name 'RAdam' from 'timm\.optim\.radam'",
            r"cannot import name 'AdamW' from 'timm\.optim\.adamw'",
            r"module 'timm\.optim' has no attribute '(Nadam|NovoGrad)'",
            r"No module named 'timm\.optim\.novograd'"),
    looks_for=("name timm.optim.Nadam", "name timm.optim.NovoGrad", "name timm.optim.nadam.Nadam",
               "name timm.optim.radam.RAdam", "name timm.optim.adamw.AdamW", "import timm.optim.novograd"),
)
