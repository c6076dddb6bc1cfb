"""Patches for omegaconf: one module per patch, named as the patch."""
