"""Patches for timm: one module per patch, named as the patch."""
