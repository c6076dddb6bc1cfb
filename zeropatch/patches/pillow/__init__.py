"""Patches for drift in Pillow releases: one module per patch, named as the patch."""
