"""Patches for diffusers: one module per patch, named as the patch."""
