"""What the LlamaTokenizer patches share (``hf_llama_byte_level``, ``hf_llama_bos_default``): their targets,
transformers 5's ``LlamaTokenizer`` (which ``LlamaTokenizerFast`` is another name of), and which classes build their
backend with its ``__init__``."""

from zeropatch._core import NotNeeded

TARGETS = ("transformers.models.llama.tokenization_llama",  # 5.x: LlamaTokenizerFast is another name of its class
           "transformers.models.llama.tokenization_llama_fast")  # 4.x's own LlamaTokenizerFast: not-needed


def llama_tokenizer_of_5(tokenization_llama, why_4_needs_nothing):
    """transformers 5's LlamaTokenizer; NotNeeded (with the reason) where LlamaTokenizerFast is a class of its own."""
    llama = getattr(tokenization_llama, "LlamaTokenizer", None)
    if llama is None or getattr(tokenization_llama, "LlamaTokenizerFast", None) is not llama:
        raise NotNeeded(f"LlamaTokenizerFast is a class of its own here (transformers 4): {why_4_needs_nothing}")
    return llama


def builds_as_llama(cls, tokenization_llama):
    """Whether ``cls`` runs ``LlamaTokenizer``'s own ``__init__`` (it, or a subclass keeping it). Read at the call (a
    reloaded module's class) and by the class that defines ``__init__``, so that a patch wrapping it changes nothing."""
    llama = getattr(tokenization_llama, "LlamaTokenizer", None)
    owner = next((klass for klass in getattr(cls, "__mro__", ()) if "__init__" in vars(klass)), None)
    return llama is not None and owner is llama
