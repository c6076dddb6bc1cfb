"""zeropatch's bootstrap sitecustomize, for ``PYTHONPATH=$(zeropatch bootstrap-path)`` activation.

Activates zeropatch when ZEROPATCH is set, then runs the next ``sitecustomize`` on sys.path (the
user's or the distribution's), so that putting this folder first never hides another one.
"""

import os
import sys


def _activate():
    if os.environ.get("ZEROPATCH", "").strip() not in ("", "0"):
        import zeropatch._startup  # noqa: F401


def _chain_to_next_sitecustomize():
    here = os.path.dirname(os.path.abspath(__file__))
    this_module = sys.modules.pop("sitecustomize", None)
    # This folder holds nothing else, so it leaves sys.path for good (children still get PYTHONPATH).
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != here]
    try:
        import sitecustomize  # noqa: F401  (the next one on the path, if any)
    except ModuleNotFoundError as missing:
        if missing.name != "sitecustomize":
            raise
        sys.modules["sitecustomize"] = this_module


_activate()
_chain_to_next_sitecustomize()
