"""Patches generated from the API history of the covered libraries (``zeropatch/_api_history``), not written per name:
one module per patch, named as the patch."""
