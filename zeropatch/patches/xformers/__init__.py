"""Patches for xformers: one module per patch, named as the patch."""
