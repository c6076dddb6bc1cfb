"""transformers_shard_checkpoint: ``transformers.modeling_utils.shard_checkpoint`` is back, on huggingface_hub's
state-dict splitter.

Breaks: transformers 4.47 removed ``shard_checkpoint(state_dict, max_shard_size="10GB",
weights_name="pytorch_model.bin")``, which older diffusers / peft loaders and fine-tuners' own save code call:
"ImportError: cannot import name 'shard_checkpoint' from 'transformers.modeling_utils'".

Changes: where ``transformers.modeling_utils`` has no ``shard_checkpoint``, zeropatch provides one with the old
contract, built on ``huggingface_hub.split_torch_state_dict_into_shards`` (what transformers itself saves with now):
``(shards, index)``, ``shards`` mapping file names to state-dict pieces (the very tensors), ``index`` None for a
single shard, else ``{"metadata": {"total_size": ...}, "weight_map": {key: file}}``; files named as before
(``pytorch_model-00001-of-00003.bin``, ``.safetensors`` alike); tensors that share storage stay in one shard. Which
tensors fall in which shard can differ from the old greedy split; every tensor is kept, and the index says where.
"""

from zeropatch._core import NotNeeded, Patch, Skip


def shard_checkpoint(state_dict, max_shard_size="10GB", weights_name="pytorch_model.bin"):
    """transformers < 4.47's ``shard_checkpoint``: split ``state_dict`` into shards of at most ``max_shard_size``."""
    from huggingface_hub import split_torch_state_dict_into_shards

    tensors = {key: value for key, value in state_dict.items() if not isinstance(value, str)}  # bnb's str entries
    stem, dot, extension = weights_name.rpartition(".")
    split = split_torch_state_dict_into_shards(
        tensors, filename_pattern=f"{stem}{{suffix}}{dot}{extension}" if dot else weights_name + "{suffix}",
        max_shard_size=max_shard_size)
    if not split.is_sharded:
        return {weights_name: tensors}, None
    shards = {file: {key: tensors[key] for key in keys} for file, keys in split.filename_to_tensors.items()}
    return shards, {"metadata": dict(split.metadata), "weight_map": dict(split.tensor_to_filename)}


def apply(patcher, modeling_utils):
    if "shard_checkpoint" in vars(modeling_utils):
        raise NotNeeded("transformers.modeling_utils still has shard_checkpoint (transformers < 4.47)")
    try:
        from huggingface_hub import split_torch_state_dict_into_shards  # noqa: F401
    except ImportError as error:
        raise Skip(f"huggingface_hub has no split_torch_state_dict_into_shards ({error})")
    patcher.put_back(modeling_utils, {"shard_checkpoint": shard_checkpoint})
    return "modeling_utils.shard_checkpoint provided on huggingface_hub.split_torch_state_dict_into_shards"


PATCH = Patch(
    "transformers_shard_checkpoint",
    since="0.3.0",
    summary="transformers.modeling_utils.shard_checkpoint (removed in 4.47) back, on huggingface_hub's splitter",
    package="transformers",
    affected="4.49.0-5.23.0 (swept; removed after 4.46.3, which still has it)",
    targets=("transformers.modeling_utils",),
    apply=apply,
    errors=(r"cannot import name 'shard_checkpoint' from 'transformers\.modeling_utils'",),
    looks_for=("name transformers.modeling_utils.shard_checkpoint",),
)
