"""torchvision_video on a real torchvision without video I/O (>= 0.26) and real PyAV: frames equal what PyAV decodes,
written clips read back (bit for bit with a lossless codec), 0.25's selection, timestamps, audio, the helpers
Open-Sora 1.2 imports, no PyAV, uninstall. The restored functions are compared with torchvision 0.25's own: the
installed one where it is <= 0.25 (the sweep), else 0.25.0 installed beside the session's own (the today session)."""

import pytest

from conftest import assert_ok, distribution_version, reference_release, requires, run_python

pytestmark = requires("torch", "torchvision", "av")

PRELUDE = '''
import os, tempfile, warnings
import numpy as np, torch, av
import zeropatch
import torchvision.io as io
from zeropatch.patches.torchvision import torchvision_video as restored
folder = tempfile.mkdtemp()
torch.manual_seed(0)
clip = torch.randint(0, 256, (20, 24, 32, 3), dtype=torch.uint8)

def lossless(name, fps=10):
    """The clip, written with a lossless codec (libx264rgb, crf 0): what is read back must be it, bit for bit."""
    path = os.path.join(folder, name)
    io.write_video(path, clip, fps=fps, video_codec="libx264rgb", options={"crf": "0"})
    return path

def pyav_frames(path):
    """Every video frame PyAV decodes (rgb24), with its pts: the reference."""
    with av.open(path) as container:
        frames = [(frame.pts, frame.to_ndarray(format="rgb24")) for frame in container.decode(video=0)]
    frames.sort(key=lambda item: item[0])
    return [pts for pts, _ in frames], torch.as_tensor(np.stack([array for _, array in frames]))
'''

needs_removed_video_io = pytest.mark.skipif(
    (distribution_version("torchvision") or (99,)) < (0, 26), reason="torchvision <= 0.25 still has its video I/O")


@needs_removed_video_io
def test_frames_are_what_pyav_decodes_and_a_lossless_clip_reads_back_bit_for_bit():
    assert_ok(run_python(PRELUDE + '''
lossy = os.path.join(folder, "x264.mp4")
io.write_video(lossy, clip, fps=10)                          # libx264, yuv420p: B-frames, reordered pts
frames, audio, info = io.read_video(lossy, pts_unit="sec")
_, reference = pyav_frames(lossy)
assert torch.equal(frames, reference) and frames.dtype == torch.uint8 and frames.shape == (20, 24, 32, 3)
assert info == {"video_fps": 10.0} and audio.shape == (1, 0) and audio.dtype == torch.float32
frames, _, info = io.read_video(lossless("rgb.mp4", fps=12.5), pts_unit="sec", output_format="TCHW")
assert frames.shape == (20, 3, 24, 32) and torch.equal(frames.permute(0, 2, 3, 1), clip)
assert info["video_fps"] == 12.0   # 0.25 rounds a float fps to an integer rate when writing
print("ok")
'''))


@needs_removed_video_io
def test_start_and_end_select_frames_as_0_25_did():
    assert_ok(run_python(PRELUDE + '''
path = lossless("rgb.mp4")
pts, reference = pyav_frames(path)
stream_time_base = av.open(path).streams.video[0].time_base
seconds = [float(p * stream_time_base) for p in pts]
frames, _, _ = io.read_video(path, start_pts=0.3, end_pts=0.9, pts_unit="sec")
wanted = [i for i, s in enumerate(seconds) if 0.3 - 1e-9 <= s <= 0.9 + 1e-9]
assert torch.equal(frames, reference[wanted]), (len(frames), wanted)
# a start between two frames also returns the frame before it (0.25's rule, useful for audio)
frames, _, _ = io.read_video(path, start_pts=0.35, end_pts=0.9, pts_unit="sec")
assert torch.equal(frames, reference[[3] + [i for i, s in enumerate(seconds) if 0.35 <= s <= 0.9 + 1e-9]])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    frames, _, _ = io.read_video(path, start_pts=pts[2], end_pts=pts[5])          # pts_unit="pts"
assert torch.equal(frames, reference[2:6])
assert any("pts_unit 'pts' gives wrong results" in str(w.message) for w in caught)
timestamps, fps = io.read_video_timestamps(path)
assert timestamps == pts and fps == 10.0
in_seconds, _ = io.read_video_timestamps(path, pts_unit="sec")
assert [float(s) for s in in_seconds] == seconds
try:
    io.read_video(path, start_pts=2, end_pts=1)
except ValueError as error:
    assert "end_pts should be larger than start_pts" in str(error)
else:
    raise AssertionError("end before start must raise")
try:
    io.read_video(path, output_format="CTHW")
except ValueError as error:
    assert "output_format" in str(error)
else:
    raise AssertionError("a bad output_format must raise")
print("ok")
'''))


