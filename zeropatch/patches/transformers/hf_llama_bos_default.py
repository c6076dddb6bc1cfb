"""hf_llama_bos_default: ``LlamaTokenizer`` adds the beginning-of-sequence token by default again, as its docstring
says and as 4.x's ``LlamaTokenizer`` and ``LlamaTokenizerFast`` did, where the checkpoint does not say.

Breaks, silently: a LLaMA checkpoint of early 2023 ships its SentencePiece model (``tokenizer.model``) without a
``tokenizer.json`` and with a ``tokenizer_config.json`` that does not mention ``add_bos_token`` (the conversions of
March 2023, decapoda-research/llama-7b-hf: alpaca-lora's default ``--base_model``). transformers 4 added ``<s>`` to
every encoded text (``add_bos_token=True`` by default); transformers 5 converts the SentencePiece model under
``TokenizersBackend``, whose default is False, and adds nothing. alpaca-lora's ``tokenize()`` then trains on prompts
without the ``<s>`` the model was pretrained with, and its ``generate.py`` prompts the model without it. No error.

Changes: where a ``LlamaTokenizer`` (or a subclass keeping its ``__init__``) is converted from the checkpoint's
``tokenizer.model`` (no ``tokenizer.json``: transformers 5 follows that file's post-processor instead, on purpose),
without ``add_bos_token`` being given (by the call or the checkpoint's ``tokenizer_config.json``), and its
post-processor adds no token, ``add_bos_token`` is True: 4.x's default, and the documented one. A value given either
way is kept; a ``tokenizer.json`` checkpoint is left as transformers 5 loads it. One warning says so; the job report
counts the tokenizers.
"""

from zeropatch._core import Patch, Skip, warn_once
from zeropatch._legacy import Tally
from zeropatch.patches.transformers._llama_tokenizer import TARGETS, builds_as_llama, llama_tokenizer_of_5

BOS_BY_DEFAULT = "add_bos_token=True by default, as 4.x"
FROM_A_TOKENIZER_JSON = ("tokenizer_file", "tokenizer_object", "post_processor")  # what transformers 5 may pass then
_TALLY = Tally()


def _bos_by_default(tokenization_llama):
    def init(wrapped, instance, args, kwargs):
        wrapped(*args, **kwargs)
        if builds_as_llama(type(instance), tokenization_llama):
            _bos_unless_given(instance, kwargs)
    return init


def _converted_from_a_sentencepiece_model(kwargs):
    """Whether transformers built the backend from the checkpoint's tokenizer.model (no tokenizer.json was read)."""
    from_a_tokenizer_json = any(key in kwargs for key in FROM_A_TOKENIZER_JSON)
    return str(kwargs.get("vocab_file") or "").endswith(".model") and not from_a_tokenizer_json


def _bos_unless_given(instance, kwargs):
    if "add_bos_token" in kwargs or not _converted_from_a_sentencepiece_model(kwargs) or instance.bos_token is None:
        return
    processor = instance.backend_tokenizer.post_processor
    if processor is not None and processor.num_special_tokens_to_add(False):
        return  # the backend adds its own tokens
    instance.add_bos_token = True  # (transformers' setter rebuilds the post-processor)
    _TALLY.count(BOS_BY_DEFAULT)
    warn_once(f"hf_llama_bos_default: {type(instance).__name__} adds {instance.bos_token!r} to every text, as "
              f"transformers 4 did and its documentation says (the checkpoint does not give add_bos_token; "
              f"transformers 5 would add nothing). ZEROPATCH_DISABLE=hf_llama_bos_default for transformers' own")


def report():
    return _TALLY.report("LlamaTokenizer without add_bos_token from the checkpoint: adds its beginning-of-sequence "
                         "token, as 4.x" if _TALLY.counts else None)


def apply(patcher, tokenization_llama):
    llama = llama_tokenizer_of_5(tokenization_llama, "it and LlamaTokenizer add the beginning-of-sequence token by "
                                                     "default")
    if not isinstance(getattr(llama, "add_bos_token", None), property) or "__init__" not in vars(llama):
        raise Skip("LlamaTokenizer has no __init__ of its own or no add_bos_token property to set")
    patcher.wrap(llama, "__init__", _bos_by_default(tokenization_llama))
    return "LlamaTokenizer adds the beginning-of-sequence token by default where the checkpoint does not say"


PATCH = Patch(
    "hf_llama_bos_default",
    since="0.4.0",
    summary="LlamaTokenizer adds the beginning-of-sequence token by default again (4.x's default, its documented "
    "one) where a SentencePiece checkpoint's tokenizer_config.json does not give add_bos_token",
    package="transformers",
    affected="5.0.0-5.24.0 (silent: no <s> for a tokenizer.model checkpoint that does not give add_bos_token)",
    targets=TARGETS,
    apply=apply,
    report=report,
)
