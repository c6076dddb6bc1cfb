"""Patches for drift in PyYAML releases: one module per patch, named as the patch."""
