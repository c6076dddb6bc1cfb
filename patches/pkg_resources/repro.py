"""OpenAI CLIP's loader (``clip/clip.py``: ``from pkg_resources import packaging`` to compare torch versions), a
training script's requirement check, and a plugin lookup as tensorboard <= 2.20's command line does it.

Without zeropatch, on setuptools >= 82 (or without setuptools):
  ModuleNotFoundError: No module named 'pkg_resources'
With `zeropatch run -- python repro.py` they run and answer what importlib.metadata answers.
"""

import importlib.metadata
import sys
import warnings

import pkg_resources
from pkg_resources import packaging

import torch


def clip_load_check():  # clip/clip.py
    if packaging.version.parse(torch.__version__) < packaging.version.parse("1.7.1"):
        warnings.warn("PyTorch version 1.7.1 or higher is recommended")
    return packaging.version.parse(torch.__version__).release[0]


def check_requirements():  # a 2022 train.py (require() also checks what the requirements require)
    pkg_resources.require(["wrapt>=1.14", "packaging"])
    try:
        pkg_resources.require("wrapt<1.0")
    except pkg_resources.VersionConflict as conflict:
        return conflict.req
    return None


def main():
    major = clip_load_check()
    conflict = check_requirements()
    version = pkg_resources.get_distribution("torch").version
    plugins = [entry.name for entry in pkg_resources.iter_entry_points("console_scripts")]
    if version != importlib.metadata.version("torch") or conflict is None or major != int(torch.__version__.split(".")[0]):
        sys.exit(f"repro: pkg_resources answered differently: {version}, {conflict}")
    try:
        pkg_resources.get_distribution("no-such-distribution-zp")
    except pkg_resources.DistributionNotFound:
        pass
    print(f"repro: CLIP's version check, require() and entry points ran ({len(plugins)} console scripts)")


if __name__ == "__main__":
    main()
