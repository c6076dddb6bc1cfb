"""The files of its own repository that a script reaches, for ``zeropatch check SCRIPT``: the modules beside it that
it imports, theirs in turn, and the modules that dotted paths name in their strings and in the configuration files
the script is given or names (latent-diffusion's ``main.py --base configs/x.yaml``, whose ``target:
ldm.models.diffusion.ddpm.LatentDiffusion`` is how its model is built; ControlNet's ``create_model(
'./models/cldm_v15.yaml')``). Modules resolve from the script's folder, which ``python script.py`` puts first on
``sys.path``. Read statically: nothing is imported or run.
"""

import ast
import os
import re

CONFIG_SUFFIXES = (".yaml", ".yml", ".json")
DOTTED = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b")
MAX_CONFIG_BYTES = 1 << 20


def module_files(base, dotted):
    """The files importing ``dotted`` runs from ``base``: each package's ``__init__.py`` on the way, then the module
    (empty where its first part is not in ``base``)."""
    files, folder = [], base
    for part in dotted.split("."):
        package = os.path.join(folder, part)
        if os.path.isfile(package + ".py"):
            return files + [package + ".py"]
        if not os.path.isdir(package):
            return files
        if os.path.isfile(os.path.join(package, "__init__.py")):
            files.append(os.path.join(package, "__init__.py"))
        folder = package
    return files


def _imported(tree, path, base):
    """Dotted names of what the file's import statements import (relative ones resolved against its package)."""
    package = os.path.relpath(os.path.dirname(path), base).split(os.sep)
    package = [] if package == ["."] else package
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            parent = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(parent + (node.module.split(".") if node.module else []))
            if module:
                yield module
            yield from (f"{module}.{alias.name}".lstrip(".") for alias in node.names if alias.name != "*")


def _strings(tree):
    return (node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str))


def _config_file(base, text):
    """A configuration file named by ``text`` (relative to the working folder or the script's), if it exists."""
    if not text.endswith(CONFIG_SUFFIXES):
        return None
    for candidate in (text, os.path.join(base, text)):
        if os.path.isfile(candidate) and os.path.getsize(candidate) <= MAX_CONFIG_BYTES:
            return os.path.abspath(candidate)
    return None


def reached_files(script, arguments=()):
    """The script, then every file of its repository it reaches, in the order they were found."""
    base = os.path.dirname(os.path.abspath(script))
    found, queue = [], [os.path.abspath(script)]
    queue += [path for path in (_config_file(base, argument) for argument in arguments) if path]
    while queue:
        path = queue.pop(0)
        if path in found:
            continue
        found.append(path)
        try:
            with open(path, encoding="utf-8-sig", errors="replace") as file:
                text = file.read()
            tree = ast.parse(text, path) if path.endswith(".py") else None
        except (OSError, SyntaxError, ValueError):
            continue  # scan() reports what it cannot read
        if tree is None:
            names = DOTTED.findall(text)
        else:
            strings = list(_strings(tree))
            names = [*_imported(tree, path, base), *(name for string in strings for name in DOTTED.findall(string))]
            queue += [config for config in (_config_file(base, string) for string in strings) if config]
        for name in names:
            queue += [file for file in module_files(base, name) if file not in found]
    return found
