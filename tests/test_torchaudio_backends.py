"""torchaudio_backends on the installed torchaudio (>= 2.9): load / save / info through soundfile equal torchaudio 2.8's
soundfile backend (the release beside the today session's own) for every file kind, option and error it had;
TorchCodec, where it imports, keeps what it can do; uninstall gives torchaudio 2.11's functions back."""

import pytest

import sys

from conftest import (assert_ok, clean_environment, distribution_version, installed, reference_release, run_command,
                      run_python)

pytestmark = [pytest.mark.skipif(not installed("torchaudio") or not installed("soundfile"),
                                 reason="not installed: torchaudio, soundfile"),
              pytest.mark.skipif((distribution_version("torchaudio") or (0,)) < (2, 9),
                                 reason="torchaudio < 2.9 has its own backends")]


def reference_backend():
    """Code defining ``reference``: torchaudio 2.8's soundfile backend module, run from the 2.8.0 wheel beside this
    session's torchaudio (its module and ``common``; the helpers it imports from ``torchaudio._internal`` are the
    installed release's, unchanged since)."""
    folder = reference_release("torchaudio")
    if folder is None:
        pytest.skip("needs torchaudio 2.8 beside the session's own (the today session installs 2.8.0)")
    return f'''
import importlib.util, sys, types
backend_folder = {folder!r} + "/torchaudio/_backend"
package = types.ModuleType("torchaudio_2_8")
package.__path__ = [backend_folder]
sys.modules["torchaudio_2_8"] = package
def load_reference(name):
    spec = importlib.util.spec_from_file_location("torchaudio_2_8." + name, backend_folder + "/" + name + ".py")
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
load_reference("common")
reference = load_reference("soundfile_backend")
'''


PRELUDE = '''
import os, tempfile, warnings
import numpy as np, soundfile, torch, torchaudio, zeropatch
zeropatch.install("torchaudio_backends")
assert zeropatch.status("torchaudio_backends")[0].state == "applied", zeropatch.status("torchaudio_backends")
folder = tempfile.mkdtemp(prefix="zeropatch-test-")
rng = np.random.default_rng(0)
def outcome(call):
    """What a call gave: its value, or the class of what it raised."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return call()
    except Exception as error:
        return type(error)
'''


def test_load_info_and_save_equal_torchaudio_2_8_soundfile_backend():
    assert_ok(run_python(reference_backend() + PRELUDE + '''
kinds = [("WAV", "PCM_U8"), ("WAV", "PCM_16"), ("WAV", "PCM_24"), ("WAV", "PCM_32"), ("WAV", "FLOAT"), ("WAV", "DOUBLE"),
         ("WAV", "ULAW"), ("FLAC", "PCM_16"), ("FLAC", "PCM_24"), ("OGG", "VORBIS"), ("NIST", "PCM_16")]
loads = [{}, dict(normalize=False), dict(frame_offset=17, num_frames=50), dict(channels_first=False),
         dict(frame_offset=290, num_frames=50, normalize=False), dict(frame_offset=400), dict(num_frames=0),
         dict(frame_offset=-20)]
samples = rng.uniform(-0.9, 0.9, (300, 2))
for format, subtype in kinds:
    path = os.path.join(folder, f"{format}_{subtype}.{format.lower()}")
    soundfile.write(path, samples, 16000, subtype=subtype, format=format)
    for options in loads:
        ours = outcome(lambda: torchaudio.load(path, **options))
        theirs = outcome(lambda: reference.load(path, **options))
        if isinstance(theirs, type):
            assert ours is theirs, (path, options, ours, theirs)
            continue
        assert ours[1] == theirs[1] and ours[0].dtype == theirs[0].dtype, (path, options, ours[0].dtype, theirs[0].dtype)
        assert ours[0].stride() == theirs[0].stride() and torch.equal(ours[0], theirs[0]), (path, options)
    ours, theirs = torchaudio.info(path), reference.info(path)
    assert vars(ours) == vars(theirs) and str(ours) == str(theirs), (path, vars(ours), vars(theirs))
    with open(path, "rb") as file:  # a file object, as 2.8 took
        assert torch.equal(torchaudio.load(file)[0], reference.load(path)[0]), path

# every subtype libsndfile knows: the bits and encoding 2.8 reported
from zeropatch.patches.torchaudio.torchaudio_backends import _bits_and_encoding
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for format in ("WAV", "FLAC", "OGG"):
        for subtype in soundfile.available_subtypes():
            assert _bits_and_encoding(format, subtype) == (
                reference._get_bit_depth(subtype), reference._get_encoding(format, subtype)), (format, subtype)

# save: the same file (or the same refusal) for each extension, dtype, encoding and bit depth
sources = {torch.float32: torch.tensor(samples.T, dtype=torch.float32), torch.float64: torch.tensor(samples.T),
           torch.int16: torch.tensor((samples.T * 30000).astype(np.int16)),
           torch.int32: torch.tensor((samples.T * 2e9).astype(np.int32)),
           torch.uint8: torch.tensor((samples.T * 100 + 128).astype(np.uint8))}
compared = 0
for extension in ("wav", "flac", "ogg", "sph", "nist", "mp3", "aiff"):
    for dtype, source in sources.items():
        for encoding in (None, "PCM_S", "PCM_U", "PCM_F", "ULAW", "ALAW", "vorbis", "opus"):
            for bits in (None, 8, 16, 24, 32, 64, 12):
                mine, theirs = (os.path.join(folder, f"{side}.{extension}") for side in ("ours", "theirs"))
                for path in (mine, theirs):
                    if os.path.exists(path):
                        os.remove(path)
                options = dict(encoding=encoding, bits_per_sample=bits)
                ours = outcome(lambda: torchaudio.save(mine, source, 16000, **options))
                expected = outcome(lambda: reference.save(theirs, source, 16000, **options))
                assert ours == expected or ours is expected, (extension, dtype, options, ours, expected)
                if expected is None:
                    found, wanted = soundfile.info(mine), soundfile.info(theirs)
                    assert (found.format, found.subtype, found.frames) == (wanted.format, wanted.subtype, wanted.frames)
                    assert np.array_equal(soundfile.read(mine)[0], soundfile.read(theirs)[0]), (extension, options)
                    compared += 1
assert compared > 50, compared
print("ok")
''', env=clean_environment(ZEROPATCH="torchaudio_backends")))


