"""hf_trainer_tokenizer: ``Trainer(..., tokenizer=tok)`` and ``trainer.tokenizer`` work again, as on transformers 4.

Breaks: transformers 4.46 renamed the Trainer's ``tokenizer`` to ``processing_class`` (the keyword and the attribute
kept working, with a deprecation warning) and 5.0 removed the old name: "TypeError: Trainer.__init__() got an
unexpected keyword argument 'tokenizer'" (FastChat, LLaVA-1.5's ``LLaVATrainer``, alpaca-lora, every
``run_*.py`` of the time), and ``trainer.tokenizer`` is an AttributeError. Silent on the way: without it the default
collator does not pad and the final ``save_model`` writes no tokenizer.

Changes: ``Trainer.__init__`` and ``Seq2SeqTrainer.__init__`` take ``tokenizer=`` as ``processing_class=``, under
4.5x's rule: both given is a ValueError (4.5x raised it too). ``Trainer.tokenizer`` is a property again, reading and
setting ``processing_class``, as 4.5x's did. On transformers < 5: not-needed.
"""

from zeropatch._core import NotNeeded, Patch, Skip, inform_once, version_tuple


def _tokenizer_is_the_processing_class(wrapped, trainer, args, kwargs):
    if "tokenizer" in kwargs:
        if "processing_class" in kwargs:
            raise ValueError(f"Both `tokenizer` and `processing_class` are set for `{type(trainer).__name__}.__init__`"
                             " (transformers 4.5x refused it too): pass `processing_class` only")
        inform_once("hf_trainer_tokenizer: Trainer(tokenizer=...) is processing_class, as in transformers 4")
        kwargs = dict(kwargs)
        kwargs["processing_class"] = kwargs.pop("tokenizer")
    return wrapped(*args, **kwargs)


def _get_tokenizer(trainer):
    return trainer.processing_class


def _set_tokenizer(trainer, processing_class):
    trainer.processing_class = processing_class


def apply(patcher, module):
    import inspect

    import transformers

    if version_tuple(transformers.__version__) < (5,):  # 4.46-4.57 took it through a deprecation decorator
        raise NotNeeded("transformers < 5 takes Trainer(tokenizer=...)")
    trainer_class = getattr(module, "Seq2SeqTrainer" if module.__name__.endswith("_seq2seq") else "Trainer", None)
    if trainer_class is None:
        raise Skip(f"{module.__name__} has no trainer class")
    parameters = inspect.signature(trainer_class.__init__).parameters
    if "tokenizer" in parameters or "processing_class" not in parameters:
        raise NotNeeded(f"{trainer_class.__name__}.__init__ still takes tokenizer (or has no processing_class)")
    patcher.wrap(trainer_class, "__init__", _tokenizer_is_the_processing_class)
    if trainer_class.__name__ == "Trainer" and not hasattr(trainer_class, "tokenizer"):
        patcher.set(trainer_class, "tokenizer", property(_get_tokenizer, _set_tokenizer,
                                                         doc="The processing class (transformers 4's name for it)."))
    return f"{trainer_class.__name__}(tokenizer=...) is processing_class"


PATCH = Patch(
    "hf_trainer_tokenizer",
    since="0.4.0",
    summary="Trainer(tokenizer=...) and trainer.tokenizer are processing_class again, as on transformers 4",
    package="transformers",
    affected="5.0.0-5.23.0",
    targets=("transformers.trainer", "transformers.trainer_seq2seq"),
    apply=apply,
    errors=(r"(Seq2Seq)?Trainer\.__init__\(\) got an unexpected keyword argument 'tokenizer'",
            r"'\w*Trainer' object has no attribute 'tokenizer'"),
    looks_for=tuple(f"call transformers.{trainer} with tokenizer" for trainer in (
        "Trainer", "trainer.Trainer", "Seq2SeqTrainer", "trainer_seq2seq.Seq2SeqTrainer")),
)
