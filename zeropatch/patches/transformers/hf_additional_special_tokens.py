"""hf_additional_special_tokens: ``tokenizer.additional_special_tokens`` and ``additional_special_tokens_ids`` answer
again, as before transformers 5.0.

Breaks: transformers 5.0 renamed a tokenizer's unnamed special tokens ``extra_special_tokens``. It still converts the
old key where tokens are added (``add_special_tokens({"additional_special_tokens": [...]})``, the ``from_pretrained``
keyword), but reading the old attributes raises "AttributeError: BertTokenizer has no attribute
additional_special_tokens_ids": BLIP's ``init_tokenizer`` (every BLIP model), Qwen-1's chat formatting
(``im_start, im_end = tokenizer.additional_special_tokens_ids``), LLaVA-style collators looking up their ``<image>``
token. Assigning them sets a plain attribute that the tokenizer never treats as special, silently.

Changes: ``PreTrainedTokenizerBase`` gets the two properties back, as 4.x's ``SpecialTokensMixin`` had them, reading
and writing the extra special tokens: the tokens as strings, their ids; assigning tokens or ids makes them the
tokenizer's extra special tokens, as 4.x's setters made them its additional ones. On releases that have them:
not-needed.
"""

from zeropatch._core import NotNeeded, Patch, Skip

OLD, NEW = "additional_special_tokens", "extra_special_tokens"


def _tokens(tokenizer):
    """`list[str]`: the tokenizer's unnamed special tokens (transformers 5's ``extra_special_tokens``)."""
    return getattr(tokenizer, NEW)


def _set_tokens(tokenizer, tokens):
    setattr(tokenizer, NEW, tokens)


def _ids(tokenizer):
    """`list[int]`: the ids of the tokenizer's unnamed special tokens."""
    return getattr(tokenizer, NEW + "_ids")


def _set_ids(tokenizer, ids):
    setattr(tokenizer, NEW + "_ids", ids)


def apply(patcher, tokenization_utils_base):
    base = getattr(tokenization_utils_base, "PreTrainedTokenizerBase", None)
    if base is None:
        raise Skip("transformers.tokenization_utils_base has no PreTrainedTokenizerBase")
    if hasattr(base, OLD) or OLD in getattr(base, "SPECIAL_TOKENS_ATTRIBUTES", ()):
        raise NotNeeded(f"tokenizers still have {OLD} (transformers < 5.0)")
    code = getattr(vars(base).get("__getattr__"), "__code__", None)
    if code is None or NEW not in code.co_consts:
        raise Skip(f"PreTrainedTokenizerBase answers no {NEW} through its __getattr__: a layout this patch does not know")
    patcher.add_methods(base, {OLD: property(_tokens, _set_tokens), OLD + "_ids": property(_ids, _set_ids)})
    return f"tokenizer.{OLD}(_ids) read and write its {NEW}"


PATCH = Patch(
    "hf_additional_special_tokens",
    since="0.8.0",
    summary="tokenizer.additional_special_tokens / additional_special_tokens_ids (BLIP's init_tokenizer, Qwen-1's chat "
    "format) answer again: the extra special tokens transformers 5 renamed them, read and written",
    package="transformers",
    affected="5.0.0-5.24.0 (swept: 5.0.0, 5.24.0; 4.57.3 not-needed)",
    targets=("transformers.tokenization_utils_base",),
    apply=apply,
    errors=(r"has no attribute '?additional_special_tokens",),
    looks_for=("attribute additional_special_tokens_ids", "attribute additional_special_tokens"),
)
