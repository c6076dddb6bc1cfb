"""Patches for drift in torch releases: one module per patch, named as the patch."""
