"""Patches for huggingface_hub: one module per patch, named as the patch."""
