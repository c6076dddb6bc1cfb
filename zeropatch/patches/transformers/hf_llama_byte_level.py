"""hf_llama_byte_level: ``LlamaTokenizer`` / ``LlamaTokenizerFast`` load a byte-level BPE checkpoint's tokenizer.json
as it is written (4.x's ``LlamaTokenizerFast`` did), instead of putting SentencePiece's pre-tokenizer on it.

Breaks, silently: transformers 5.0 made ``LlamaTokenizerFast`` another name of ``LlamaTokenizer``, whose ``__init__``
rebuilds the backend from the file's vocabulary and merges under SentencePiece's ``Metaspace`` pre-tokenizer and
decoder. A checkpoint that declares ``"tokenizer_class": "LlamaTokenizerFast"`` but ships a byte-level BPE
tokenizer.json (Llama 3, DeepSeek V3 / R1 and their Llama distillations, DeepSeek-Coder v1) loses its spaces: "a cat
in a garden" encodes to other ids and decodes to "acatinagarden" (transformers#45345, #45488), with no error.
``AutoTokenizer`` goes the same way on 5.0-5.13; later releases send ``AutoTokenizer`` (only) to
``TokenizersBackend`` for such a file, while the class named in the code (alpaca-lora's
``LlamaTokenizer.from_pretrained``, a script's ``LlamaTokenizerFast``) is still broken on 5.24.

Changes: where a ``LlamaTokenizer`` (or a subclass keeping its ``__init__``) is loaded from a tokenizer.json whose
pre-tokenizer or decoder is ``ByteLevel``, transformers builds the backend from that file whole (model, normalizer,
pre-tokenizer, decoder, post-processor), as it does for ``TokenizersBackend`` and every class without an ``__init__``
of its own: the ids of the file's own tokenizer, which 4.x's ``LlamaTokenizerFast`` gave. The class stays
``LlamaTokenizer``. SentencePiece checkpoints (Llama 1 / 2: ``Metaspace``) load as before. One warning says so; the
job report counts the loads.
"""

import json

from zeropatch._core import Patch, Skip, warn_once
from zeropatch._legacy import Tally
from zeropatch.patches.transformers._llama_tokenizer import TARGETS, builds_as_llama, llama_tokenizer_of_5

AS_WRITTEN = "byte-level tokenizer.json loaded as written"
_TALLY = Tally()


def _is_byte_level(component):
    """Whether a serialized pre-tokenizer or decoder is ByteLevel, or a Sequence holding one."""
    if not isinstance(component, dict):
        return False
    parts = component.get("pretokenizers") or component.get("decoders") or ()
    return component.get("type") == "ByteLevel" or any(_is_byte_level(part) for part in parts)


def _declares_byte_level(path):
    try:
        with open(path, encoding="utf-8") as file:
            serialized = json.load(file)
    except (OSError, ValueError):
        return False
    return isinstance(serialized, dict) and any(_is_byte_level(serialized.get(part))
                                                for part in ("pre_tokenizer", "decoder"))


def _as_written_for_byte_level(llama_module, backend):
    def convert_to_native_format(wrapped, cls, args, kwargs):
        path = kwargs.get("tokenizer_file")
        if builds_as_llama(cls, llama_module) and isinstance(path, str) and _declares_byte_level(path):
            _TALLY.count(AS_WRITTEN)
            warn_once(f"hf_llama_byte_level: {cls.__name__} loads {path} as written (a byte-level BPE tokenizer, "
                      f"as 4.x's LlamaTokenizerFast did; transformers 5 would put SentencePiece's Metaspace on it and "
                      f"drop the spaces). ZEROPATCH_DISABLE=hf_llama_byte_level for transformers' own")
            return backend.convert_to_native_format(*args, **kwargs)  # as for a class without an __init__ of its own
        return wrapped(*args, **kwargs)
    return convert_to_native_format


def report():
    return _TALLY.report("LlamaTokenizer on a byte-level BPE checkpoint: its tokenizer.json whole, as 4.x loaded it"
                         if _TALLY.counts else None)


def apply(patcher, tokenization_llama):
    llama = llama_tokenizer_of_5(tokenization_llama, "it loads tokenizer.json as written")
    from transformers import tokenization_utils_tokenizers

    backend = getattr(tokenization_utils_tokenizers, "TokenizersBackend", None)
    if backend is None or "convert_to_native_format" not in vars(backend) or not issubclass(llama, backend):
        raise Skip("LlamaTokenizer does not build its backend through TokenizersBackend.convert_to_native_format")
    patcher.wrap(backend, "convert_to_native_format", _as_written_for_byte_level(tokenization_llama, backend))
    return "LlamaTokenizer loads a byte-level BPE tokenizer.json as written"


PATCH = Patch(
    "hf_llama_byte_level",
    since="0.4.0",
    summary="LlamaTokenizer / LlamaTokenizerFast load a byte-level BPE checkpoint's tokenizer.json as written (as "
    "4.x's LlamaTokenizerFast), not under SentencePiece's pre-tokenizer, which drops every space",
    package="transformers",
    affected="5.0.0-5.24.0 (silent: spaces dropped; AutoTokenizer too up to 5.13.0)",
    targets=TARGETS,
    apply=apply,
    report=report,
)
