"""Patches for drift in deepspeed releases: one module per patch, named as the patch."""
