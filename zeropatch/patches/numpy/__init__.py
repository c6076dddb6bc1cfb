"""Patches for drift in numpy releases: one module per patch, named as the patch."""
