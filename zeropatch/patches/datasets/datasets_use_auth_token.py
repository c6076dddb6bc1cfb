"""datasets_use_auth_token: ``load_dataset(..., use_auth_token=...)`` means ``token=`` again on datasets 3.0 and later.

Breaks: datasets 2.14 renamed the keyword ``token`` (keeping ``use_auth_token`` with a deprecation warning) and 3.0
removed it. The HF example scripts of 2021-2023 (``run_glue.py``, ``run_clm.py``, ``run_summarization.py``) and the
fine-tuners written from them pass it on every load, ``use_auth_token=True if model_args.use_auth_token else None``:
it now falls into the builder's configuration, "CsvConfig.__init__() got an unexpected keyword argument
'use_auth_token'" (or ``JsonConfig``, ``ParquetConfig``, a Hub dataset's own), even where its value is None.

Changes: ``load_dataset`` and ``load_dataset_builder`` (in ``datasets`` and ``datasets.load``) take ``use_auth_token``
by the rule ``hf_hub_legacy`` and ``transformers_use_auth_token`` apply (``patches/huggingface_hub/_auth_token.py``):
its value becomes ``token`` (one log line), ``None`` is dropped, and a different ``token`` given too is refused rather
than one credential silently chosen (2.14-2.21 let ``use_auth_token`` win). On datasets < 3.0 nothing changes.
"""

import inspect

from zeropatch._core import NotNeeded, Patch
from zeropatch.patches.huggingface_hub._auth_token import token_for_use_auth_token

LOADERS = ("load_dataset", "load_dataset_builder")


def _token_from_use_auth_token(wrapped, instance, args, kwargs):
    return wrapped(*args, **token_for_use_auth_token(kwargs, "datasets_use_auth_token", wrapped.__name__))


def apply(patcher, module):
    found = [name for name in LOADERS if callable(getattr(module, name, None))]
    if not found:
        raise NotNeeded(f"{module.__name__} has no {' / '.join(LOADERS)} here")
    if any("use_auth_token" in inspect.signature(getattr(module, name)).parameters for name in found):
        raise NotNeeded("datasets < 3.0 still takes use_auth_token")
    for name in found:  # datasets re-exports datasets.load's: where it holds the wrapped one, that one stays
        patcher.wrap_function(module, name, _token_from_use_auth_token)
    return f"{', '.join(found)} take use_auth_token as token"


PATCH = Patch(
    "datasets_use_auth_token",
    since="0.4.0",
    summary="load_dataset(use_auth_token=...) / load_dataset_builder means token=... again on datasets >= 3.0 (the HF "
    "example scripts of 2021-2023)",
    package="datasets",
    affected="3.0.0-5.2.0",
    targets=("datasets.load", "datasets"),
    apply=apply,
    errors=(r"Config\.__init__\(\) got an unexpected keyword argument 'use_auth_token'",),
    looks_for=tuple(f"call datasets.{name} with use_auth_token" for name in LOADERS),
)
