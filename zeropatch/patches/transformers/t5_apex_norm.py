"""t5_apex_norm: T5 builds its layer norms from apex's FusedRMSNorm again where apex is installed.

Breaks: transformers up to 5.7 replaced ``T5LayerNorm`` with ``apex.normalization.FusedRMSNorm`` whenever
apex imported (``modeling_t5.T5LayerNorm = FusedRMSNorm`` at module load); 5.8 dropped that swap. Code
written for it fails on GPU machines with apex: Open-Sora's T5 shardformer policy asserts the layer is
apex's ("Recovering T5LayerNorm requires the original layer to be apex's Fused RMS Norm.").

Changes: where apex is importable, ``transformers.models.t5.modeling_t5.T5LayerNorm`` is bound to apex's
``FusedRMSNorm`` right after the module loads, as 5.7 did: every T5 layer built afterwards (and
``_init_weights``' isinstance check) sees apex's class. Without apex nothing changes (what 5.7 did too).
"""

from zeropatch._core import NotNeeded, Patch, Skip

APEX_CLASS = "FusedRMSNorm"


def apply(patcher, modeling_t5):
    current = getattr(modeling_t5, "T5LayerNorm", None)
    if current is None:
        raise Skip("transformers.models.t5.modeling_t5 has no T5LayerNorm")
    if current.__name__ == APEX_CLASS:
        raise NotNeeded("T5LayerNorm is already apex's FusedRMSNorm (transformers < 5.8)")
    import importlib.util

    if importlib.util.find_spec("apex") is None:
        raise NotNeeded("apex is not installed, so transformers <= 5.7 would have used T5LayerNorm too")
    try:
        from apex.normalization import FusedRMSNorm
    except ImportError as error:
        raise NotNeeded(f"apex.normalization does not import ({error}); transformers <= 5.7 fell back to T5LayerNorm")
    patcher.set(modeling_t5, "T5LayerNorm", FusedRMSNorm)
    return "T5LayerNorm -> apex.normalization.FusedRMSNorm"


PATCH = Patch(
    "t5_apex_norm",
    since="0.2.0",
    summary="T5's layer norm is apex's FusedRMSNorm again where apex is installed (as up to transformers 5.7)",
    package="transformers",
    affected="5.8.0-5.23.0 (with apex installed)",
    targets=("transformers.models.t5.modeling_t5",),
    apply=apply,
    errors=(r"Recovering T5LayerNorm requires the original layer to be apex's Fused RMS Norm",),
)
