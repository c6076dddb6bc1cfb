"""Patches for drift in torchvision releases: one module per patch, named as the patch."""
