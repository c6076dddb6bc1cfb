"""The spectrogram code of 2019-2022 speech models: hifi-gan's and vits' mel spectrogram (torch.stft without
return_complex, then the magnitude from the real and imaginary parts in the last dimension), a multi-resolution STFT
loss (ParallelWaveGAN's), and a phase-vocoder style resynthesis that hands the real (..., 2) spectrum to torch.istft.

Without zeropatch, on torch >= 2.0:
  RuntimeError: stft requires the return_complex parameter be given for real inputs, ...
With `zeropatch run -- python repro.py` the spectrograms are torch 1.x's, the loss trains and the signal comes back.
"""

import sys

import torch


def spectrogram(y, n_fft=64, hop_size=16, win_size=64):  # hifi-gan's meldataset.py / vits' mel_processing.py
    window = torch.hann_window(win_size)
    y = torch.nn.functional.pad(y.unsqueeze(1), ((n_fft - hop_size) // 2, (n_fft - hop_size) // 2), mode="reflect")
    spec = torch.stft(y.squeeze(1), n_fft, hop_length=hop_size, win_length=win_size, window=window, center=False,
                      pad_mode="reflect", normalized=False, onesided=True)
    return torch.sqrt(spec.pow(2).sum(-1) + 1e-9)


def stft_magnitude(x, fft_size, hop_size, win_length):  # ParallelWaveGAN's stft_loss.py
    x_stft = torch.stft(x, fft_size, hop_size, win_length, torch.hann_window(win_length))
    real, imag = x_stft[..., 0], x_stft[..., 1]
    return torch.sqrt(torch.clamp(real ** 2 + imag ** 2, min=1e-7)).transpose(2, 1)


def main():
    torch.manual_seed(0)
    audio = torch.randn(2, 800)
    spec = spectrogram(audio)
    expected = torch.stft(torch.nn.functional.pad(audio.unsqueeze(1), (24, 24), mode="reflect").squeeze(1), 64,
                          hop_length=16, win_length=64, window=torch.hann_window(64), center=False,
                          return_complex=True).abs()
    if spec.shape != (2, 33, 50) or not torch.allclose(spec, expected, atol=1e-4):
        sys.exit(f"repro: the spectrogram changed: {tuple(spec.shape)}")
    generated = (0.1 * torch.randn(2, 800)).requires_grad_()
    loss = sum((stft_magnitude(generated, n, n // 4, n) - stft_magnitude(audio, n, n // 4, n)).abs().mean()
               for n in (32, 64, 128))
    loss.backward()
    if not torch.isfinite(generated.grad).all() or generated.grad.abs().sum() == 0:
        sys.exit("repro: the STFT loss gave no gradient")
    real_spectrum = torch.stft(audio, 64, 16, 64, torch.hann_window(64))
    back = torch.istft(real_spectrum, 64, 16, 64, torch.hann_window(64), length=800)
    if not torch.allclose(back, audio, atol=1e-5):
        sys.exit("repro: istft did not give the signal back")
    print(f"repro: spectrograms, STFT loss and resynthesis as on torch 1.x (torch {torch.__version__})")


if __name__ == "__main__":
    main()
