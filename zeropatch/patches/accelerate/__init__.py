"""Patches for drift in accelerate releases: one module per patch, named as the patch."""