@needs_removed_video_io
def test_audio_is_written_and_read_back():
    assert_ok(run_python(PRELUDE + '''
path = os.path.join(folder, "with-audio.mp4")
rate = 16000
tone = torch.sin(torch.arange(rate) / rate * 2 * torch.pi * 440).repeat(2, 1)
io.write_video(path, clip, fps=10, audio_array=tone, audio_fps=rate, audio_codec="aac")
frames, audio, info = io.read_video(path, pts_unit="sec")
assert frames.shape[0] == 20 and info == {"video_fps": 10.0, "audio_fps": rate}
assert audio.dim() == 2 and audio.shape[0] == 2 and abs(audio.shape[1] - rate) < rate * 0.15, audio.shape
assert torch.corrcoef(torch.stack([audio[0, 2048:6144], tone[0, 2048:6144]]))[0, 1].abs() > 0.5  # the tone survives aac
print("ok")
'''))


@needs_removed_video_io
def test_open_sora_1_2_reads_through_the_helpers_it_imported():
    assert_ok(run_python(PRELUDE + '''
from torchvision.io.video import _align_audio_frames, _check_av_available, _log_api_usage_once, _read_from_stream, _video_opt
path = lossless("rgb.mp4")
_check_av_available()
_log_api_usage_once(io.read_video)
assert _video_opt.default_timebase == 0
with av.open(path, metadata_errors="ignore") as container:   # opensora/datasets/read_video.py, read_video_av
    stream = container.streams.video[0]
    frames = _read_from_stream(container, 0, float("inf"), "sec", stream, {"video": 0})
    fps = float(stream.average_rate)
video = torch.as_tensor(np.stack([frame.to_rgb().to_ndarray() for frame in frames]))
assert torch.equal(video, clip) and fps == 10.0
import torchvision.io.video as module
assert module.av is av and module.read_video is io.read_video
print("ok")
'''))


@needs_removed_video_io
def test_without_pyav_the_names_import_and_a_call_names_the_package():
    assert_ok(run_python('''
import sys
class NoPyAV:
    def find_spec(self, name, path=None, target=None):
        if name == "av" or name.startswith("av."):
            raise ModuleNotFoundError("No module named 'av'", name="av")
sys.meta_path.insert(0, NoPyAV())
import zeropatch
from torchvision.io import read_video, write_video, read_video_timestamps   # the legacy module-level import works
import torchvision.io.video as video
assert not video._av_available()
for call in (lambda: read_video("x.mp4"), lambda: write_video("x.mp4", None, 1), lambda: read_video_timestamps("x.mp4")):
    try:
        call()
    except ImportError as error:
        assert "pip install av" in str(error), error
    else:
        raise AssertionError("a call without PyAV must raise ImportError")
print("ok")
'''))


@needs_removed_video_io
def test_a_missing_file_and_uninstall():
    assert_ok(run_python(PRELUDE + '''
import sys
try:
    io.read_video(os.path.join(folder, "missing.mp4"), pts_unit="sec")
except RuntimeError as error:
    assert "File not found" in str(error)
else:
    raise AssertionError("a missing file must raise")
assert zeropatch.status("torchvision_video")[0].state == "applied"
zeropatch.uninstall("torchvision_video")
assert not hasattr(io, "read_video") and not hasattr(io, "video") and "torchvision.io.video" not in sys.modules
assert "read_video" not in io.__all__
zeropatch.install("torchvision_video")
assert io.read_video is restored.read_video
print("ok")
'''))


def torchvision_0_25():
    """Code that, run first, makes ``import torchvision`` torchvision 0.25: nothing where it is installed, else the
    release beside this session's own, first on the path. Only its ``_meta_registrations`` is left out: it registers
    kernels for its C++ operators, whose library (built for torch 2.10) today's torch does not load; the video I/O
    (the PyAV path) is pure Python, all 0.25's own."""
    if (distribution_version("torchvision") or (99,)) < (0, 26):
        return ""
    folder = reference_release("torchvision")
    if folder is None:
        pytest.skip("needs torchvision <= 0.25, installed or beside the session's own (the today session has 0.25.0)")
    return f'''
import sys, types
sys.path.insert(0, {folder!r})
sys.modules["torchvision._meta_registrations"] = types.ModuleType("torchvision._meta_registrations")
'''


def test_restored_functions_equal_torchvision_0_25_own():
    assert_ok(run_python(torchvision_0_25() + PRELUDE + '''
import torchvision
assert torchvision.__version__.startswith("0.25."), f"compared with torchvision {torchvision.__version__}"
assert zeropatch.status("torchvision_video")[0].state == "not-needed"
paths = {codec: os.path.join(folder, codec + ".mp4") for codec in ("libx264", "libx264rgb", "mpeg4")}
for codec, path in paths.items():
    restored.write_video(path, clip, fps=10, video_codec=codec)
cases = [dict(pts_unit="sec"), dict(pts_unit="sec", output_format="TCHW"), dict(start_pts=0.35, end_pts=1.2, pts_unit="sec"),
         dict(start_pts=1, end_pts=6000, pts_unit="pts")]
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for path in paths.values():
        for case in cases:
            ours, theirs = restored.read_video(path, **case), io.read_video(path, **case)
            assert torch.equal(ours[0], theirs[0]) and torch.equal(ours[1], theirs[1]) and ours[2] == theirs[2], (path, case)
        assert restored.read_video_timestamps(path, "sec") == io.read_video_timestamps(path, "sec")
print("ok")
'''))
