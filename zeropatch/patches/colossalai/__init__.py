"""Patches for drift in colossalai releases: one module per patch, named as the patch."""
