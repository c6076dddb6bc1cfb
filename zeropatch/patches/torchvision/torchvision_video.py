"""torchvision_video: ``torchvision.io.read_video`` / ``read_video_timestamps`` / ``write_video`` and the module
``torchvision.io.video`` are back, with torchvision 0.25's contract, on PyAV.

Breaks: torchvision 0.26 removed its video I/O (moved to TorchCodec); 0.28+ ship a ``torchvision/io/video.py``
stub that imports a module only Meta has ("No module named 'pytorch'"). Legacy code imports the names at
module level (Open-Sora 1.0-1.3 ``from torchvision.io import write_video``; 1.2 ``from torchvision.io.video
import _read_from_stream, ...``) and calls ``torchvision.io.read_video(path, pts_unit="sec")``.

Changes: when ``torchvision.io`` loads without ``read_video``, it gains ``read_video``, ``read_video_timestamps``
and ``write_video``, and ``torchvision.io.video`` becomes a module holding them plus the helpers legacy code
imported from it (``_read_from_stream``, ``_align_audio_frames``, ``_check_av_available``, ``_av_available``,
``_log_api_usage_once``, ``_video_opt``, ``av``). Same names, signatures, defaults, return types and shapes:
THWC uint8 frames (``output_format="TCHW"``), a (channels, samples) audio tensor, an info dict with
``video_fps`` / ``audio_fps``; ``pts_unit`` "pts" and "sec"; the same start/end frame selection. PyAV (``av``)
is imported on first use: without it the names still import and a call raises ImportError naming it.
Deliberate difference: a missing file raises RuntimeError("File not found: ...") (0.25's PyAV path returned
empty tensors; its other backend raised this).
"""

import math
import sys
import types
import warnings

from zeropatch._core import NotNeeded, Patch

MODULE = "torchvision.io.video"
PUBLIC = ("read_video", "read_video_timestamps", "write_video")
READ_PAST_END = 5  # frames decoded past end_pts: decoders can emit packed B-frames out of order
AUDIO_SAMPLE_DTYPES = {"dbl": "<f8", "flt": "<f4", "s16": "<i2", "s32": "<i4", "u8": "u1"}  # planar: same + "p"


def _pyav():
    try:
        import av
    except ImportError as missing:
        raise ImportError(
            "torchvision's video I/O (restored by zeropatch's torchvision_video patch) needs PyAV: pip install av"
        ) from missing
    return av


def _check_av_available():
    _pyav()


def _av_available():
    try:
        _pyav()
    except ImportError:
        return False
    return True


def _ffmpeg_error(av):
    return getattr(av, "FFmpegError", None) or av.AVError  # av < 14 called it AVError


def _to_pts(seconds, time_base, rounding):
    """Seconds to a stream's pts, rounded as torchvision 0.25 did (the same float expression, the same result)."""
    return int(rounding(seconds * (1 / time_base)))


def _buffers_past_end(stream):
    """Whether frames past ``end`` must be decoded to catch reordered ones: yes, unless the stream is DivX
    whose encoder string says it does not pack B-frames."""
    extradata = stream.codec_context.extradata if stream.type == "video" else None
    if not extradata or b"DivX" not in extradata:
        return True
    import re

    tail = extradata[extradata.find(b"DivX") :]
    version = re.search(rb"DivX(\d+)(?:Build|b)(\d+)(\w)", tail)
    return version is None or version.group(3) == b"p"


def _read_from_stream(container, start_offset, end_offset, pts_unit, stream, stream_name):
    """The frames of ``stream`` with ``start_offset <= pts <= end_offset`` (plus, when no frame starts exactly at
    ``start_offset``, the last one before it), sorted by pts."""
    av = _pyav()
    if pts_unit == "sec":
        start_offset = _to_pts(start_offset, stream.time_base, math.floor)
        if end_offset != float("inf"):
            end_offset = _to_pts(end_offset, stream.time_base, math.ceil)
    else:
        warnings.warn("The pts_unit 'pts' gives wrong results. Please use pts_unit 'sec'.")
    past_end = READ_PAST_END if _buffers_past_end(stream) else 0
    seek_to = max(start_offset - 1 - past_end, 0)  # some files seek short of the target: start earlier
    try:
        container.seek(seek_to, any_frame=False, backward=True, stream=stream)
    except _ffmpeg_error(av):
        return []
    decoded, extra = {}, 0
    try:
        for frame in container.decode(**stream_name):
            decoded[frame.pts] = frame
            if frame.pts >= end_offset:
                if extra == past_end:
                    break
                extra += 1
    except _ffmpeg_error(av):
        pass
    selected = [decoded[pts] for pts in sorted(decoded) if start_offset <= pts <= end_offset]
    if decoded and start_offset > 0 and start_offset not in decoded:
        before = [pts for pts in decoded if pts < start_offset]
        if before:
            selected.insert(0, decoded[max(before)])
    return selected


