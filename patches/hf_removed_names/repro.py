"""The transformers names 2023 code imports at its first lines: FastChat's train_lora.py (`from transformers import
Trainer, BitsAndBytesConfig, deepspeed`, then `deepspeed.is_deepspeed_zero3_enabled()`) and taming-transformers'
mingpt.py (`from transformers import top_k_top_p_filtering`, its sampling filter), plus TRANSFORMERS_CACHE and the
LLaMA module's mask helpers that 2023 monkey-patches build their attention masks with, modeling_utils'
no_init_weights (models built only to load weights into), and transformers.utils' FLAX_WEIGHTS_NAME (diffusers <=
0.35.1 imports it when a pipeline is first asked for).

Without zeropatch, on transformers >= 4.46:
  ImportError: cannot import name 'deepspeed' from 'transformers'
With `zeropatch run -- python repro.py` the imports work; the filter's logits equal transformers 4.38's algorithm,
written out below in plain torch (top-k, then the nucleus: sorted ascending, cumulative softmax, keep the top_p
mass and the last min_tokens_to_keep), and TRANSFORMERS_CACHE is the hub cache downloads go to.
"""

import sys

import torch
from transformers import BitsAndBytesConfig, Trainer, deepspeed  # noqa: F401  (FastChat's import line)


def as_4_38_filtered(logits, top_k, top_p, min_tokens_to_keep=1):
    logits = logits.clone()
    if top_k > 0:
        k = min(max(top_k, min_tokens_to_keep), logits.size(-1))
        logits[logits < torch.topk(logits, k)[0][..., -1:]] = -float("inf")
    if 0 <= top_p <= 1.0:
        ordered, order = torch.sort(logits, descending=False)
        removed = ordered.softmax(dim=-1).cumsum(dim=-1) <= 1 - top_p
        removed[..., -min_tokens_to_keep:] = False
        logits[removed.scatter(1, order, removed)] = -float("inf")
    return logits


def main():
    from huggingface_hub import constants
    from transformers import TRANSFORMERS_CACHE, top_k_top_p_filtering
    from transformers.modeling_utils import no_init_weights
    from transformers.models.llama.modeling_llama import _expand_mask, _make_causal_mask
    from transformers.utils import FLAX_WEIGHTS_NAME  # diffusers 0.24-0.35.1: pipeline_loading_utils
    from transformers.utils import send_example_telemetry  # every copy of the example scripts calls it first
    from transformers import AutoModelForVision2Seq, LlavaConfig, LlavaForConditionalGeneration  # 2024's VLM tuners

    send_example_telemetry("run_clm", sys.argv)
    if AutoModelForVision2Seq._model_mapping[LlavaConfig] is not LlavaForConditionalGeneration:
        sys.exit("repro: AutoModelForVision2Seq does not build a LLaVA configuration as LlavaForConditionalGeneration")

    state = torch.random.get_rng_state()
    with no_init_weights():  # a model built only to load weights into: nothing is drawn
        torch.nn.Linear(8, 8)
    if not torch.equal(torch.random.get_rng_state(), state):
        sys.exit("repro: no_init_weights() let torch.nn.Linear draw its weights")

    mask = _make_causal_mask(torch.Size((1, 3)), torch.float32, "cpu") + _expand_mask(torch.tensor([[1, 1, 0]]),
                                                                                        torch.float32)
    if not torch.equal(mask[0, 0] == 0, torch.tensor([[True, False, False], [True, True, False], [True, True, False]])):
        sys.exit(f"repro: a causal mask over a padded sequence should keep earlier real tokens only, got {mask}")

    if deepspeed.is_deepspeed_zero3_enabled() is not False:
        sys.exit("repro: transformers.deepspeed.is_deepspeed_zero3_enabled() should be False without a ZeRO-3 config")
    torch.manual_seed(0)
    logits = torch.randn(4, 50)
    for top_k, top_p, keep in ((0, 1.0, 1), (5, 1.0, 1), (0, 0.9, 1), (10, 0.7, 1), (3, 0.0, 2), (60, 0.5, 1)):
        got = top_k_top_p_filtering(logits, top_k=top_k, top_p=top_p, min_tokens_to_keep=keep)
        if not torch.equal(got, as_4_38_filtered(logits, top_k, top_p, keep)):
            sys.exit(f"repro: top_k={top_k} top_p={top_p} keep={keep} filtered differently from 4.38")
    if FLAX_WEIGHTS_NAME != "flax_model.msgpack":
        sys.exit(f"repro: FLAX_WEIGHTS_NAME is {FLAX_WEIGHTS_NAME!r}, not transformers 4.x's 'flax_model.msgpack'")
    if TRANSFORMERS_CACHE != constants.HF_HUB_CACHE:
        sys.exit(f"repro: TRANSFORMERS_CACHE {TRANSFORMERS_CACHE} is not the hub cache {constants.HF_HUB_CACHE}")
    print("repro: FastChat's and taming-transformers' transformers imports work; the filter equals 4.38's; the "
          "LLaMA mask helpers, no_init_weights, FLAX_WEIGHTS_NAME, send_example_telemetry and "
          "AutoModelForVision2Seq are back")


if __name__ == "__main__":
    main()
