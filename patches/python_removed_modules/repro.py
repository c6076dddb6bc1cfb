"""The first lines of a 2022 training script, tiny: ``LooseVersion`` to compare torch versions, ``strtobool`` for a
boolean option, ``imp.load_source`` for a Python configuration file, ``find_executable`` for ffmpeg.

Without zeropatch, on Python >= 3.12 (no setuptools standing in):
  ModuleNotFoundError: No module named 'distutils'
With `zeropatch run -- python repro.py` the script runs as on Python 3.11.
"""

import argparse
import os
import sys
import tempfile
from distutils.spawn import find_executable
from distutils.util import strtobool
from distutils.version import LooseVersion

import imp


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--use_ema", type=lambda text: bool(strtobool(text)), default=False)
    args = parser.parse_args(["--use_ema", "yes"])
    config_path = os.path.join(tempfile.mkdtemp(prefix="zeropatch-repro-"), "config.py")
    with open(config_path, "w") as file:
        file.write("lr = 1e-4\nbatch_size = 8\n")
    config = imp.load_source("config", config_path)
    if not args.use_ema or config.batch_size != 8:
        raise SystemExit("repro: the option or the configuration read wrong")
    if not LooseVersion("2.13.0+cpu") > LooseVersion("1.10") > LooseVersion("1.9"):
        raise SystemExit("repro: LooseVersion orders versions wrong")
    shell = find_executable("sh")
    print(f"repro: options, configuration and versions read as on Python 3.11 (sh at {shell}, "
          f"Python {sys.version_info.major}.{sys.version_info.minor})")


if __name__ == "__main__":
    sys.exit(main())