def _align_audio_frames(aframes, audio_frames, ref_start, ref_end):
    """Trim (channels, samples) audio decoded from ``audio_frames`` to the samples in [ref_start, ref_end]."""
    first, last = audio_frames[0].pts, audio_frames[-1].pts
    samples = aframes.shape[1]
    pts_per_sample = (last - first + 1) / samples
    begin = int((ref_start - first) / pts_per_sample) if first < ref_start else 0
    end = int((ref_end - last) / pts_per_sample) if last > ref_end else samples
    return aframes[:, begin:end]


def read_video(filename, start_pts=0, end_pts=None, pts_unit="pts", output_format="THWC"):
    """torchvision 0.25's ``read_video``: (video frames uint8 [T, H, W, C] or [T, C, H, W], audio [K, L], info)."""
    import os

    import numpy as np
    import torch

    output_format = output_format.upper()
    if output_format not in ("THWC", "TCHW"):
        raise ValueError(f"output_format should be either 'THWC' or 'TCHW', got {output_format}.")
    av = _pyav()
    if isinstance(filename, (str, os.PathLike)) and not os.path.exists(filename):
        raise RuntimeError(f"File not found: {filename}")
    if end_pts is None:
        end_pts = float("inf")
    if end_pts < start_pts:
        raise ValueError(f"end_pts should be larger than start_pts, got start_pts={start_pts} and end_pts={end_pts}")
    info, video_frames, audio_frames = {}, [], []
    audio_time_base = 0  # replaced by the audio stream's time base whenever there is audio
    try:
        with av.open(filename, metadata_errors="ignore") as container:
            if container.streams.audio:
                audio_time_base = container.streams.audio[0].time_base
            if container.streams.video:
                stream = container.streams.video[0]
                video_frames = _read_from_stream(container, start_pts, end_pts, pts_unit, stream, {"video": 0})
                if stream.average_rate is not None:
                    info["video_fps"] = float(stream.average_rate)
            if container.streams.audio:
                stream = container.streams.audio[0]
                audio_frames = _read_from_stream(container, start_pts, end_pts, pts_unit, stream, {"audio": 0})
                info["audio_fps"] = stream.rate
    except _ffmpeg_error(av):
        pass
    if video_frames:
        vframes = torch.as_tensor(np.stack([frame.to_ndarray(format="rgb24") for frame in video_frames]))
    else:
        vframes = torch.empty((0, 1, 1, 3), dtype=torch.uint8)
    if audio_frames:
        aframes = torch.as_tensor(np.concatenate([frame.to_ndarray() for frame in audio_frames], axis=1))
        if pts_unit == "sec":
            start_pts = _to_pts(start_pts, audio_time_base, math.floor)
            if end_pts != float("inf"):
                end_pts = _to_pts(end_pts, audio_time_base, math.ceil)
        aframes = _align_audio_frames(aframes, audio_frames, start_pts, end_pts)
    else:
        aframes = torch.empty((1, 0), dtype=torch.float32)
    if output_format == "TCHW":
        vframes = vframes.permute(0, 3, 1, 2)
    return vframes, aframes, info


def read_video_timestamps(filename, pts_unit="pts"):
    """torchvision 0.25's ``read_video_timestamps``: (sorted frame pts, or Fractions of a second; video fps or None)."""
    av = _pyav()
    pts, video_fps, time_base = [], None, None
    try:
        with av.open(filename, metadata_errors="ignore") as container:
            if container.streams.video:
                stream = container.streams.video[0]
                time_base = stream.time_base
                try:
                    if b"Lavc" in (stream.codec_context.extradata or b""):  # written by libavcodec: packets suffice
                        pts = [packet.pts for packet in container.demux(video=0) if packet.pts is not None]
                    else:
                        pts = [frame.pts for frame in container.decode(video=0) if frame.pts is not None]
                except _ffmpeg_error(av):
                    warnings.warn(f"Failed decoding frames for file {filename}")
                video_fps = float(stream.average_rate)
    except _ffmpeg_error(av) as error:
        warnings.warn(f"Failed to open container for {filename}; Caught error: {error}", RuntimeWarning)
    pts.sort()
    if pts_unit == "sec":
        pts = [value * time_base for value in pts]
    return pts, video_fps


