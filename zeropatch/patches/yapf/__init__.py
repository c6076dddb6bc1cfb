"""Patches for drift in yapf releases: one module per patch, named as the patch."""
