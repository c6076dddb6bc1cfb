"""Activation at interpreter start-up (the .pth hook and the bootstrap sitecustomize import this).

Only reached when ZEROPATCH is set. Whatever goes wrong, the interpreter starts: one line on stderr,
never a traceback (unless ZEROPATCH_STRICT=1 asks for failures to raise).
"""

import sys

try:
    import zeropatch  # noqa: F401  (importing activates the configured patches)
except Exception as error:
    try:
        from zeropatch._core import strict

        loud = strict()
    except Exception:  # the package itself is broken: report it, the interpreter still starts
        loud = False
    if loud:
        raise
    print(f"zeropatch: not activated at start-up: {type(error).__name__}: {error}", file=sys.stderr)
