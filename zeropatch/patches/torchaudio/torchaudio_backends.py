"""torchaudio_backends: ``torchaudio.load`` / ``save`` work without TorchCodec, and ``info``, ``AudioMetaData``,
``list_audio_backends``, ``get_audio_backend`` and ``set_audio_backend`` are back, with torchaudio 2.8's contract.

Breaks: torchaudio 2.9 dropped its I/O backends (FFmpeg, SoX, soundfile) for TorchCodec. ``torchaudio.load`` and
``save`` stop with "ImportError: TorchCodec is required for load_with_torchcodec" where torchcodec is not installed
(or cannot load FFmpeg), and ignore what TorchCodec cannot do: ``load(normalize=False)`` gives float32 where 2.8 gave
an integer WAV's own samples, ``save`` drops ``encoding=`` and ``bits_per_sample=``. ``torchaudio.info`` ("module
'torchaudio' has no attribute 'info'"), ``AudioMetaData``, ``list_audio_backends`` and the no-op
``get_audio_backend`` / ``set_audio_backend`` are gone. Speech and audio-generation data loaders of 2020-2025 call them.

Changes: where torchaudio has no ``info``, a ``load`` or ``save`` goes through soundfile (libsndfile: 2.8's
"soundfile" backend, the one a pip install of 2.8 used without FFmpeg and SoX) when TorchCodec does not import, when
the call names ``backend="soundfile"``, or when it asks for what 2.9 ignores; otherwise torchaudio's own runs. Through
soundfile, 2.8's soundfile backend is followed: float32 ``[channel, time]`` by default, an integer WAV's samples as
its own dtype with ``normalize=False``, ``frame_offset`` / ``num_frames`` as slices, ``channels_first=False`` as
``[time, channel]``; ``save`` picks the same libsndfile subtype from the extension (or ``format``), the dtype,
``encoding`` and ``bits_per_sample``. ``info`` returns 2.8's ``AudioMetaData`` as 2.8 read it. ``list_audio_backends``
names the backends these functions can use here ("ffmpeg" where TorchCodec imports, "soundfile" where soundfile
does); a backend not among them is refused, naming them. ``set_audio_backend`` chooses nothing, as from 2.1 on, but
``get_audio_backend`` answers what it was last given (None before), as code written for torchaudio < 2.1 checks.
Without soundfile or TorchCodec, a call raises ImportError naming both. What went with the backends and needs SoX or
FFmpeg (``sox_effects``, ``torchaudio.io``) is not restored: ``explain`` says what to use instead.
"""

import functools

from zeropatch._core import NotNeeded, Patch, lacks

REMOVED_WITH_THE_BACKENDS_ADVICE = (
    "torchaudio 2.9 removed, with its FFmpeg and SoX backends, the SoX effects (torchaudio.sox_effects), FFmpeg "
    "streaming (torchaudio.io: StreamReader, StreamWriter, AudioEffector), kaldi_io and the torchaudio.backend "
    "modules; zeropatch restores load / save / info (torchaudio_backends) but has no SoX or FFmpeg to stand on for "
    "the rest. Resample with torchaudio.functional.resample (or speed-perturb by resampling), decode streams with "
    "torchcodec's AudioDecoder, or pin torchaudio<2.9 together with the torch it was built for (torchaudio 2.8.0: "
    "torch 2.8.0)")
RESTORED = ("info", "AudioMetaData", "list_audio_backends", "get_audio_backend", "set_audio_backend")
# libsndfile subtype -> (bits per sample, encoding) as torchaudio 2.8 reported them; a "<family>_<width>" subtype of the
# PCM, DWVW, DPCM and ALAC families has its width as bits; the ones listed here and below have none (0)
KNOWN_SUBTYPES = {"PCM_S8": (8, "PCM_S"), "PCM_16": (16, "PCM_S"), "PCM_24": (24, "PCM_S"), "PCM_32": (32, "PCM_S"),
                  "PCM_U8": (8, "PCM_U"), "FLOAT": (32, "PCM_F"), "DOUBLE": (64, "PCM_F"), "ULAW": (8, "ULAW"),
                  "ALAW": (8, "ALAW"), "VORBIS": (0, "VORBIS")}
