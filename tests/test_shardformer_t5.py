"""shardformer_t5 on the real ColossalAI shardformer and transformers (5.x in one session; 4.51 under ColossalAI
0.4.0, whose replacements lack ``cache_position``, in the other): ColossalAI's own T5 policy, jit-fused layers with
and without flash attention, gives the unsharded model's logits, generations (decoder with a cache,
cross-attention) and gradients."""

import pytest

from conftest import assert_ok, requires, run_python

pytestmark = requires("torch", "colossalai", "transformers")


@pytest.mark.parametrize("jit_fused, flash", [(True, True), (True, False), (False, True)],
                         ids=["jit+flash", "jit", "flash"])
def test_colossalai_t5_policy_matches_the_unsharded_model(jit_fused, flash):
    assert_ok(run_python(f'''
import copy, torch, colossalai, zeropatch
from colossalai.shardformer import ShardConfig, ShardFormer
from transformers import T5Config, T5ForConditionalGeneration
colossalai.launch(rank=0, world_size=1, host="127.0.0.1", port=0)
torch.manual_seed(0)
config = T5Config(vocab_size=64, d_model=16, d_kv=4, d_ff=32, num_layers=2, num_decoder_layers=2, num_heads=4,
                  dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
model = T5ForConditionalGeneration(config)
tokens, labels = torch.randint(2, 64, (2, 7)), torch.randint(2, 64, (2, 5))
sharded, _ = ShardFormer(shard_config=ShardConfig(enable_tensor_parallelism=False, enable_fused_normalization=False,
                                                  enable_flash_attention={flash!r}, enable_jit_fused={jit_fused!r})
                         ).optimize(copy.deepcopy(model))
for one in (model, sharded):
    one.train()
    one(input_ids=tokens, labels=labels).loss.backward()
for (name, parameter), other in zip(model.named_parameters(), sharded.parameters()):
    torch.testing.assert_close(other.grad, parameter.grad, rtol=1e-6, atol=1e-7, msg=name)
model.eval(), sharded.eval()
with torch.no_grad():
    assert torch.equal(sharded(input_ids=tokens, labels=labels).logits, model(input_ids=tokens, labels=labels).logits)
    assert torch.equal(sharded.generate(input_ids=tokens, max_new_tokens=6, do_sample=False),
                       model.generate(input_ids=tokens, max_new_tokens=6, do_sample=False))
assert zeropatch.status("shardformer_t5")[0].state in ("applied", "not-needed")  # the results above are the test
torch.distributed.destroy_process_group()
print("ok")
'''))
