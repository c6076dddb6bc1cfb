"""Patches for drift in bitsandbytes releases: one module per patch, named as the patch."""
