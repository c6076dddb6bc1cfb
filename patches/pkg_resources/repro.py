"""OpenAI CLIP's loader (``clip/clip.py``: ``from pkg_resources import packaging`` to compare torch versions), CLIP's
setup.py (``install_requires`` from ``pkg_resources.parse_requirements(open("requirements.txt"))``), a training
script's requirement check, and a plugin lookup as tensorboard <= 2.20's command line does it.

Without zeropatch, on setuptools >= 82 (or without setuptools):
  ModuleNotFoundError: No module named 'pkg_resources'
With `zeropatch run -- python repro.py` they run and answer what importlib.metadata answers.
"""

import importlib.metadata
import io
import sys
import warnings

import pkg_resources
from pkg_resources import packaging

import torch


def clip_load_check():  # clip/clip.py
    if packaging.version.parse(torch.__version__) < packaging.version.parse("1.7.1"):
        warnings.warn("PyTorch version 1.7.1 or higher is recommended")
    return packaging.version.parse(torch.__version__).release[0]


def setup_py_requirements():  # CLIP's setup.py: install_requires from its requirements.txt
    requirements_txt = io.StringIO("ftfy\nregex  # the tokenizer's\ntqdm\ntorch\ntorchvision>=0.8 ; python_version >= '3'\n")
    return [str(requirement) for requirement in pkg_resources.parse_requirements(requirements_txt)]


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
    install_requires = setup_py_requirements()
    if install_requires != ["ftfy", "regex", "tqdm", "torch", "torchvision>=0.8; python_version >= \"3\""]:
        sys.exit(f"repro: parse_requirements answered {install_requires}")
    if version != importlib.metadata.version("torch") or conflict is None or major != int(torch.__version__.split(".")[0]):
        sys.exit(f"repro: pkg_resources answered differently: {version}, {conflict}")
    try:
        pkg_resources.get_distribution("no-such-distribution-zp")
    except pkg_resources.DistributionNotFound:
        pass
    print(f"repro: CLIP's version check, require() and entry points ran ({len(plugins)} console scripts), and "
          f"setup.py's parse_requirements")


if __name__ == "__main__":
    main()
