"""Activation at interpreter start-up (the .pth hook and the bootstrap sitecustomize import this).

Only reached when ZEROPATCH is set. Whatever goes wrong, the interpreter starts: one line on stderr,
never a traceback (unless ZEROPATCH_STRICT=1 asks for failures to raise).
"""

import os
import sys

try:
    import zeropatch  # noqa: F401  (importing activates the configured patches)
except Exception as error:
    if os.environ.get("ZEROPATCH_STRICT", "").strip().lower() not in ("", "0", "false", "no", "off"):
        raise
    print(f"zeropatch: not activated at start-up: {type(error).__name__}: {error}", file=sys.stderr)
