"""Patches for drift in transformers releases: one module per patch, named as the patch."""
