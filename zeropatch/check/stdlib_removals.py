"""The standard-library modules Python removed, with the release that removed each and what stands in for it: what
``zeropatch check`` says of an import of one on the job's Python (``--python``), where the import would otherwise read
as a distribution to install. 3.12 removed ``imp``, ``distutils`` (PEP 632), ``asynchat``, ``asyncore`` and
``smtpd``; 3.13 the rest of PEP 594's "dead batteries" and ``lib2to3``. Most have a copy of their last release on
PyPI (the ``standard-*`` distributions, ``audioop-lts``), which nothing here installs for the user."""

import importlib.util
import re
import sys

# module -> (the Python release that removed it, what to do instead)
REMOVED = {
    "imp": ((3, 12), "use importlib"),
    "distutils": ((3, 12), "install setuptools (it provides distutils) or use sysconfig"),
    "asynchat": ((3, 12), "pip install standard-asynchat (3.11's module), or use asyncio"),
    "asyncore": ((3, 12), "pip install standard-asyncore (3.11's module), or use asyncio"),
    "smtpd": ((3, 12), "pip install standard-smtpd (3.11's module), or use aiosmtpd"),
    "aifc": ((3, 13), "pip install standard-aifc (3.12's module)"),
    "audioop": ((3, 13), "pip install audioop-lts (the same functions, for 3.13 and later)"),
    "cgi": ((3, 13), "pip install standard-cgi (3.12's module); its escape is html.escape, parse_qs urllib.parse's"),
    "cgitb": ((3, 13), "pip install standard-cgitb (3.12's module)"),
    "chunk": ((3, 13), "pip install standard-chunk (3.12's module)"),
    "crypt": ((3, 13), "pip install standard-crypt (3.12's module), or use hashlib"),
    "imghdr": ((3, 13), "pip install standard-imghdr (3.12's module), or ask Pillow: Image.open(path).format"),
    "mailcap": ((3, 13), "pip install standard-mailcap (3.12's module), or use mimetypes"),
    "msilib": ((3, 13), "no copy of it is published: Windows installers are built with other tools"),
    "nis": ((3, 13), "no copy of it is published"),
    "nntplib": ((3, 13), "pip install standard-nntplib (3.12's module)"),
    "ossaudiodev": ((3, 13), "no copy of it is published: use an audio library (sounddevice, PyAudio)"),
    "pipes": ((3, 13), "pip install standard-pipes (3.12's module); its quote is shlex.quote"),
    "sndhdr": ((3, 13), "pip install standard-sndhdr (3.12's module)"),
    "spwd": ((3, 13), "no copy of it is published"),
    "sunau": ((3, 13), "pip install standard-sunau (3.12's module)"),
    "telnetlib": ((3, 13), "pip install standard-telnetlib (3.12's module)"),
    "uu": ((3, 13), "pip install standard-uu (3.12's module), or use base64"),
    "xdrlib": ((3, 13), "pip install standard-xdrlib (3.12's module)"),
    "lib2to3": ((3, 13), "no copy of it is published: yapf >= 0.40 carries its own, black and libcst parse "
                         "without it"),
}
REMOVED_IN = REMOVED["imp"][0]  # the release without the modules python_removed_modules provides


def removed_on(module, python):
    """(the release that removed ``module``'s top-level package, what to do) where the job's Python, ``python``
    (MAJOR, MINOR), lacks it; None where it still has it, or where this interpreter, of a release without it, finds
    a copy installed (``standard-imghdr`` provides ``imghdr``; setuptools, ``distutils``)."""
    top = module.split(".")[0]
    entry = REMOVED.get(top)
    if entry is None or python < entry[0]:
        return None
    if top == "distutils" and importlib.util.find_spec("setuptools") is not None:
        return None  # setuptools provides it (its start-up shim)
    if sys.version_info[:2] >= entry[0] and importlib.util.find_spec(top) is not None:
        return None
    return entry


def removals_for_error(text, python=None):
    """(module, the release that removed it, what to do) for each standard module that an error text (a message or a
    whole traceback) finds missing and the Python release that printed it, ``python`` (default: this one), lacks."""
    python = python or sys.version_info[:2]
    found = []
    for module in dict.fromkeys(re.findall(r"No module named '([\w.]+)'", text)):
        top = module.split(".")[0]
        if top in REMOVED and python >= REMOVED[top][0]:
            found.append((top, *REMOVED[top]))
    return found
