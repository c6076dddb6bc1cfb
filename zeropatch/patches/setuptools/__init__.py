"""Patches for drift in setuptools releases: one module per patch, named as the patch."""
