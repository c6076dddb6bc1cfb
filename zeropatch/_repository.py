"""The repository a job's code comes from: the folder with ``.git`` at or above the code's folder (else that folder),
as ``zeropatch check`` reads it and as the run decides which code is the job's own (``_legacy``'s script folder)."""

import os
import sys

INSTALLED = ("site-packages", "dist-packages")  # folders whose code is an installed library's, wherever they are


def root_of(folder):
    """The folder with ``.git`` at or above ``folder``, else ``folder`` itself."""
    here = folder = os.path.abspath(folder)
    while not os.path.exists(os.path.join(here, ".git")):
        parent = os.path.dirname(here)
        if parent == here:
            return folder
        here = parent
    return here


def holds(root, path):
    """Whether ``path`` is code of the repository at ``root``: under it, and not in an installed library's folder."""
    path = os.path.abspath(path)
    return path.startswith(root + os.sep) and not any(part in INSTALLED for part in path.split(os.sep))


def job_root():
    """The repository of the running job's code (the script's, or for ``python -c`` / ``-m`` the working folder's)."""
    from zeropatch._legacy import script_folder

    return root_of(script_folder())


def module_file(name):
    """The file of module ``name`` as imported, or as it would be found, without importing anything (a top-level
    name, or one whose parent is imported); None where it is not found that way."""
    import importlib.util

    module = sys.modules.get(name)
    if module is not None:  # a namespace package has no file: its first folder
        return getattr(module, "__file__", None) or next(iter(getattr(module, "__path__", None) or ()), None)
    parent = name.rpartition(".")[0]
    if parent and parent not in sys.modules:
        return None
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    return spec and (spec.origin or next(iter(spec.submodule_search_locations or ()), None))
