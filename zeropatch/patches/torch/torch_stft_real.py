"""torch_stft_real: ``torch.stft`` of a real signal without ``return_complex`` returns torch 1.x's real layout again,
and ``torch.istft`` takes it.

Breaks: until torch 1.13, ``torch.stft`` of a real signal returned, by default, a real tensor whose last dimension
holds the real and imaginary parts (``(..., freq, frames, 2)``; a warning since 1.8), and ``torch.istft`` took that
layout back. torch 2.0 made ``return_complex`` required for real input and refused real input to ``istft``
(pytorch/pytorch#86724, #86628): the speech and audio code of 2019-2022 — vocoders' and TTS models' mel
spectrograms (hifi-gan, vits, melgan), multi-resolution STFT losses, speech enhancement — stops at its first
spectrogram: "stft requires the return_complex parameter be given for real inputs", "istft requires a complex-valued
input tensor".

Changes: a call of ``torch.stft`` (or ``Tensor.stft``) on a real input that gives no ``return_complex`` returns
``torch.view_as_real`` of the complex result, which is the very tensor 1.8-1.13 returned (their own implementation
made it so; torch's deprecation message names it as the old format), gradients included; a call of ``torch.istft``
(``Tensor.istft``) on a real input whose last dimension is 2 reads it as complex (``torch.view_as_complex``, of a
contiguous copy where the layout cannot be viewed), as 1.8-1.13 did. A call that names ``return_complex``, and complex
input, are torch's own. Logged once; counted in the job report. TorchScript and ``torch.compile`` call torch's own
operator, not this wrapper: a legacy call inside scripted or compiled code still fails as on torch 2 (not covered).
"""

from zeropatch._core import NotNeeded, Patch, inform_once, version_tuple
from zeropatch._legacy import Tally

RETURN_COMPLEX_POSITION = 9  # torch.stft(input, n_fft, hop_length, win_length, window, center, pad_mode, normalized,
# onesided, return_complex): given positionally, it is the caller's choice
_TALLY = Tally()


def _signal(args, kwargs):
    return args[0] if args else kwargs.get("input")


def _stft(wrapped, instance, args, kwargs):
    signal = _signal(args, kwargs)
    if (kwargs.get("return_complex") is not None or len(args) > RETURN_COMPLEX_POSITION
            or not hasattr(signal, "is_complex") or signal.is_complex()):
        return wrapped(*args, **kwargs)
    import torch

    _TALLY.count("torch.stft of a real signal without return_complex: the real (..., 2) layout")
    inform_once("zeropatch: torch_stft_real: torch.stft without return_complex returns torch 1.x's real (..., 2) "
                "layout (torch.view_as_real of the complex result)")
    return torch.view_as_real(wrapped(*args, **dict(kwargs, return_complex=True)))


def _istft(wrapped, instance, args, kwargs):
    spectrum = _signal(args, kwargs)
    if not hasattr(spectrum, "is_complex") or spectrum.is_complex() or spectrum.dim() < 1 or spectrum.size(-1) != 2:
        return wrapped(*args, **kwargs)
    import torch

    _TALLY.count("torch.istft of a real (..., 2) spectrum: read as complex")
    inform_once("zeropatch: torch_stft_real: torch.istft reads a real (..., 2) spectrum as complex, as torch 1.x did")
    try:
        spectrum = torch.view_as_complex(spectrum)
    except RuntimeError:  # a layout that cannot be viewed (strides): a contiguous copy, as 1.x made
        spectrum = torch.view_as_complex(spectrum.contiguous())
    if args:
        return wrapped(spectrum, *args[1:], **kwargs)
    return wrapped(**dict(kwargs, input=spectrum))


def apply(patcher, torch):
    if version_tuple(torch.__version__) < (2,):
        raise NotNeeded("torch < 2.0 still returns the real layout without return_complex")
    patcher.wrap(torch, "stft", _stft)
    patcher.wrap(torch, "istft", _istft)
    return "torch.stft / torch.istft without return_complex: torch 1.x's real (..., 2) layout"


def report():
    return _TALLY.report("calls given torch 1.x's real spectrum layout" if _TALLY.counts else None)


PATCH = Patch(
    "torch_stft_real",
    since="0.7.0",
    summary="torch.stft of a real signal without return_complex returns torch 1.x's real (..., 2) layout again "
    "(view_as_real of the complex result), and torch.istft takes it",
    package="torch",
    affected="2.13.0 (swept, the CPU build; return_complex became required with the 2 series, whose other releases "
             "wait for the sweep)",
    targets=("torch",),
    apply=apply,
    report=report,
    errors=(r"stft requires the return_complex parameter be given for real inputs",
            r"istft requires a complex-valued input tensor"),
    looks_for=("call torch.stft without return_complex", "call *.stft without return_complex"),
)
