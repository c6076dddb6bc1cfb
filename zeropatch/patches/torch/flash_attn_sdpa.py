"""flash_attn_sdpa (opt-in): ``from flash_attn import flash_attn_func`` works without flash-attn, on torch's SDPA.

Breaks: flash-attn is compiled against one torch release and CUDA; for today's torch pip either builds it from
source (an hour, with a CUDA toolkit) or installs a wheel that dies at import: "ImportError: .../flash_attn_2_cuda...so:
undefined symbol: _ZN3c104cuda9SetDeviceEi"; on a CPU machine it cannot be had at all. Open-Sora 1.x (with
``enable_flash_attn``, on in nearly every config) and OpenDiT call ``flash_attn_func``; OpenDiT / VideoSys call
``flash_attn_varlen_func``; FastChat's and LLaVA's LLaMA monkey-patches (``train_mem.py``) the varlen or 1.x
``unpadded`` forms with ``flash_attn.bert_padding``: "ModuleNotFoundError: No module named 'flash_attn'".

Changes: when the patch is turned on by name and no flash-attn is installed, zeropatch provides ``flash_attn`` and
``flash_attn.flash_attn_interface`` with flash-attn 2's attention functions on ``scaled_dot_product_attention``:
``flash_attn_func``, ``flash_attn_kvpacked_func``, ``flash_attn_qkvpacked_func`` and their ``varlen`` forms
(packed tokens, ``cu_seqlens``), with ``dropout_p``, ``softmax_scale``, ``causal`` (bottom-right aligned, as since
2.1), grouped-query heads (shared, never copied, where SDPA takes them), ``window_size`` (sliding window),
``softcap`` and ``alibi_slopes`` with flash-attn 2's definitions, and gradients; on a CUDA GPU the packed and windowed
forms run on torch's variable-length flash kernel where the installed torch has one. ``return_attn_probs`` and
``block_table`` are refused by name. ``flash_attn.flash_attn_interface`` also holds 1.x's ``flash_attn_unpadded_*``
forms (renamed in 2.0) with 1.x's causal alignment (top left), and ``flash_attn.bert_padding`` holds
``unpad_input`` (four values, as 1.0-2.6), ``pad_input``, ``index_first_axis`` and ``index_put_first_axis``.
Opt-in because a provided package flips ``try: import flash_attn`` checks.
A broken installed flash-attn is not replaced: ``explain`` says to uninstall it first.
"""

from zeropatch._core import NotNeeded, Patch, is_provided

FUNCTIONS = ("flash_attn_func", "flash_attn_kvpacked_func", "flash_attn_qkvpacked_func", "flash_attn_varlen_func",
             "flash_attn_varlen_kvpacked_func", "flash_attn_varlen_qkvpacked_func")
NAMES = {  # provided module -> its names
    "flash_attn": FUNCTIONS,
    "flash_attn.flash_attn_interface": FUNCTIONS + ("flash_attn_unpadded_func", "flash_attn_unpadded_kvpacked_func",
                                                    "flash_attn_unpadded_qkvpacked_func"),
    "flash_attn.bert_padding": ("unpad_input", "pad_input", "index_first_axis", "index_put_first_axis"),
}


def apply(patcher, module):
    if not is_provided(module):
        raise NotNeeded("flash-attn is installed")
    from zeropatch.kernels import flash_attn_api

    patcher.set(module, "__doc__", f"{module.__name__}: flash-attn's functions on torch's scaled_dot_product_attention "
                                   "(provided by zeropatch)")
    if module.__name__ == "flash_attn":
        patcher.set(module, "__path__", [])
    for name in NAMES[module.__name__]:
        patcher.set(module, name, getattr(flash_attn_api, name))
    return f"{module.__name__} provided on scaled_dot_product_attention"


PATCH = Patch(
    "flash_attn_sdpa",
    since="0.3.0",
    summary="opt-in: from flash_attn import flash_attn_func (and the packed / varlen forms) without flash-attn, on "
    "torch's SDPA",
    package="torch",
    affected="2.13.0 (swept; any torch that has no flash-attn build installed)",
    targets=tuple(NAMES),
    provides=True,
    default=False,
    apply=apply,
    errors=(r"No module named 'flash_attn'",),
    unfixable=((r"flash_attn_2_cuda.*undefined symbol",
                "flash-attn was built for another torch: `pip uninstall flash-attn`, then turn on flash_attn_sdpa "
                "(ZEROPATCH=all,flash_attn_sdpa or zeropatch run --patches all,flash_attn_sdpa)"),
               (r"module 'flash_attn.flash_attn_interface' has no attribute 'flash_attn_(gpu|cuda)'",
                "an installed xformers found flash_attn_sdpa's flash_attn and looks for flash-attn's CUDA bindings, which "
                "an SDPA stand-in cannot give: leave flash_attn_sdpa off where xformers is installed (xformers' own "
                "attention falls back to SDPA through xformers_fallback), or install flash-attn")),
    looks_for=("import flash_attn",),
)