def test_without_torchcodec_legacy_calls_work_and_uninstall_gives_2_9s_functions_back():
    assert_ok(run_python(PRELUDE + '''
assert torchaudio.list_audio_backends() == ["soundfile"], torchaudio.list_audio_backends()
assert torchaudio.get_audio_backend() is None  # nothing set: 2.1-2.8's answer
torchaudio.set_audio_backend("soundfile")  # < 2.1 code reads back what it set (demucs asserts it)
assert torchaudio.get_audio_backend() == "soundfile"
assert "info" not in dir(torchaudio)
path = os.path.join(folder, "clip.wav")
torchaudio.save(path, torch.zeros(1, 80), 8000, encoding="PCM_S", bits_per_sample=16)
info = torchaudio.info(path)
assert isinstance(info, torchaudio.AudioMetaData) and (info.num_frames, info.bits_per_sample) == (80, 16), info
for backend in ("sox", "ffmpeg"):  # not usable here: refused, naming what is
    try:
        torchaudio.load(path, backend=backend)
        raise AssertionError(f"backend={backend} was accepted")
    except ValueError as error:
        assert "['soundfile']" in str(error), error
zeropatch.uninstall("torchaudio_backends")
assert not hasattr(torchaudio, "info") and not hasattr(torchaudio, "AudioMetaData")
from zeropatch.patches.torchaudio import torchaudio_backends
assert torchaudio_backends.get_audio_backend() is None, "the backend set outlived the patch"
try:
    torchaudio.load(path)
    raise AssertionError("torchaudio's own load read without TorchCodec")
except ImportError as error:
    assert "TorchCodec is required" in str(error), error
print("ok")
''', env=clean_environment(ZEROPATCH="torchaudio_backends")))


def test_where_torchcodec_imports_it_reads_and_writes_what_it_can():
    """TorchCodec cannot load FFmpeg on this machine: a stand-in (sys.modules) whose decoder and encoder say they were
    called shows where each call goes. torchaudio's own functions, through it, get the calls it serves as 2.8 did;
    soundfile gets normalize=False, encoding= and bits_per_sample=, which 2.9 ignores."""
    assert_ok(run_python('''
import sys, types
class Called(Exception):
    pass
def called(*args, **kwargs):
    raise Called()
for name in ("torchcodec", "torchcodec.decoders", "torchcodec.encoders"):
    sys.modules[name] = types.ModuleType(name)
sys.modules["torchcodec.decoders"].AudioDecoder = sys.modules["torchcodec.encoders"].AudioEncoder = called
''' + PRELUDE + '''
assert torchaudio.list_audio_backends() == ["ffmpeg", "soundfile"], torchaudio.list_audio_backends()
path = os.path.join(folder, "clip.wav")
soundfile.write(path, np.zeros((80, 1)), 8000, subtype="PCM_16")
def reaches_torchcodec(call):
    try:
        call()
    except RuntimeError as error:  # torchaudio's own: "Failed to create AudioDecoder for ...: ..."
        return isinstance(error.__cause__, Called)
    return False
assert reaches_torchcodec(lambda: torchaudio.load(path))
assert reaches_torchcodec(lambda: torchaudio.load(path, backend="ffmpeg"))
assert reaches_torchcodec(lambda: torchaudio.save(path, torch.zeros(1, 80), 8000))
assert torchaudio.load(path, normalize=False)[0].dtype == torch.int16
assert torchaudio.load(path, backend="soundfile")[0].dtype == torch.float32
torchaudio.save(path, torch.zeros(1, 80), 8000, bits_per_sample=24)
assert torchaudio.info(path).bits_per_sample == 24
print("ok")
''', env=clean_environment(ZEROPATCH="torchaudio_backends")))


def test_what_went_with_the_backends_is_explained_not_patched():
    result = run_python("import torchaudio.sox_effects", env=clean_environment())
    assert result.returncode != 0 and "No module named 'torchaudio.sox_effects'" in result.stderr, result.stderr
    explained = run_command([sys.executable, "-m", "zeropatch", "explain", result.stderr.strip().splitlines()[-1]],
                            env=clean_environment())
    assert "No patch can fix this" in explained.stdout and "functional.resample" in explained.stdout, explained.stdout