WITHOUT_BITS = {"IMA_ADPCM", "MS_ADPCM", "GSM610", "VOX_ADPCM", "G721_32", "G723_24", "G723_40", "DWVW_N"}
WIDTH_FAMILIES = ("PCM", "DWVW", "DPCM", "ALAC")
INTEGER_WAV = {"PCM_S8": "int8", "PCM_U8": "uint8", "PCM_16": "int16", "PCM_32": "int32", "FLOAT": "float32",
               "DOUBLE": "float64"}  # normalize=False: a WAV's samples in their own dtype (2.8 refused other subtypes)
_chosen = {"backend": None}  # what set_audio_backend was last given


class AudioMetaData:
    """What ``torchaudio.info`` returns (torchaudio 2.8): ``sample_rate``, ``num_frames``, ``num_channels``,
    ``bits_per_sample`` (0 for lossy formats or where it cannot be told) and ``encoding`` ("PCM_S", "PCM_U", "PCM_F",
    "FLAC", "ULAW", "ALAW", "VORBIS", ... or "UNKNOWN")."""

    def __init__(self, sample_rate, num_frames, num_channels, bits_per_sample, encoding):
        self.sample_rate = sample_rate
        self.num_frames = num_frames
        self.num_channels = num_channels
        self.bits_per_sample = bits_per_sample
        self.encoding = encoding

    def __str__(self):
        fields = ", ".join(f"{name}={getattr(self, name)}" for name in
                           ("sample_rate", "num_frames", "num_channels", "bits_per_sample", "encoding"))
        return f"AudioMetaData({fields})"


def _soundfile():
    try:
        import soundfile
    except ImportError as missing:
        raise ImportError("torchaudio >= 2.9 reads and writes audio through TorchCodec, which does not import here; "
                          "zeropatch's torchaudio_backends reads and writes it as torchaudio 2.8's soundfile backend "
                          "did, which needs soundfile: pip install soundfile (or torchcodec)") from missing
    return soundfile


@functools.lru_cache(maxsize=None)
def _torchcodec_imports():
    try:
        import torchcodec.decoders  # noqa: F401
        import torchcodec.encoders  # noqa: F401
    except Exception:  # not installed, or its FFmpeg libraries do not load (a RuntimeError)
        return False
    return True


def _soundfile_imports():
    try:
        _soundfile()
    except ImportError:
        return False
    return True


def list_audio_backends():
    """The backends ``torchaudio.load`` / ``save`` / ``info`` can use here: "ffmpeg" (torchaudio's own, through
    TorchCodec) and "soundfile", each where it imports."""
    return [name for name, usable in (("ffmpeg", _torchcodec_imports), ("soundfile", _soundfile_imports)) if usable()]


def get_audio_backend():
    """The backend ``set_audio_backend`` was last given, None before: torchaudio < 2.1 answered its global backend,
    and code written for it checks it (demucs: ``assert get_audio_backend() == "soundfile"``); 2.1-2.8 answered None,
    which code that sets none reads here too."""
    return _chosen["backend"]


def set_audio_backend(backend):
    """Remembered for ``get_audio_backend``; it chooses nothing, as from torchaudio 2.1 on: ``load`` / ``save`` /
    ``info`` choose at each call (a call's ``backend=`` for itself)."""
    _chosen["backend"] = backend


def _through_soundfile(backend, asks_what_torchcodec_ignores):
    """Whether a call goes through soundfile (else torchaudio's own, through TorchCodec). The usable backends are
    looked up only for a call that names one."""
    if backend is not None and backend not in (available := list_audio_backends()):
        raise ValueError(f"Unsupported backend {backend!r} specified; please select one of {available} instead "
                         "(zeropatch's torchaudio_backends: 'ffmpeg' is torchaudio's own, through TorchCodec)")
    if backend == "soundfile" or asks_what_torchcodec_ignores:
        return True
    return backend is None and not _torchcodec_imports()


def _bits_and_encoding(format, subtype):
    bits, encoding = KNOWN_SUBTYPES.get(subtype, (None, "UNKNOWN"))
    if bits is None:
        family, _, width = subtype.rpartition("_")
        if family in WIDTH_FAMILIES and width.isdigit():
            bits = int(width)
        elif subtype in WITHOUT_BITS:
            bits = 0
        else:
            import warnings

            warnings.warn(f"torchaudio 2.8 did not know the {subtype} subtype: bits_per_sample is 0", stacklevel=3)
            bits = 0
    return bits, "FLAC" if format == "FLAC" else encoding


