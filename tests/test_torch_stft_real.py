"""torch_stft_real on the real torch: a real signal's torch.stft without return_complex is the tensor torch's own
``return_complex=False`` gives (the layout 1.x returned by default), value for value and gradient for gradient;
torch.istft reads that layout as 1.x did; every call that names return_complex, complex input, TorchScript,
torch.compile and uninstall are torch 2's own."""

import pytest

from conftest import assert_ok, clean_environment, distribution_version, requires, run_python

pytestmark = [requires("torch"), pytest.mark.skipif((distribution_version("torch") or (0,)) < (2,),
                                                    reason="torch < 2.0 returns the real layout itself")]


def run(code):
    assert_ok(run_python("import warnings, torch, zeropatch\nwarnings.simplefilter('ignore')\n" + code + "\nprint('ok')",
                         env=clean_environment(ZEROPATCH="1")))


def test_the_default_is_torch_s_own_real_layout_value_for_value_and_gradient_for_gradient():
    run('''
torch.manual_seed(0)
signal = torch.randn(3, 500, dtype=torch.float64)
for kwargs in ({}, {"hop_length": 16, "win_length": 48, "window": torch.hann_window(48, dtype=torch.float64)},
               {"center": False, "normalized": True, "onesided": False}):
    ours = signal.clone().requires_grad_()
    theirs = signal.clone().requires_grad_()
    restored = torch.stft(ours, 64, **kwargs)
    reference = torch.stft(theirs, 64, return_complex=False, **kwargs)  # torch's own real layout, deprecated in 2.x
    assert restored.dtype == reference.dtype and torch.equal(restored, reference), kwargs
    weights = torch.randn(reference.shape, dtype=torch.float64)
    (restored * weights).sum().backward()
    (reference * weights).sum().backward()
    assert torch.equal(ours.grad, theirs.grad), kwargs
assert torch.equal(signal.stft(32), torch.stft(signal, 32, return_complex=False))  # Tensor.stft goes through torch.stft
assert zeropatch.status("torch_stft_real")[0].state == "applied"
''')


def test_istft_reads_the_real_layout_as_complex_contiguous_or_not():
    run('''
torch.manual_seed(0)
signal = torch.randn(2, 600)
window = torch.hann_window(64)
spectrum = torch.stft(signal, 64, 16, window=window, return_complex=True)
real = torch.view_as_real(spectrum)
expected = torch.istft(spectrum, 64, 16, window=window, length=600)
assert torch.equal(torch.istft(real, 64, 16, window=window, length=600), expected)
assert torch.equal(real.istft(64, 16, window=window, length=600), expected)
strided = torch.stack([real[..., 0], real[..., 1]], dim=0).permute(1, 2, 3, 0)  # (..., 2) that cannot be viewed
assert torch.equal(torch.istft(strided, 64, 16, window=window, length=600), expected)
assert torch.allclose(expected, signal, atol=1e-5)
''')


SCRIPTED = '''
import torch


@torch.jit.script
def spectrogram(x: torch.Tensor) -> torch.Tensor:
    return torch.stft(x, 32, return_complex=True).abs()
'''


def test_calls_written_for_torch_2_scripted_code_and_uninstall_are_torch_s_own(tmp_path):
    (tmp_path / "scripted.py").write_text(SCRIPTED)
    run(f'''
import sys
sys.path.insert(0, {str(tmp_path)!r})
from scripted import spectrogram  # TorchScript compiles torch.stft to torch's operator, under the patch too
original_stft, original_istft = torch.stft.__wrapped__, torch.istft.__wrapped__
signal = torch.randn(400)
assert torch.stft(signal, 32, return_complex=True).is_complex()
assert torch.stft(signal.to(torch.complex64), 32).is_complex()  # complex input: complex output, as in 1.x too
positional = torch.stft(signal, 32, None, None, None, True, "reflect", False, None, True)
assert positional.is_complex()
try:
    torch.istft(torch.randn(33, 13, 3), 64)  # not the (..., 2) layout: torch's own error
except (RuntimeError, TypeError) as error:  # (a TypeError since torch 2.x's Python-side check)
    assert "complex-valued input" in str(error)
else:
    raise AssertionError("istft took a real input that is not the (..., 2) layout")
assert spectrogram(signal).shape == (17, 51)
compiled = torch.compile(lambda x: torch.stft(x, 32, window=torch.hann_window(32)), backend="eager")
try:  # dynamo calls torch's own stft, not the wrapper: a legacy call in compiled code fails as on torch 2
    compiled(signal)
except Exception as error:
    assert "return_complex" in str(error), error
else:
    raise AssertionError("torch.compile went through the wrapper: the README says it does not")
zeropatch.uninstall("torch_stft_real")
assert torch.stft is original_stft and torch.istft is original_istft
try:
    torch.stft(signal, 32)
except RuntimeError as error:
    assert "return_complex" in str(error)
else:
    raise AssertionError("the patch outlived its uninstall")
''')
