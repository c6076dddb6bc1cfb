"""transformers_use_auth_token: ``from_pretrained(..., use_auth_token=...)`` means ``token=`` again on transformers 5.

Breaks: transformers 4.x accepted the pre-4.34 spelling with a deprecation warning; transformers 5 removed it
(huggingface/transformers#41666). Legacy training scripts pass it on every load: a model's ``from_pretrained`` then
dies with "TypeError: BertModel.__init__() got an unexpected keyword argument 'use_auth_token'" (it reaches the
model's constructor), and a config's silently ignores it, authenticating with nothing.

Changes: the ``from_pretrained`` of models, configs, tokenizers, processors, feature extractors, image processors
and their Auto classes take ``use_auth_token`` by the rule ``hf_hub_legacy`` applies to the hub's functions
(``patches/huggingface_hub/_auth_token.py``): its value becomes ``token`` (one log line), ``None`` is dropped, and a
different ``token`` given too is refused with 4.x's message. On transformers 4.x nothing changes.
"""

from zeropatch._core import NotNeeded, Patch, version_tuple
from zeropatch.patches.huggingface_hub._auth_token import token_for_use_auth_token

# module -> the classes whose from_pretrained legacy scripts call
LOADERS = {
    "transformers.modeling_utils": ("PreTrainedModel",),
    "transformers.configuration_utils": ("PretrainedConfig",),
    "transformers.tokenization_utils_base": ("PreTrainedTokenizerBase",),
    "transformers.processing_utils": ("ProcessorMixin",),
    "transformers.feature_extraction_utils": ("FeatureExtractionMixin",),
    "transformers.image_processing_base": ("ImageProcessingMixin",),
    "transformers.models.auto.auto_factory": ("_BaseAutoModelClass",),
    "transformers.models.auto.configuration_auto": ("AutoConfig",),
    "transformers.models.auto.tokenization_auto": ("AutoTokenizer",),
}


def _token_from_use_auth_token(wrapped, cls, args, kwargs):
    kwargs = token_for_use_auth_token(kwargs, "transformers_use_auth_token",
                                      f"{getattr(cls, '__name__', cls)}.from_pretrained")
    return wrapped(*args, **kwargs)


def apply(patcher, module):
    import transformers

    if version_tuple(transformers.__version__) < (5,):
        raise NotNeeded("transformers 4.x still takes use_auth_token")
    wrapped = []
    for name in LOADERS[module.__name__]:
        if "from_pretrained" in vars(getattr(module, name, object)):
            patcher.wrap(getattr(module, name), "from_pretrained", _token_from_use_auth_token)
            wrapped.append(name)
    if not wrapped:
        raise NotNeeded(f"{module.__name__} has no {' / '.join(LOADERS[module.__name__])}.from_pretrained here")
    return f"{', '.join(wrapped)}.from_pretrained take use_auth_token as token"


PATCH = Patch(
    "transformers_use_auth_token",
    since="0.3.0",
    summary="from_pretrained(use_auth_token=...) means token=... again on transformers 5 (models, configs, "
    "tokenizers, processors, Auto classes)",
    package="transformers",
    affected="5.0.0-5.23.0 (swept)",
    targets=tuple(LOADERS),
    apply=apply,
    # a datasets builder configuration's (CsvConfig.__init__) is datasets_use_auth_token's
    errors=(r"(?<!Config\.)__init__\(\) got an unexpected keyword argument 'use_auth_token'",),
    looks_for=("call transformers.*.from_pretrained with use_auth_token",),
)
