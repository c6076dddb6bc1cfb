"""xformers_fallback: ``xformers.ops.memory_efficient_attention`` runs on torch's SDPA when xformers' compiled
operators cannot run it.

Breaks: an xformers wheel is compiled against one torch release (and CUDA, and Python). On any other - the usual
state of a legacy repo's ``xformers==0.0.2x`` pin next to today's torch, or any CPU machine - xformers imports with
"xFormers can't load C++/CUDA extensions. xFormers was built for: PyTorch 2.x.y (you have ...)", and the first
attention call dies: "NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs"
(or, with an explicit ``op=``, "ValueError: Operator `memory_efficient_attention` does not support inputs").
Open-Sora 1.0-1.2 and PixArt-alpha / -sigma call it unguarded in every cross-attention layer.

Changes: ``memory_efficient_attention`` and ``memory_efficient_attention_forward`` (in ``xformers.ops.fmha`` and as
re-exported by ``xformers.ops``) still try xformers first; when xformers finds no operator for the inputs, the call
runs on ``torch.nn.functional.scaled_dot_product_attention`` with xformers' contract (layouts, ``p``, ``scale``,
``output_dtype``, tensor biases, ``LowerTriangularMask``, ``BlockDiagonalMask`` / ``BlockDiagonalCausalMask``
without a dense mask, any other bias through its own ``materialize``), logged once per dtype and device. Where
xformers' operators run, nothing changes.
"""

from zeropatch._core import NotNeeded, Patch, Skip, inform_once, is_provided

FUNCTIONS = ("memory_efficient_attention", "memory_efficient_attention_forward")
NO_OPERATOR = ("No operator found for", "does not support inputs")


def _fall_back_to_sdpa(wrapped, instance, args, kwargs):
    try:
        return wrapped(*args, **kwargs)
    except (NotImplementedError, ValueError) as error:
        if not any(text in str(error) for text in NO_OPERATOR):
            raise
    query = args[0] if args else kwargs.get("query")
    inform_once(f"xformers_fallback: xformers{_build_state()} has no operator for {getattr(query, 'dtype', '?')} "
                f"attention on {getattr(getattr(query, 'device', None), 'type', '?')}: it runs on torch's "
                "scaled_dot_product_attention")
    from zeropatch.kernels.xformers_api import memory_efficient_attention

    return memory_efficient_attention(*args, **kwargs)


def _build_state():
    import sys

    loaded = getattr(sys.modules.get("xformers"), "_has_cpp_library", None)
    return " (its compiled operators did not load: built for another torch)" if loaded is False else ""


def apply(patcher, module):
    if is_provided(module):
        raise NotNeeded("no xformers installed: xformers_sdpa provides it, on SDPA already")
    found = [name for name in FUNCTIONS if hasattr(module, name)]
    if "memory_efficient_attention" not in found:
        raise Skip(f"{module.__name__} has no memory_efficient_attention")
    for name in found:  # xformers.ops re-exports fmha's: where it holds fmha's wrapped one, that one stays
        patcher.wrap_function(module, name, _fall_back_to_sdpa)
    return f"{', '.join(found)} fall back to SDPA where xformers{_build_state()} has no operator"


PATCH = Patch(
    "xformers_fallback",
    since="0.3.0",
    summary="xformers' memory_efficient_attention runs on torch's SDPA when its compiled operators do not load "
    "(a wheel built for another torch, or a CPU)",
    package="xformers",
    affected="0.0.35 (swept on the CPU build of torch; any build that does not match the torch it runs on)",
    targets=("xformers.ops.fmha", "xformers.ops"),
    apply=apply,
    errors=(r"No operator found for `memory_efficient_attention_forward`",
            r"xFormers can't load C\+\+/CUDA extensions",
            r"Operator `memory_efficient_attention` does not support inputs"),
    looks_for=("call xformers.ops.memory_efficient_attention",),
)
