"""Patches for drift in datasets releases: one module per patch, named as the patch."""
