"""The first step of ``zeropatch check``: the files to read. A folder's files, or the files of its own repository that
a script reaches: the modules beside it that it imports, theirs in turn, and the modules that dotted paths name in their
strings and in the configuration files the script is given or names (latent-diffusion's ``main.py --base
configs/x.yaml``, whose ``target: ldm.models.diffusion.ddpm.LatentDiffusion`` is how its model is built; ControlNet's
``create_model('./models/cldm_v15.yaml')``). Modules resolve from the script's folder, which ``python script.py`` puts
first on ``sys.path``. And the top-level names the repository's own files provide. Read statically: nothing is imported
or run.
"""

import ast
import os
import re

CONFIG_SUFFIXES = (".yaml", ".yml", ".json")
DOTTED = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b")
MAX_CONFIG_BYTES = 1 << 20
LAUNCH_SUFFIXES = (".sh", ".bash", ".zsh", ".slurm", ".md", ".txt", ".yaml", ".yml", ".cfg", ".json")
SKIPPED_FOLDERS = {".git", "__pycache__", "node_modules", ".venv", "venv", ".nox", ".tox", "site-packages",
                   ".eggs", "build", "dist", ".ipynb_checkpoints"}
MAX_FILE_BYTES = 2 << 20  # a data file named .json / .txt is not a launch file worth reading


def repository_files(root):
    """A folder's files (not those of version control, environments and builds), in name order; a file itself."""
    if os.path.isfile(root):
        yield root
        return
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = sorted(name for name in subfolders if name not in SKIPPED_FOLDERS and not name.startswith("."))
        for name in sorted(names):
            yield os.path.join(folder, name)


def local_modules(root, files):
    """Top-level names a repository's own files provide (``ldm`` for ``ldm/models/...``, ``utils`` for ``utils.py``):
    its imports of them are not missing installs, wherever the scripts put the repository on ``sys.path``."""
    names = set()
    for path in files:
        if path.endswith(".py"):
            parts = os.path.relpath(path, root).split(os.sep)  # the repository's own folders, not those above it
            names.add(parts[-1][:-3])
            names.update(part for part in parts[:-1] if part.isidentifier())
    return names


def root_modules(base, files):
    """Top-level names of the modules and packages at the repository's root (or the script's folder), which Python
    finds first when it runs a script there: DETR's and DDIM's ``datasets`` is their own package, not the library."""
    names = set()
    for path in files:
        parts = os.path.relpath(path, base).split(os.sep)
        if path.endswith(".py") and parts[0] != os.pardir:
            name = parts[0][:-3] if len(parts) == 1 else parts[0]
            names.update([name] if name.isidentifier() else [])
    return names


ENTRY_NAMES = re.compile(r"(train|main|run|finetune|fine_tune|pretrain)\w*\.py")  # a repository's usual entry points
_LAUNCHED = re.compile(r"(?:^|[\s;&|(=])(?:-m\s+(?P<module>[A-Za-z_][\w.]*)|(?P<script>[\w./-]+\.py))(?=$|[\s;&|)'\"])")
_CONSOLE_SCRIPT = re.compile(r"[\w.-]+\s*=\s*(?P<module>[A-Za-z_][\w.]*):[A-Za-z_]\w*")
_SETUP_FILES = ("setup.py", "setup.cfg", "pyproject.toml")


def code_lines(path, lines):
    """(number, line) of a launch file's lines that are commands or configuration: in a Markdown file only its code
    (fenced blocks, indented blocks); the prose around them is documentation, not a launch."""
    if not path.endswith(".md"):
        yield from enumerate(lines, 1)
        return
    fence = None
    for number, line in enumerate(lines, 1):
        stripped = line.lstrip()
        marker = stripped[:3]
        if marker in ("```", "~~~"):
            fence = None if fence == marker else fence or marker
        elif fence or line.startswith(("    ", "\t")):
            yield number, line


def entry_points(root):
    """The entry points of a repository: the scripts and modules its README's and root's launch commands run
    (``python train.py``, ``torchrun ... main.py``, ``python -m pkg.train``), its console scripts (setup.py,
    setup.cfg, pyproject.toml), and its root's ``train*.py`` / ``main*.py`` / ``run*.py``; existing files, each
    once, with what named it."""
    found = {}
    launchers = [name for name in sorted(os.listdir(root)) if name.lower().startswith("readme") and name.endswith(
        ".md") or name.endswith((".sh", ".bash", ".slurm"))]
    for folder in ("scripts", "script", "tools"):
        if os.path.isdir(os.path.join(root, folder)):
            launchers += [os.path.join(folder, name) for name in sorted(os.listdir(os.path.join(root, folder)))
                          if name.endswith((".sh", ".bash", ".slurm"))]
    for launcher in launchers:
        text = _read_small(os.path.join(root, launcher))
        for _, line in code_lines(launcher, text.splitlines()):
            for match in _LAUNCHED.finditer(line):
                files = ([os.path.join(root, match["script"])] if match["script"]
                         else module_files(root, match["module"])[-1:])
                for path in files:
                    if os.path.isfile(path):
                        found.setdefault(os.path.abspath(path), launcher)
    for setup in _SETUP_FILES:
        for match in _CONSOLE_SCRIPT.finditer(_read_small(os.path.join(root, setup))):
            for path in module_files(root, match["module"])[-1:]:
                found.setdefault(os.path.abspath(path), f"{setup} (a console script)")
    for name in sorted(os.listdir(root)):
        if ENTRY_NAMES.fullmatch(name) and os.path.isfile(os.path.join(root, name)):
            found.setdefault(os.path.abspath(os.path.join(root, name)), "its name")
    return found


def _read_small(path):
    try:
        if os.path.getsize(path) <= MAX_CONFIG_BYTES:
            with open(path, encoding="utf-8-sig", errors="replace") as file:
                return file.read()
    except OSError:
        pass
    return ""


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
