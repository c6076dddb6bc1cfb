"""Patches for drift in peft releases: one module per patch, named as the patch."""
