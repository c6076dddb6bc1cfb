"""Patches for drift in pandas releases: one module per patch, named as the patch."""
