"""Open-Sora 1.x's video I/O: ``from torchvision.io import write_video`` at module level
(opensora/datasets/utils.py), ``torchvision.io.read_video(path, pts_unit="sec", output_format="TCHW")`` in the
datasets, and Open-Sora 1.2's ``from torchvision.io.video import _read_from_stream, ...``.

Without zeropatch, on torchvision >= 0.26:
  ImportError: cannot import name 'write_video' from 'torchvision.io'
With `zeropatch run -- python repro.py` a clip is written and read back frame for frame (lossless codec).
"""

import os
import sys
import tempfile

import torch
import torchvision
from torchvision.io import write_video  # noqa: E402  (as opensora/datasets/utils.py does)
from torchvision.io.video import _align_audio_frames, _check_av_available, _read_from_stream  # noqa: F401  (1.2)


def save_sample(x, fps, save_path):
    """Open-Sora's save_sample: a [T, H, W, C] uint8 clip to a video file."""
    write_video(save_path, x, fps=fps, video_codec="libx264rgb", options={"crf": "0"})


def main():
    _check_av_available()
    torch.manual_seed(0)
    clip = torch.randint(0, 256, (16, 32, 48, 3), dtype=torch.uint8)
    path = os.path.join(tempfile.mkdtemp(), "sample.mp4")
    save_sample(clip, fps=8, save_path=path)
    vframes, aframes, info = torchvision.io.read_video(filename=path, pts_unit="sec", output_format="TCHW")
    if vframes.shape != (16, 3, 32, 48) or not torch.equal(vframes.permute(0, 2, 3, 1), clip):
        sys.exit(f"repro: read back {tuple(vframes.shape)}, not the clip that was written")
    print(f"repro: wrote and read back {vframes.shape[0]} frames at {info['video_fps']} fps, bit for bit "
          f"(torchvision {torchvision.__version__})")


if __name__ == "__main__":
    main()
