"""Patches for drift in torchaudio releases: one module per patch, named as the patch."""