def info(uri, format=None, buffer_size=4096, backend=None):
    """torchaudio 2.8's ``info``, read by soundfile (``format`` and ``buffer_size`` unused, as in 2.8's soundfile
    backend)."""
    _through_soundfile(backend, True)
    found = _soundfile().info(uri)
    bits, encoding = _bits_and_encoding(found.format, found.subtype)
    return AudioMetaData(found.samplerate, found.frames, found.channels, bits, encoding)


def _load(wrapped, uri, frame_offset=0, num_frames=-1, normalize=True, channels_first=True, format=None,
          buffer_size=4096, backend=None):
    if not _through_soundfile(backend, not normalize):
        return wrapped(uri, frame_offset, num_frames, normalize, channels_first, format, buffer_size, backend)
    import torch

    with _soundfile().SoundFile(uri, "r") as audio:
        dtype = "float32"
        if audio.format == "WAV" and not normalize:
            if audio.subtype not in INTEGER_WAV:
                raise ValueError(f"Unsupported subtype: {audio.subtype}")
            dtype = INTEGER_WAV[audio.subtype]
        if frame_offset and not audio.seekable():
            raise ValueError("start is only allowed for seekable files")
        start = slice(frame_offset, None).indices(audio.frames)[0]  # an offset past the end reads nothing
        if audio.seekable():
            audio.seek(start)
        samples = audio.read(num_frames if num_frames >= 0 else audio.frames - start, dtype, always_2d=True)
        sample_rate = audio.samplerate
    waveform = torch.from_numpy(samples)
    return (waveform.t() if channels_first else waveform), sample_rate


def _wav_subtype(dtype, encoding, bits):
    import torch

    if not encoding:
        if bits:
            return "PCM_U8" if bits == 8 else f"PCM_{bits}"
        by_dtype = {torch.uint8: "PCM_U8", torch.int16: "PCM_16", torch.int32: "PCM_32", torch.float32: "FLOAT",
                    torch.float64: "DOUBLE"}
        if dtype not in by_dtype:
            raise ValueError(f"Unsupported dtype for wav: {dtype}")
        return by_dtype[dtype]
    allowed = {"PCM_S": {None: "PCM_32", 16: "PCM_16", 24: "PCM_24", 32: "PCM_32", 64: "PCM_64"},
               "PCM_U": {None: "PCM_U8", 8: "PCM_U8"}, "PCM_F": {None: "FLOAT", 32: "FLOAT", 64: "DOUBLE"},
               "ULAW": {None: "ULAW", 8: "ULAW"}, "ALAW": {None: "ALAW", 8: "ALAW"}}
    if encoding not in allowed:
        raise ValueError(f"wav does not support {encoding}.")
    if bits not in allowed[encoding]:
        raise ValueError(f"wav does not support {bits}-bit {encoding} encoding.")
    return allowed[encoding][bits]


def _subtype(dtype, extension, encoding, bits):
    """The libsndfile subtype torchaudio 2.8's soundfile backend wrote for a file of this extension."""
    if extension == "wav":
        return _wav_subtype(dtype, encoding, bits)
    if extension == "flac":
        if encoding:
            raise ValueError("flac does not support encoding.")
        if bits and bits > 24:
            raise ValueError("flac does not support bits_per_sample > 24.")
        return {None: "PCM_16", 8: "PCM_S8"}.get(bits, f"PCM_{bits}")
    if extension in ("ogg", "vorbis"):
        if bits:
            raise ValueError("ogg/vorbis does not support bits_per_sample.")
        if encoding not in (None, "vorbis", "opus"):
            raise ValueError(f"Unexpected encoding: {encoding}")
        return "OPUS" if encoding == "opus" else "VORBIS"
    if extension == "mp3":
        return "MPEG_LAYER_III"
    if extension == "sph":
        if encoding in (None, "PCM_S"):
            return f"PCM_{bits}" if bits else "PCM_32"
        if encoding == "ULAW" and bits in (None, 8) or encoding == "ALAW":
            return encoding
        raise ValueError(f"sph does not support {bits}-bit {encoding} encoding.")
    if extension in ("nis", "nist"):
        return "PCM_16"
    raise ValueError(f"Unsupported format: {extension}")


