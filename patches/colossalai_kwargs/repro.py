"""Open-Sora 1.1-1.3's T5 text encoder with ``shardformer=True`` (every train config), and the launch call of
Open-Sora's tests: ``colossalai.launch({}, rank=..., world_size=..., host=..., port=...)``.

Without zeropatch, on colossalai >= 0.4.5:
  TypeError: ShardConfig.__init__() got an unexpected keyword argument 'enable_sequence_overlap'
(on >= 0.3.8 the launch call fails first: "launch() got multiple values for argument 'rank'").
With `zeropatch run -- python repro.py` the encoder is optimised by ShardFormer and gives the same output.
"""

import torch


def shardformer_t5(model):
    """Open-Sora's T5Encoder.shardformer_t5 (its policy, reduced to the fused feed-forward replacement)."""
    from colossalai.shardformer import ShardConfig, ShardFormer
    from colossalai.shardformer.modeling.jit import get_jit_fused_dropout_add_func
    from colossalai.shardformer.modeling.t5 import get_jit_fused_T5_layer_ff_forward
    from colossalai.shardformer.policies.base_policy import Policy
    from transformers.models.t5.modeling_t5 import T5LayerFF

    class T5EncoderPolicy(Policy):
        def config_sanity_check(self):
            if self.shard_config.enable_tensor_parallelism:
                raise AssertionError("T5EncoderPolicy does not support tensor parallelism")

        def preprocess(self):
            return self.model

        def module_policy(self):
            policy = {}
            self.append_or_create_method_replacement(
                description={"forward": get_jit_fused_T5_layer_ff_forward(), "dropout_add": get_jit_fused_dropout_add_func()},
                policy=policy,
                target_key=T5LayerFF,
            )
            return policy

        def postprocess(self):
            return self.model

    shard_config = ShardConfig(
        tensor_parallel_process_group=None,
        pipeline_stage_manager=None,
        enable_tensor_parallelism=False,
        enable_fused_normalization=False,
        enable_flash_attention=False,
        enable_jit_fused=True,
        enable_sequence_parallelism=False,
        enable_sequence_overlap=False,
    )
    optimized, _ = ShardFormer(shard_config=shard_config).optimize(model, policy=T5EncoderPolicy())
    return optimized


def main():
    import colossalai
    from transformers import T5Config, T5EncoderModel

    colossalai.launch({}, rank=0, world_size=1, host="127.0.0.1", port=0)  # port 0: the store picks a free one
    torch.manual_seed(0)
    encoder = T5EncoderModel(T5Config(vocab_size=64, d_model=16, d_kv=4, d_ff=32, num_layers=2, num_heads=4)).eval()
    tokens = torch.randint(0, 64, (2, 5))
    with torch.no_grad():
        before = encoder(input_ids=tokens).last_hidden_state
        after = shardformer_t5(encoder)(input_ids=tokens).last_hidden_state
    torch.testing.assert_close(after, before)
    print("repro: ShardFormer optimised the T5 encoder built with Open-Sora's ShardConfig; same output")
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
