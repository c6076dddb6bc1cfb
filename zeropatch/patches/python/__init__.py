"""Patches for modules CPython releases removed from the standard library: one module per patch, named as the
patch."""
