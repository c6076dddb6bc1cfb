"""timm_layers: ``timm.models.layers.<module>`` paths (``helpers``, ``drop``, ``weight_init``, ...) import again.

Breaks: timm 0.9 moved ``timm/models/layers/`` to ``timm/layers/`` and left only the package's ``__init__`` behind
(re-exporting the names). ``from timm.models.layers import DropPath`` still works; the submodule paths legacy DiT-era
code imports do not: ``from timm.models.layers.helpers import to_2tuple`` (Latte, Open-Sora-Plan's vendored
trees), ``from timm.models.layers.weight_init import trunc_normal_``: "No module named 'timm.models.layers.helpers'".
Whole-model checkpoints pickled with timm <= 0.8 name their classes by those paths
(``timm.models.layers.drop.DropPath``), so unpickling them fails the same way.

Changes: when ``timm.models.layers.<name>`` is imported for a module timm 0.6 had there and the installed timm has
none, zeropatch provides it over ``timm.layers.<name>``: the very same functions and classes, looked up live, public
ones in ``__all__``. A name whose ``timm.layers`` module is gone too (``activations_jit``) stays an ImportError.
On timm < 0.9 the real modules load and are left alone.
"""

from zeropatch._core import NotNeeded, Patch, Skip, is_provided, provide_as

# the modules timm 0.6.13 had in timm/models/layers/
SUBMODULES = (
    "activations", "activations_jit", "activations_me", "adaptive_avgmax_pool", "attention_pool2d", "blur_pool",
    "bottleneck_attn", "cbam", "classifier", "cond_conv2d", "config", "conv2d_same", "conv_bn_act", "create_act",
    "create_attn", "create_conv2d", "create_norm", "create_norm_act", "drop", "eca", "evo_norm", "fast_norm",
    "filter_response_norm", "gather_excite", "global_context", "halo_attn", "helpers", "inplace_abn", "lambda_layer",
    "linear", "median_pool", "mixed_conv2d", "ml_decoder", "mlp", "non_local_attn", "norm", "norm_act", "padding",
    "patch_embed", "pool2d_same", "pos_embed", "selective_kernel", "separable_conv", "space_to_depth", "split_attn",
    "split_batchnorm", "squeeze_excite", "std_conv", "test_time_pool", "trace_utils", "weight_init",
)
OLD = "timm.models.layers."
NEW = "timm.layers."


def apply(patcher, old_module):
    if not is_provided(old_module):
        raise NotNeeded(f"timm still has {old_module.__name__} (timm < 0.9)")
    import importlib

    moved = NEW + old_module.__name__[len(OLD):]
    try:
        module = importlib.import_module(moved)
    except ImportError as error:
        raise Skip(f"{moved} does not import either ({error})")

    provide_as(patcher, old_module, module, f"timm < 0.9's path of {moved} (provided by zeropatch)")
    return f"{old_module.__name__} provided over {moved}"


PATCH = Patch(
    "timm_layers",
    since="0.3.0",
    summary="timm.models.layers.<module> (helpers, drop, weight_init, ...; gone in 0.9) back over timm.layers, also "
    "for unpickling old checkpoints",
    package="timm",
    affected="0.9.16-1.0.31 (swept; the modules went in 0.9)",
    targets=tuple(OLD + name for name in SUBMODULES),
    provides=True,
    apply=apply,
    errors=(r"No module named 'timm\.models\.layers\.\w+'",),
    looks_for=tuple(f"import {OLD}{name}" for name in SUBMODULES),
)
