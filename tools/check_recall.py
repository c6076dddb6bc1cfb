"""The recall of ``zeropatch check PATH`` on the real repositories the README names: for each, the patches its real
runs needed (README, "Legacy repos on today's stack") against the patches a static read of its source names
beforehand. Prints the README's table.

  python tools/check_recall.py FOLDER

FOLDER holds one checkout per repository, named as below (the commits the runs used; the text files suffice). Not a
test: the checkouts are fetched, not installed by the project. Run it with the stack the findings are judged
against (the `today` test session's interpreter) for the "breaks here" column to mean today's releases.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# checkout folder -> (repository and commit, the patches its runs needed, per the README)
RUNS = {
    "DiT": ("facebookresearch/DiT ed81ce2", {"torch_load"}),
    "Open-Sora-v1.2.0": ("hpcaitech/Open-Sora v1.2.0", {
        "torchvision_video", "pandas_groupby_names", "colossalai_kwargs", "param_store", "hf_post_init",
        "shardformer_t5", "torch_load", "hf_frozen_params", "gloo_exit", "colossalai_cpu", "t5_apex_norm"}),
    "PixArt-alpha": ("PixArt-alpha/PixArt-alpha cac2fd3", {"accelerate_kwargs", "mmcv_yapf", "xformers_fallback"}),
    "Latte": ("Vchitect/Latte b27c24a", {"diffusers_legacy_names", "diffusers_gradient_checkpointing", "hf_hub_legacy"}),
    "stanford_alpaca": ("tatsu-lab/stanford_alpaca 761dc5b", {
        "openai_object", "hf_training_args", "hf_trainer_tokenizer", "hf_checkpoint_dtype", "cpu_rehearsal"}),
    "FastChat": ("lm-sys/FastChat v0.2.30", {"hf_training_args", "hf_rope_scaling", "hf_trainer_tokenizer",
                                             "hf_checkpoint_dtype", "cpu_rehearsal", "hf_fsdp_version"}),
    "LLaVA": ("haotian-liu/LLaVA v1.2.2", {"hf_trainer_names", "hf_training_args", "hf_trainer_tokenizer",
                                           "hf_trainer_overrides", "hf_checkpoint_dtype", "ds_module_cast",
                                           "hf_generate_cache_name", "cpu_rehearsal", "hf_flash_attention_2"}),
    "latent-diffusion": ("CompVis/latent-diffusion a506df5 (main.py: LDM, its autoencoder; data code)", {
        "pillow_aliases", "pl_moved_names", "pl_trainer_args", "pl_legacy_hooks", "pl_multiple_optimizers", "cpu_rehearsal"}),
    "taming-transformers": ("CompVis/taming-transformers 3ba01b2 (main.py: VQGAN; data code)", {
        "torch_six", "yaml_load", "pl_trainer_args", "omegaconf_legacy_api", "pl_moved_names", "pl_multiple_optimizers",
        "pl_legacy_hooks", "cpu_rehearsal"}),
    "alpaca-lora": ("tloen/alpaca-lora 8bb8579", {"peft_int8_training", "hf_load_in_8bit", "hf_training_args",
                                                  "peft_adapter_bin"}),
    "run_glue": ("huggingface/transformers 0055f834 examples/pytorch/text-classification/run_glue.py", {
        "datasets_load_metric", "datasets_use_auth_token"}),
    "stable-diffusion": ("CompVis/stable-diffusion 21f890f (main.py)", {
        "pl_moved_names", "pl_trainer_args", "pkg_resources", "pl_legacy_hooks", "cpu_rehearsal"}),
    "ControlNet": ("lllyasviel/ControlNet ed85cd1 (tutorial_train.py, tool_add_control.py)", {
        "pl_moved_names", "pl_trainer_args", "pl_legacy_hooks", "xformers_fallback", "cpu_rehearsal"}),
    "mae": ("facebookresearch/mae efb2a80 (pre-training, fine-tuning, linear probing)", {
        "torch_six", "timm_legacy_api", "numpy_aliases", "torch_load", "torchvision_get_image_size", "cpu_rehearsal"}),
    "InternVL": ("OpenGVLab/InternVL 2410d1d (its vendored Phi-3 and InternLM2: decoding, generate)", {
        "hf_cache_legacy_api", "hf_attn_mask_utils", "hf_rope_scaling", "hf_generation_mixin", "hf_generate_position_ids",
        "hf_generate_tuple_cache", "hf_generate_cache_name"}),
    "demucs": ("facebookresearch/demucs e976d93 (training, export, separation)", {"torchaudio_backends"}),
    "deit": ("facebookresearch/deit 7e160fe (main.py: training, resume)",
             {"timm_legacy_api", "cpu_rehearsal", "torch_load"}),
}


def main(folder):
    sys.path.insert(0, ROOT)
    from zeropatch import _core
    from zeropatch.check.findings import scan

    patches = [entry.patch for entry in _core._registry().values()]
    rows = ["| repository | its runs needed | named by `zeropatch check` beforehand | missed |", "| --- | --- | --- | --- |"]
    needed_total = named_total = 0
    for name, (repository, needed) in RUNS.items():
        path = os.path.join(folder, name)
        if not os.path.isdir(path):
            rows.append(f"| {repository} | not checked out in {folder} | | |")
            continue
        named = {finding.patch for finding in scan(path, patches).findings if finding.patch}
        missed = sorted(needed - named)
        needed_total += len(needed)
        named_total += len(needed & named)
        rows.append(f"| {repository} | {len(needed)} | {len(needed & named)} | {', '.join(missed) or '—'} |")
    rows.append(f"| **all** | **{needed_total}** | **{named_total}** | |")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
