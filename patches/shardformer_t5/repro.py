"""Open-Sora 1.1-1.3's T5 text encoder with ``shardformer=True`` (every full config): its T5EncoderPolicy swaps in
ColossalAI's jit-fused T5 feed-forward and self-attention layer forwards, written for transformers 4.x; and
ColossalAI's own policy with flash attention on a T5 encoder-decoder, generating with a cache (its attention
forward reads past keys and values as a tuple; transformers >= 4.4x passes a Cache).

Without zeropatch, on transformers >= 5:
  TypeError: get_T5_layer_self_attention_forward.<locals>.forward() got an unexpected keyword argument
  'past_key_values'
(on transformers 4.4x-4.5x with ColossalAI 0.5: "ValueError: past_key_value should have 2 past states: keys and
values. Got 1 past states"). With `zeropatch run -- python repro.py` the optimised encoder runs and its output equals the unsharded model's.
"""

import torch


def open_sora_t5_policy():
    """The policy of opensora/acceleration/shardformer/policy/t5_encoder.py (without its apex norm swap)."""
    from colossalai.shardformer.modeling.jit import get_jit_fused_dropout_add_func
    from colossalai.shardformer.modeling.t5 import get_jit_fused_T5_layer_ff_forward, get_T5_layer_self_attention_forward
    from colossalai.shardformer.policies.base_policy import Policy
    from transformers.models.t5.modeling_t5 import T5LayerFF, T5LayerSelfAttention

    class T5EncoderPolicy(Policy):
        def config_sanity_check(self):
            if self.shard_config.enable_tensor_parallelism:
                raise AssertionError("T5EncoderPolicy does not support tensor parallelism")

        def preprocess(self):
            return self.model

        def module_policy(self):
            policy = {}
            if self.shard_config.enable_jit_fused:
                self.append_or_create_method_replacement(
                    description={"forward": get_jit_fused_T5_layer_ff_forward(),
                                 "dropout_add": get_jit_fused_dropout_add_func()},
                    policy=policy, target_key=T5LayerFF)
                self.append_or_create_method_replacement(
                    description={"forward": get_T5_layer_self_attention_forward(),
                                 "dropout_add": get_jit_fused_dropout_add_func()},
                    policy=policy, target_key=T5LayerSelfAttention)
            return policy

        def postprocess(self):
            return self.model

    return T5EncoderPolicy()


def main():
    import colossalai
    from colossalai.shardformer import ShardConfig, ShardFormer
    from transformers import T5Config, T5EncoderModel

    colossalai.launch(rank=0, world_size=1, host="127.0.0.1", port=0)  # port 0: the store picks a free one
    torch.manual_seed(0)
    config = T5Config(vocab_size=64, d_model=16, d_kv=4, d_ff=32, num_layers=3, num_heads=4)
    encoder = T5EncoderModel(config).eval()
    tokens = torch.randint(0, 64, (2, 7))
    mask = torch.tensor([[1] * 7, [1] * 4 + [0] * 3])
    with torch.no_grad():
        before = encoder(input_ids=tokens, attention_mask=mask).last_hidden_state
        shard_config = ShardConfig(enable_tensor_parallelism=False, enable_fused_normalization=False,
                                   enable_flash_attention=False, enable_jit_fused=True,
                                   enable_sequence_parallelism=False)
        optimized, _ = ShardFormer(shard_config=shard_config).optimize(encoder, policy=open_sora_t5_policy())
        after = optimized(input_ids=tokens, attention_mask=mask).last_hidden_state
    torch.testing.assert_close(after, before, rtol=0, atol=0)
    from transformers import T5ForConditionalGeneration

    seq2seq = T5ForConditionalGeneration(T5Config(vocab_size=64, d_model=16, d_kv=4, d_ff=32, num_layers=2,
                                                  num_heads=4, decoder_start_token_id=0)).eval()
    labels = torch.randint(0, 64, (2, 4))
    with torch.no_grad():
        expected = seq2seq(input_ids=tokens, labels=labels).logits
        generated = seq2seq.generate(input_ids=tokens, max_new_tokens=4, do_sample=False)
        flash_config = ShardConfig(enable_tensor_parallelism=False, enable_fused_normalization=False,
                                   enable_flash_attention=True, enable_jit_fused=True)
        optimized, _ = ShardFormer(shard_config=flash_config).optimize(seq2seq)  # ColossalAI's own T5 policy
        torch.testing.assert_close(optimized(input_ids=tokens, labels=labels).logits, expected, rtol=0, atol=0)
        if not torch.equal(optimized.generate(input_ids=tokens, max_new_tokens=4, do_sample=False), generated):
            raise SystemExit("repro: the optimised encoder-decoder generated other tokens than the unsharded model")
    print("repro: the shardformer-optimised T5 encoder and encoder-decoder ran; output equal to the unsharded model's")
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
