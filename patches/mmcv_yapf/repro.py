"""PixArt-alpha's config handling (train_scripts/train.py with mmcv 1.7.0, its pinned release): read a Python config
file with ``mmcv.Config.fromfile``, then dump it into the work folder, as every run does.

Without zeropatch, on yapf >= 0.40.2:
  TypeError: FormatCode() got an unexpected keyword argument 'verify'
With `zeropatch run -- python repro.py` the dump is written, and reading it back gives the same config.
"""

import os
import sys
import tempfile

from mmcv import Config

CONFIG = '''
data_root = "data/pixart"
image_size = 512
model = dict(type="PixArt_XL_2", window_block_indexes=[], use_rel_pos=False, lewei_scale=1.0)
optimizer = dict(type="AdamW", lr=2e-5, weight_decay=3e-2, eps=1e-10)
train_batch_size = 32
mixed_precision = "fp16"
'''


def main():
    folder = tempfile.mkdtemp(prefix="zeropatch-repro-")
    path = os.path.join(folder, "PixArt_xl2_img512_internal.py")
    with open(path, "w") as file:
        file.write(CONFIG)
    config = Config.fromfile(path)
    dumped = os.path.join(folder, "config.py")
    config.dump(dumped)  # train.py: config.dump(os.path.join(config.work_dir, 'config.py'))
    again = Config.fromfile(dumped)
    if again._cfg_dict.to_dict() != config._cfg_dict.to_dict():
        sys.exit("repro: the dumped config reads back differently")
    print("repro: mmcv Config.dump wrote the config, and it reads back the same")


if __name__ == "__main__":
    main()
