"""The optimizer factory DeiT-era repositories copied from timm 0.3-0.4 (its imports, as they wrote them), small: a
model trained two steps by each of timm's own Nadam, RAdam and NovoGrad, their state saved and read back into a new
optimizer, and the training going on from it.

Without zeropatch, on timm >= 1.0.12 (and NovoGrad on any timm >= 0.5):
  ImportError: cannot import name 'Nadam' from 'timm.optim'
With `zeropatch run -- python repro.py` the three optimizers import under their old names, train, save and resume.
"""

import torch
from timm.optim import Lookahead, Nadam, NovoGrad, NvNovoGrad, RAdam, RMSpropTF  # noqa: F401 (the copies' line)
from timm.optim.nadam import Nadam as NadamFromItsModule
from timm.optim.novograd import NovoGrad as NovoGradFromItsModule


def train(optimizer, model, steps):
    for _ in range(steps):
        optimizer.zero_grad()
        loss = model(torch.randn(4, 8)).pow(2).mean()
        loss.backward()
        optimizer.step()
    return loss.item()


def main():
    if Nadam is not NadamFromItsModule or NovoGrad is not NovoGradFromItsModule:
        raise AssertionError("timm.optim's Nadam / NovoGrad are not their modules' own")
    torch.manual_seed(0)
    for make in (Nadam, RAdam, NovoGrad):
        model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
        optimizer = make(model.parameters(), lr=1e-2, weight_decay=0.05)
        train(optimizer, model, 2)
        state = optimizer.state_dict()
        resumed = make(model.parameters(), lr=1e-2, weight_decay=0.05)
        resumed.load_state_dict(state)
        loss = train(resumed, model, 2)
        if loss != loss:
            raise AssertionError(f"{make.__name__}: the loss is NaN")
        print(f"repro: {make.__name__} trained, saved and resumed (loss {loss:.4f})", flush=True)
    print("repro: timm's own Nadam, RAdam and NovoGrad trained under their old names")


if __name__ == "__main__":
    main()
