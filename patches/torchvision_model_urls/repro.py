"""A backbone of 2019-2022 loading its pretrained weights the old way (fairseq / detection forks, perceptual
losses): `from torchvision.models.utils import load_state_dict_from_url` and the model module's `model_urls`.

Without zeropatch, on torchvision >= 0.11 (and `model_urls` >= 0.15):
  ModuleNotFoundError: No module named 'torchvision.models.utils'
With `zeropatch run -- python repro.py` both imports work: the URLs are the ones torchvision 0.12 wrote out (checked
against its literals below), and load_state_dict_from_url is torch.hub's (here loading a local file: no network).
"""

import os
import sys
import tempfile

import torch
from torchvision.models.utils import load_state_dict_from_url
from torchvision.models import resnet
from torchvision.models.resnet import model_urls

TORCHVISION_0_12 = {  # torchvision 0.12's literal model_urls entries
    "resnet18": "https://download.pytorch.org/models/resnet18-f37072fd.pth",
    "resnet50": "https://download.pytorch.org/models/resnet50-0676ba61.pth",
}


class Backbone(resnet.ResNet):  # the legacy pattern: a subclass that loads the URL's weights itself
    def __init__(self, url=None, cache=None):
        super().__init__(resnet.BasicBlock, [2, 2, 2, 2])
        if url is not None:
            self.load_state_dict(load_state_dict_from_url(url, model_dir=cache, progress=False))


def main():
    for name, url in TORCHVISION_0_12.items():
        if model_urls[name] != url:
            sys.exit(f"repro: model_urls[{name!r}] is {model_urls[name]}, torchvision 0.12 had {url}")
    if load_state_dict_from_url is not torch.hub.load_state_dict_from_url:
        sys.exit("repro: torchvision.models.utils.load_state_dict_from_url should be torch.hub's")
    torch.manual_seed(0)
    saved = Backbone()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, os.path.basename(model_urls["resnet18"]))
        torch.save(saved.state_dict(), path)
        loaded = Backbone("file://" + path, cache=os.path.join(folder, "hub"))
    if not all(torch.equal(a, b) for a, b in zip(saved.state_dict().values(), loaded.state_dict().values())):
        sys.exit("repro: the backbone did not load the weights it was given")
    print("repro: the legacy backbone found model_urls and loaded its weights through torchvision.models.utils")


if __name__ == "__main__":
    main()
