"""accelerate_kwargs: ``Accelerator(...)`` keywords that accelerate removed, or now ignores, take effect as they did.

Breaks: accelerate 0.2x removed ``logging_dir`` (deprecated in 0.18 for ``project_dir`` / ``ProjectConfiguration``),
and 1.0 removed ``dispatch_batches``, ``even_batches`` and ``use_seedable_sampler`` (moved to
``DataLoaderConfiguration`` in 0.28): "Accelerator.__init__() got an unexpected keyword argument 'logging_dir'"
(the diffusers-example fine-tuners) or "... 'even_batches'" (PixArt-alpha's train.py). Worse, 1.0 kept the
``split_batches`` parameter but ignores it: ``Accelerator(split_batches=True)`` silently does not split batches.

Changes: ``Accelerator.__init__`` takes them again and applies them exactly as the last release that had them did,
with one log line each: ``logging_dir`` becomes the project configuration's ``logging_dir`` (0.19); the dataloader
keywords are set on the ``dataloader_config`` (given, or a new ``DataLoaderConfiguration``), as 0.34 did, with the
old truthiness (PixArt-alpha passes ``even_batches=(False,)``, which old accelerate read as true). A keyword the
installed release still handles itself is left to it.
"""

from zeropatch._core import NotNeeded, Patch, Skip, inform_once, version_tuple

DATALOADER_KEYWORDS = ("split_batches", "dispatch_batches", "even_batches", "use_seedable_sampler")


def _as_before(keyword, value):
    """The value as the old release used it: truthiness for the flags, None (decide per dataloader) kept."""
    if keyword == "dispatch_batches" and value is None:
        return None
    return bool(value)


def _handled_here(parameters, accelerate_version):
    """The legacy keywords this release does not take effect for: missing from the signature, or, from 1.0 on,
    split_batches, which 1.0 kept in the signature but ignores."""
    handled = [keyword for keyword in ("logging_dir", *DATALOADER_KEYWORDS) if keyword not in parameters]
    if "split_batches" in parameters and accelerate_version >= (1,):
        handled.append("split_batches")
    return handled


def _init(handled):
    def init(wrapped, accelerator, args, kwargs):
        legacy = {keyword: kwargs.pop(keyword) for keyword in handled if keyword in kwargs}
        if not legacy:
            return wrapped(*args, **kwargs)
        if "logging_dir" in legacy:
            from accelerate.utils import ProjectConfiguration

            config = kwargs.get("project_config") or ProjectConfiguration(project_dir=kwargs.get("project_dir"))
            config.logging_dir = legacy.pop("logging_dir")
            kwargs["project_config"] = config
            inform_once(f"accelerate_kwargs: Accelerator(logging_dir={config.logging_dir!r}) -> "
                        f"project_config.logging_dir, as accelerate 0.19 did")
        if legacy:
            from accelerate.utils import DataLoaderConfiguration

            config = kwargs.get("dataloader_config") or DataLoaderConfiguration()
            for keyword, value in legacy.items():
                setattr(config, keyword, _as_before(keyword, value))
                inform_once(f"accelerate_kwargs: Accelerator({keyword}={value!r}) -> dataloader_config.{keyword}="
                            f"{_as_before(keyword, value)!r}, as accelerate 0.34 did")
            kwargs["dataloader_config"] = config
        return wrapped(*args, **kwargs)

    return init


def apply(patcher, accelerator_module):
    import inspect

    accelerator = getattr(accelerator_module, "Accelerator", None)
    if accelerator is None:
        raise Skip("accelerate.accelerator has no Accelerator")
    parameters = inspect.signature(accelerator.__init__).parameters
    import accelerate

    handled = _handled_here(parameters, version_tuple(accelerate.__version__))
    if not handled:
        raise NotNeeded("Accelerator still takes every legacy keyword itself")
    for destination, keywords in (("project_config", ("logging_dir",)), ("dataloader_config", DATALOADER_KEYWORDS)):
        if destination not in parameters and set(handled) & set(keywords):
            raise Skip(f"Accelerator.__init__ takes no {destination} for {', '.join(set(handled) & set(keywords))}")
    patcher.wrap(accelerator, "__init__", _init(tuple(handled)))
    return "Accelerator(" + ", ".join(f"{keyword}=" for keyword in handled) + ") take effect as before"


PATCH = Patch(
    "accelerate_kwargs",
    since="0.3.0",
    summary="Accelerator(logging_dir=, dispatch_batches=, even_batches=, split_batches=, use_seedable_sampler=) take "
    "effect as in the last release that had them (split_batches is silently ignored since 1.0)",
    package="accelerate",
    affected="0.27.2-1.15.0 (swept; logging_dir went before 0.27, the dataloader keywords in 1.0)",
    targets=("accelerate.accelerator",),
    apply=apply,
    errors=(r"Accelerator\.__init__\(\) got an unexpected keyword argument "
            r"'(logging_dir|dispatch_batches|even_batches|use_seedable_sampler)'",),
    looks_for=tuple(f"call accelerate.{where}Accelerator with {keyword}" for where in ("", "accelerator.")
                    for keyword in ("logging_dir", *DATALOADER_KEYWORDS)),
)