def _save(wrapped, uri, src, sample_rate, channels_first=True, format=None, encoding=None, bits_per_sample=None,
          buffer_size=4096, backend=None, compression=None):
    asks_what_torchcodec_ignores = encoding is not None or bits_per_sample is not None
    if not _through_soundfile(backend, asks_what_torchcodec_ignores):
        return wrapped(uri, src, sample_rate, channels_first, format, encoding, bits_per_sample, buffer_size, backend,
                       compression)
    if compression:
        raise ValueError("soundfile backend does not support argument `compression`.")
    if src.ndim != 2:
        raise ValueError(f"Expected 2D Tensor, got {src.ndim}D.")
    if hasattr(uri, "write"):
        if format is None:
            raise RuntimeError("`format` is required when saving to file object.")
        extension = format.lower()
    else:
        extension = str(uri).split(".")[-1].lower()
    if bits_per_sample not in (None, 8, 16, 24, 32, 64):
        raise ValueError("Invalid bits_per_sample.")
    if bits_per_sample == 24:
        import warnings

        warnings.warn("Saving audio with 24 bits per sample might warp samples near -1 (torchaudio 2.8's soundfile "
                      "backend); 16 bits per sample avoid it.", stacklevel=3)
    subtype = _subtype(src.dtype, extension, encoding, bits_per_sample)
    if extension in ("nis", "nist", "sph") and format is None:
        format = "NIST"  # libsndfile does not know the extension of TED-LIUM's files
    _soundfile().write(file=uri, data=src.t() if channels_first else src, samplerate=sample_rate, subtype=subtype,
                       format=format)


def apply(patcher, torchaudio):
    if not lacks(torchaudio, "info"):
        raise NotNeeded("torchaudio still has its I/O backends and info (torchaudio < 2.9)")
    patcher.wrap(torchaudio, "load", lambda wrapped, instance, args, kwargs: _load(wrapped, *args, **kwargs))
    patcher.wrap(torchaudio, "save", lambda wrapped, instance, args, kwargs: _save(wrapped, *args, **kwargs))
    patcher.put_back(torchaudio, {name: globals()[name] for name in RESTORED})
    patcher.on_revert(lambda: _chosen.update(backend=None))
    return "torchaudio.load / save through soundfile where TorchCodec cannot serve them as 2.8 did; info back"


PATCH = Patch(
    "torchaudio_backends",
    since="0.4.0",
    summary="torchaudio.load / save without TorchCodec and torchaudio.info, AudioMetaData, list_audio_backends back "
    "(removed in 2.9), as torchaudio 2.8's soundfile backend read and wrote audio",
    package="torchaudio",
    affected="2.9.1-2.11.0 (swept; 2.8.0 still has its backends)",
    targets=("torchaudio",),
    apply=apply,
    errors=(r"TorchCodec is required for (load|save)_with_torchcodec",
            r"module 'torchaudio' has no attribute '(info|AudioMetaData|list_audio_backends|get_audio_backend|"
            r"set_audio_backend)'"),
    unfixable=((r"No module named 'torchaudio\.(sox_effects|io|kaldi_io|backend|prototype)",
                REMOVED_WITH_THE_BACKENDS_ADVICE,
                tuple(f"import torchaudio.{module}" for module in ("sox_effects", "io", "kaldi_io", "backend")), "2.9"),
               (r"cannot import name '(StreamReader|StreamWriter|AudioEffector|CodecConfig|sox_effects|kaldi_io)' "
                r"from 'torchaudio", REMOVED_WITH_THE_BACKENDS_ADVICE),
               (r"module 'torchaudio' has no attribute '(sox_effects|io|kaldi_io|backend)'",
                REMOVED_WITH_THE_BACKENDS_ADVICE)),
    looks_for=("name torchaudio.info", "name torchaudio.load", "name torchaudio.save", "name torchaudio.AudioMetaData",
               "name torchaudio.list_audio_backends", "name torchaudio.set_audio_backend"),
)
