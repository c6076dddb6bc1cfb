"""Patches for drift in openai releases: one module per patch, named as the patch."""