def write_video(filename, video_array, fps, video_codec="libx264", options=None, audio_array=None, audio_fps=None,
                audio_codec=None, audio_options=None):
    """torchvision 0.25's ``write_video``: a uint8 [T, H, W, C] tensor (and optionally [C, N] audio) to a file."""
    import numpy as np
    import torch

    av = _pyav()
    frames = torch.as_tensor(video_array, dtype=torch.uint8).numpy(force=True)
    if isinstance(fps, float):
        fps = int(np.round(fps))  # PyAV takes an integral or Fraction rate
    with av.open(filename, mode="w") as container:
        stream = container.add_stream(video_codec, rate=fps)
        stream.width, stream.height = frames.shape[2], frames.shape[1]
        stream.pix_fmt = "rgb24" if video_codec == "libx264rgb" else "yuv420p"
        stream.options = options or {}
        if audio_array is not None:
            _write_audio(av, container, audio_array, audio_fps, audio_codec, audio_options)
        for image in frames:
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            frame.pict_type = _picture_type_none(av)  # let the encoder choose each frame's type
            container.mux(stream.encode(frame))
        container.mux(stream.encode())


def _picture_type_none(av):
    picture_type = getattr(av.video.frame, "PictureType", None)
    return picture_type.NONE if picture_type is not None else "NONE"


def _write_audio(av, container, audio_array, audio_fps, audio_codec, audio_options):
    import torch

    stream = container.add_stream(audio_codec, rate=audio_fps)
    stream.options = audio_options or {}
    sample_format = stream.format.name
    samples = torch.as_tensor(audio_array).numpy(force=True).astype(AUDIO_SAMPLE_DTYPES[sample_format.rstrip("p")])
    frame = av.AudioFrame.from_ndarray(samples, format=sample_format, layout="stereo" if samples.shape[0] > 1 else "mono")
    frame.sample_rate = audio_fps
    container.mux(stream.encode(frame))
    container.mux(stream.encode())


def _read_video_without_backend_choice(filename, start_pts=0, end_pts=None, pts_unit="pts"):
    """What 0.25's ``_video_opt._read_video`` returned (its C++ video_reader is gone): PyAV's THWC frames."""
    return read_video(filename, start_pts, end_pts, pts_unit)


def _restored_module(torchvision_utils):
    from fractions import Fraction

    video = types.ModuleType(MODULE, "torchvision 0.25's video I/O, restored on PyAV by zeropatch (torchvision_video)")
    video.__all__ = list(PUBLIC)
    for function in (read_video, read_video_timestamps, write_video, _read_from_stream, _align_audio_frames,
                     _check_av_available, _av_available):
        setattr(video, function.__name__, function)
    video._log_api_usage_once = getattr(torchvision_utils, "_log_api_usage_once", lambda obj: None)
    video._video_opt = types.SimpleNamespace(default_timebase=Fraction(0, 1), _read_video=_read_video_without_backend_choice)

    def module_getattr(name):
        if name == "av":  # 0.25 exported the PyAV module it used; imported only when asked for
            return _pyav()
        raise AttributeError(f"module {MODULE!r} has no attribute {name!r}")

    video.__getattr__ = module_getattr
    return video


def apply(patcher, io):
    if hasattr(io, "read_video"):
        raise NotNeeded("torchvision.io still has read_video (torchvision <= 0.25)")
    video = _restored_module(sys.modules.get("torchvision.utils"))
    patcher.put_back(io, {name: getattr(video, name) for name in PUBLIC}, home=MODULE)
    patcher.put_back(io, {"video": video})
    sys.modules[MODULE] = video

    def forget_module():
        if sys.modules.get(MODULE) is video:
            del sys.modules[MODULE]

    patcher.on_revert(forget_module)
    return "read_video / read_video_timestamps / write_video and torchvision.io.video on PyAV"


PATCH = Patch(
    "torchvision_video",
    since="0.2.0",
    summary="torchvision.io.read_video / read_video_timestamps / write_video and torchvision.io.video back, "
    "with 0.25's contract, on PyAV",
    package="torchvision",
    affected="0.26.0-0.29.2",
    targets=("torchvision.io",),
    apply=apply,
    errors=(
        r"cannot import name '(read_video|read_video_timestamps|write_video)' from 'torchvision\.io'",
        r"module 'torchvision\.io' has no attribute '(read_video|read_video_timestamps|write_video|video)'",
        r"No module named 'torchvision\.io\.video'",
        r"torchvision[/\\]io[/\\]video\.py[\s\S]*No module named 'pytorch'",
    ),
    looks_for=("import torchvision.io.video", *(f"name torchvision.io.{name}" for name in PUBLIC)),
)
