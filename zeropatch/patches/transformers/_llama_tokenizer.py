"""What the LlamaTokenizer patches share (``hf_llama_byte_level``, ``hf_llama_bos_default``): which classes build
their backend with transformers 5's ``LlamaTokenizer.__init__``."""


def builds_as_llama(cls, tokenization_llama):
    """Whether ``cls`` runs ``LlamaTokenizer``'s own ``__init__`` (it, or a subclass keeping it). Read at the call (a
    reloaded module's class) and by the class that defines ``__init__``, so that a patch wrapping it changes nothing."""
    llama = getattr(tokenization_llama, "LlamaTokenizer", None)
    owner = next((klass for klass in getattr(cls, "__mro__", ()) if "__init__" in vars(klass)), None)
    return llama is not None and owner is llama
