"""A repository's LLaMA flash-attention monkey-patch (unmodified, imported from the repo) on a tiny LLaMA of
transformers 4.31 (LLaVA 1.1's pin), on the CPU: with and without a right-padded mask, the logits equal the model's
own eager attention on every real token, and gradients flow.

Run (the patch calls torch.cuda.get_device_capability, hence the rehearsal):
  zeropatch run --cpu --patches all,flash_attn_sdpa -- python llama_monkey_patches.py LLaVA-v1.1.3/ \
      llava.train.llama_flash_attn_monkey_patch          # 1.x's flash_attn_unpadded_qkvpacked_func + bert_padding
  ... FastChat-v0.2.30/ fastchat.train.llama_flash_attn_monkey_patch   # 2.x's varlen form + bert_padding
"""
import sys

import torch

repo, module = sys.argv[1], sys.argv[2]
sys.path.insert(0, repo)
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

torch.manual_seed(0)
config = LlamaConfig(vocab_size=64, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                     num_attention_heads=4, max_position_embeddings=64)
model = LlamaForCausalLM(config)
ids = torch.randint(0, 64, (3, 10))
mask = torch.ones(3, 10, dtype=torch.long)
mask[1, 6:] = 0
mask[2, 8:] = 0
expected = {"padded": model(input_ids=ids, attention_mask=mask).logits.detach(),
            "no mask": model(input_ids=ids).logits.detach()}
patch = __import__(module, fromlist=["replace_llama_attn_with_flash_attn"])
patch.replace_llama_attn_with_flash_attn()
for case, given in (("padded", mask), ("no mask", None)):
    model.zero_grad()
    logits = model(input_ids=ids, attention_mask=given).logits
    valid = mask.bool() if given is not None else torch.ones_like(mask, dtype=torch.bool)
    torch.testing.assert_close(logits[valid], expected[case][valid], rtol=1e-4, atol=1e-4)
    logits[valid].square().mean().backward()
    assert all(p.grad.abs().sum() > 0 for p in model.model.layers[0].self_attn.parameters()), case
print(f"{module}: logits equal eager attention's on every real token (padded batch and no mask); gradients flow")
