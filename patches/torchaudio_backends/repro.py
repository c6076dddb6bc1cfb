"""A speech data pipeline written for torchaudio <= 2.8, tiny: torchaudio's own YESNO dataset read from a local copy,
then what legacy loaders do with a clip (its length from `torchaudio.info`, its 16-bit samples with `normalize=False`,
a crop with `frame_offset` / `num_frames`, a processed copy saved as 16-bit PCM).

Without zeropatch, on torchaudio >= 2.9 without TorchCodec:
  ImportError: TorchCodec is required for load_with_torchcodec. Please install torchcodec to use this function.
With `zeropatch run -- python repro.py`: each call gives what torchaudio 2.8's soundfile backend gave.
"""

import os
import sys
import tempfile
import wave

import numpy as np
import torch
import torchaudio
from torchaudio.datasets import YESNO

SAMPLE_RATE = 8000


def write_clip(path, samples):
    """A 16-bit mono WAV, written with the standard library (no audio library involved)."""
    with wave.open(path, "wb") as clip:
        clip.setnchannels(1)
        clip.setsampwidth(2)
        clip.setframerate(SAMPLE_RATE)
        clip.writeframes(samples.astype("<i2").tobytes())


def main():
    root = tempfile.mkdtemp(prefix="zeropatch-repro-")
    os.makedirs(os.path.join(root, "waves_yesno"))
    samples = (np.sin(np.arange(800) / 7.0) * 12000).astype(np.int16)
    write_clip(os.path.join(root, "waves_yesno", "0_1_1_0_0_1_0_1.wav"), samples)

    waveform, sample_rate, labels = YESNO(root)[0]
    expected = torch.from_numpy(samples.astype(np.float32) / 32768).unsqueeze(0)
    if sample_rate != SAMPLE_RATE or labels != [0, 1, 1, 0, 0, 1, 0, 1] or not torch.equal(waveform, expected):
        sys.exit(f"repro: YESNO gave {tuple(waveform.shape)} {waveform.dtype} at {sample_rate} Hz, {labels}")

    path = os.path.join(root, "waves_yesno", "0_1_1_0_0_1_0_1.wav")
    metadata = torchaudio.info(path)
    if (metadata.num_frames, metadata.num_channels, metadata.bits_per_sample, metadata.encoding) != (800, 1, 16, "PCM_S"):
        sys.exit(f"repro: torchaudio.info gave {metadata}")
    raw, _ = torchaudio.load(path, normalize=False)
    if raw.dtype != torch.int16 or not torch.equal(raw[0], torch.from_numpy(samples)):
        sys.exit(f"repro: normalize=False gave {raw.dtype}, not the file's 16-bit samples")
    crop, _ = torchaudio.load(path, frame_offset=100, num_frames=300)
    if not torch.equal(crop, expected[:, 100:400]):
        sys.exit(f"repro: the crop is {tuple(crop.shape)}")

    louder = os.path.join(root, "louder.wav")
    torchaudio.save(louder, (waveform * 2).clamp(-1, 1), sample_rate, encoding="PCM_S", bits_per_sample=16)
    saved = torchaudio.info(louder)
    if (saved.bits_per_sample, saved.encoding, saved.num_frames) != (16, "PCM_S", 800):
        sys.exit(f"repro: the processed clip was saved as {saved}")
    print(f"repro: YESNO read {tuple(waveform.shape)} at {sample_rate} Hz; info, int16 samples, crop and a 16-bit "
          "save as torchaudio 2.8 gave them")


if __name__ == "__main__":
    main()
