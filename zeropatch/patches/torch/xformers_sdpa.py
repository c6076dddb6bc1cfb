"""xformers_sdpa (opt-in): ``import xformers.ops`` works without xformers, its attention on torch's SDPA.

Breaks: xformers wheels are built for one torch release; for today's torch there is often none that pip can
install next to it (pip downgrades torch, or finds no match), and on a CPU machine there never is. Open-Sora 1.0-1.2
(``opensora/models/layers/blocks.py``) and PixArt-alpha / -sigma (``PixArt_blocks.py``) do ``import xformers.ops``
at module level: "ModuleNotFoundError: No module named 'xformers'" before anything runs.

Changes: when the patch is turned on by name and no xformers is installed, zeropatch provides ``xformers``,
``xformers.ops``, ``xformers.ops.fmha`` and ``xformers.ops.fmha.attn_bias`` with what legacy training code uses:
``memory_efficient_attention`` (and ``..._forward``) on ``scaled_dot_product_attention`` with xformers' contract
(see zeropatch/kernels/attention.py and xformers_api.py), ``AttentionBias``, ``LowerTriangularMask`` (``add_bias``),
``LowerTriangularMaskWithTensorBias``, ``BlockDiagonalMask`` / ``BlockDiagonalCausalMask`` (``from_seqlens``,
``from_tensor_list``, ``split``, ``make_causal``, ``materialize``) and ``unbind``. Opt-in because a provided package
flips ``try: import xformers`` feature checks. Where xformers is installed it is left alone (``xformers_fallback``
covers one whose operators do not load).
"""

from zeropatch._core import NotNeeded, Patch, is_provided

BIASES = ("AttentionBias", "LowerTriangularMask", "LowerTriangularMaskWithTensorBias", "BlockDiagonalMask",
          "BlockDiagonalCausalMask")
FUNCTIONS = ("memory_efficient_attention",)
# module -> (names from zeropatch.kernels.xformers_api, its provided submodule (imported so that it is an attribute))
CONTENTS = {  # where xformers itself has them
    "xformers": ((), None),
    "xformers.ops": (FUNCTIONS + ("AttentionBias", "LowerTriangularMask"), "fmha"),
    "xformers.ops.fmha": (FUNCTIONS + ("AttentionBias", "BlockDiagonalMask", "LowerTriangularMask"), "attn_bias"),
    "xformers.ops.fmha.attn_bias": (BIASES, None),
}


def apply(patcher, module):
    if not is_provided(module):
        raise NotNeeded("xformers is installed (xformers_fallback covers operators that do not load)")
    import importlib

    from zeropatch.kernels import xformers_api
    import torch

    names, submodule = CONTENTS[module.__name__]
    patcher.set(module, "__doc__", f"{module.__name__} on torch's scaled_dot_product_attention (provided by zeropatch)")
    if module.__name__ != "xformers.ops.fmha.attn_bias":
        patcher.set(module, "__path__", [])  # a package: its submodules are provided too
    for name in names:
        patcher.set(module, name, getattr(xformers_api, name))
    if "memory_efficient_attention" in names:
        patcher.set(module, "memory_efficient_attention_forward", xformers_api.memory_efficient_attention)
    if module.__name__ == "xformers.ops":
        patcher.set(module, "unbind", torch.unbind)
    if submodule:
        importlib.import_module(f"{module.__name__}.{submodule}")
    return f"{module.__name__} provided on scaled_dot_product_attention"


PATCH = Patch(
    "xformers_sdpa",
    since="0.3.0",
    summary="opt-in: import xformers.ops without xformers (no wheel for this torch, or a CPU): memory_efficient_attention "
    "and its attention biases on torch's SDPA",
    package="torch",
    affected="2.13.0 (swept; any torch that has no xformers build installed)",
    targets=tuple(CONTENTS),
    provides=True,
    default=False,
    apply=apply,
    errors=(r"No module named 'xformers'",),
    looks_for=("import xformers",),
)
