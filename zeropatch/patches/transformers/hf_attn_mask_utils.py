"""hf_attn_mask_utils: ``transformers.modeling_attn_mask_utils`` (removed in 5.24) imports again, with 4.57's masks.

Breaks: the Hub's remote-code models of 2023-2024 (Phi-3, InternLM2, MiniCPM, DeepSeek, Qwen forks, and the copies
InternVL and LLaVA-style repositories vendor) build their attention masks with ``from transformers.modeling_attn_mask_utils
import _prepare_4d_causal_attention_mask`` (or ``..._for_sdpa``, ``AttentionMaskConverter``). transformers deprecated
the module in 5.0 for ``masking_utils`` and removed it in 5.24.0: "No module named
'transformers.modeling_attn_mask_utils'", at import, before any weight is read.

Changes: where the installed transformers has no such module, zeropatch provides it with the names 4.57 and 5.23 had,
computing what they computed: ``AttentionMaskConverter`` (``to_causal_4d``, ``to_4d``, its static helpers),
``_prepare_4d_causal_attention_mask`` (additive ``[batch, 1, query, past + query]`` masks, a sliding window where
given), ``_prepare_4d_causal_attention_mask_for_sdpa`` (None where SDPA's own ``is_causal`` gives the same attention:
no padding, and one query or no past; on CUDA, fully masked rows unmasked as 4.57 did for SDPA's memory-efficient
kernel), ``_prepare_4d_attention_mask`` (and ``_for_sdpa``) and ``_create_4d_causal_attention_mask``. 5.x's
deprecation warnings are not repeated. The names are listed in the module's ``dir()`` and ``__all__`` and carry its
name, as the library's own did.
"""

from zeropatch._core import NotNeeded, Patch, is_provided

MODULE = "transformers.modeling_attn_mask_utils"


def apply(patcher, module):
    if not is_provided(module):
        raise NotNeeded("transformers still has modeling_attn_mask_utils (transformers < 5.24)")
    from zeropatch.patches.transformers._masks_4x import NAMES

    patcher.fill(module, NAMES, "transformers < 5.24's attention-mask helpers (provided by zeropatch)")
    return f"{MODULE} provided with 4.57's masks ({len(NAMES)} names)"


PATCH = Patch(
    "hf_attn_mask_utils",
    since="0.4.0",
    summary="transformers.modeling_attn_mask_utils (removed in 5.24; the Hub's remote-code models build their masks "
    "with it) provided with 4.57's masks",
    package="transformers",
    affected="5.24.0 (swept; the module went in 5.24)",
    targets=(MODULE,),
    provides=(MODULE,),
    apply=apply,
    errors=(r"No module named 'transformers\.modeling_attn_mask_utils'",),
    looks_for=(f"import {MODULE}",),
)
