"""The utilities of a 2019 training toolkit, tiny (mmcv 0.x / detectron-era code): a config merged recursively with
``collections.Mapping``, a registry that builds a class from a config after checking its arguments with
``inspect.getargspec``, image aspect ratios reduced with ``fractions.gcd``, a checkpoint's metadata encoded with
``base64.encodestring``, and a prefetching data-loader thread polled with ``isAlive()``.

Without zeropatch, on Python >= 3.10 (each name in turn on 3.9-3.11):
  ImportError: cannot import name 'Mapping' from 'collections'
With `zeropatch run -- python repro.py` the utilities run as on Python 3.8-3.10, with those releases' semantics:
``fractions.gcd`` keeps the sign of its second argument, ``getargspec`` refuses keyword-only parameters.
"""

import base64
import fractions
import inspect
import queue
import sys
import threading
from collections import Mapping, Sequence

REGISTRY = {}


def merge(base, update):
    """mmcv 0.x's Config merge: nested mappings merged key by key, anything else replaced."""
    merged = dict(base)
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def register(cls):
    REGISTRY[cls.__name__] = cls
    return cls


def build(config):
    """Build ``config['type']`` with the config's other keys, as a 2019 registry did: unknown keys are an error."""
    config = dict(config)
    cls = REGISTRY[config.pop("type")]
    spec = inspect.getargspec(cls.__init__)
    unknown = set(config) - set(spec.args[1:])
    if unknown and spec.keywords is None:
        raise TypeError(f"{cls.__name__} takes no {sorted(unknown)}")
    return cls(**config)


@register
class ResNet:
    def __init__(self, depth=50, frozen_stages=-1, out_indices=(0, 1, 2, 3)):
        self.depth, self.frozen_stages, self.out_indices = depth, frozen_stages, out_indices


def aspect_ratio(width, height):
    divisor = fractions.gcd(width, height)
    return width // divisor, height // divisor


def prefetch(batches):
    ready = queue.Queue()
    worker = threading.Thread(target=lambda: [ready.put(batch) for batch in batches], daemon=True)
    worker.start()
    got = [ready.get(timeout=10) for _ in batches]
    worker.join(timeout=10)
    if worker.isAlive():
        raise SystemExit("repro: the prefetch thread did not finish")
    return got


def main():
    config = merge({"model": {"type": "ResNet", "depth": 50, "frozen_stages": 1}, "lr": 0.02},
                   {"model": {"depth": 101}, "lr": 0.01})
    if config != {"model": {"type": "ResNet", "depth": 101, "frozen_stages": 1}, "lr": 0.01}:
        raise SystemExit(f"repro: the configs merged wrong: {config}")
    model = build(config["model"])
    if (model.depth, model.frozen_stages) != (101, 1) or not isinstance(model.out_indices, Sequence):
        raise SystemExit("repro: the registry built the model wrong")
    spec = inspect.getargspec(ResNet.__init__)
    if type(spec).__name__ != "ArgSpec" or spec.defaults != (50, -1, (0, 1, 2, 3)):
        raise SystemExit(f"repro: getargspec answered {spec!r}")

    def keyword_only(self, *, depth=50):
        pass

    try:
        inspect.getargspec(keyword_only)
    except ValueError:
        pass
    else:
        raise SystemExit("repro: getargspec accepted keyword-only parameters, as no Python did")
    ratios = [aspect_ratio(1920, 1080), aspect_ratio(640, 480)]
    if ratios != [(16, 9), (4, 3)] or fractions.gcd(4, -6) != -2:  # 3.8's gcd takes the sign of b: math.gcd gives 2
        raise SystemExit(f"repro: gcd answered {ratios}, {fractions.gcd(4, -6)}")
    meta = base64.encodestring(b"resnet101 epoch 12")
    if base64.decodestring(meta) != b"resnet101 epoch 12" or not meta.endswith(b"\n"):
        raise SystemExit(f"repro: the checkpoint metadata encoded as {meta!r}")
    batches = prefetch([1, 2, 3])
    if batches != [1, 2, 3]:
        raise SystemExit(f"repro: the loader gave {batches}")
    print(f"repro: the 2019 toolkit's utilities ran as on Python 3.8-3.10 (config merged, {type(model).__name__}-"
          f"{model.depth} built, aspect ratios {ratios}, Python {sys.version_info.major}.{sys.version_info.minor})")


if __name__ == "__main__":
    main()
