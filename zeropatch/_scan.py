"""``zeropatch check PATH``, the static part: reads a whole repository, or a script and the files of its repository
it reaches (``_reach``), without running or importing them, and lists, file:line, the code that will break on the
installed releases and what fixes it.

What it looks for is declared by the patches, next to their error texts (``Patch.looks_for``), one signature each:

- ``import MODULE``: an import of a module a release removed or moved (``import torch._six``, ``from torch._six
  import inf``, ``from torch import _six``), also one of its submodules;
- ``name DOTTED``: a name read off a module (``np.float`` after ``import numpy as np``, ``from numpy import float``);
- ``attribute NAME``: an attribute of any object read or set under a name only the library's objects have
  (``optimizer._param_store``, ``config.rope_scaling = ...``);
- ``call DOTTED [with KEYWORDS | without KEYWORDS]``: a call of a function or class (through the file's imports, and
  the repository's classes derived from it), with or without a keyword (``call transformers.Trainer with
  tokenizer``; ``a|b``: any of them); ``*`` in DOTTED stands for any part (``call transformers.*ForCausalLM.from_pretrained``), and
  ``*.METHOD`` for a method of an object the file's imports do not name (``draw.textsize(...)``, not
  ``os.path.getsize``);
- ``override DOTTED METHOD``: a class derived from ``DOTTED`` defines ``METHOD`` without ``**kwargs`` (the library now
  passes it arguments it does not take);
- ``define DOTTED METHOD [with|without NAMES]``: a class derived from ``DOTTED`` defines ``METHOD``, whose parameters
  and body do (or do not) name one of ``NAMES`` (``define transformers.PreTrainedModel __init__ without post_init``);
- ``option --NAME``: a command-line option in a launch file (``.sh``, ``.md``, ``.yaml``, ...), either spelling
  (``--warmup_ratio``, ``--warmup-ratio``), or a Python string that is the option (``add_argument("--local_rank")``,
  ``sys.argv += ["--warmup_ratio", "0.03"]``);
- ``key NAME``: a configuration key, in a launch file (``"cpu_offload_params": true``) or a Python dict literal.

Names resolve through each file's own imports (``import numpy as np``, ``from transformers import Trainer``);
what cannot be resolved statically (``getattr``, values passed around) is not seen. Besides the patches' drift it
names what no patch fixes: a top-level import of a module that is not installed here (and not part of the
repository), Python-version removals (``imp``; ``distutils`` without setuptools) and compiled extensions.
"""

import ast
import fnmatch
import os
import re
import sys

from zeropatch._versions import installed_version

KINDS = ("import", "name", "attribute", "call", "override", "define", "option", "key")
LAUNCH_SUFFIXES = (".sh", ".bash", ".zsh", ".slurm", ".md", ".txt", ".yaml", ".yml", ".cfg", ".json")
SKIPPED_FOLDERS = {".git", "__pycache__", "node_modules", ".venv", "venv", ".nox", ".tox", "site-packages",
                   ".eggs", "build", "dist", ".ipynb_checkpoints"}
MAX_FILE_BYTES = 2 << 20  # a data file named .json / .txt is not a launch file worth reading
IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
PYTHON_REMOVALS = ("imp", "distutils")  # standard modules that Python 3.12 removed
CUDA_BUILDS = {"apex", "flash_attn", "xformers", "pytorch3d",
               "tinycudann", "nvdiffrast", "causal_conv1d", "mamba_ssm"}


class Signature:
    """One parsed ``looks_for`` entry."""

    __slots__ = ("kind", "target", "method", "keyword", "present", "text")

    def __init__(self, text):
        words = text.split()
        self.text = text
        self.keyword = None
        self.present = True
        if not words or words[0] not in KINDS or len(words) < 2:
            raise ValueError(f"looks_for entry {text!r}: it starts with one of {', '.join(KINDS)}, then what to find")
        self.kind, self.target = words[0], words[1]
        rest = words[2:]
        self.method = None
        if self.kind == "define" and (len(rest) == 1 or len(rest) == 3 and rest[1] in ("with", "without")):
            self.method, rest = rest[0], rest[1:]
        if self.kind in ("call", "define") and rest[:1] in (["with"], ["without"]) and len(rest) == 2:
            self.present, self.keyword = rest[0] == "with", frozenset(rest[1].split("|"))
        elif self.kind == "override" and len(rest) == 1:
            self.method = rest[0]
        elif rest or self.kind == "override" or (self.kind == "define" and self.method is None) or (self.kind == "option") != self.target.startswith("--"):
            raise ValueError(f"looks_for entry {text!r}: valid forms are 'import MODULE', 'name DOTTED', 'attribute "
                             f"NAME', 'call DOTTED [with|without KEYWORDS]', 'override DOTTED METHOD', 'define DOTTED "
                             f"METHOD [with|without NAMES]', 'option --NAME', 'key NAME'")


class Finding:
    """Code that will break: where, the line, and why (a patch, or what no patch fixes)."""

    __slots__ = ("path", "line", "code", "patch", "signature", "advice")

    def __init__(self, path, line, code, patch=None, signature=None, advice=None):
        self.path, self.line, self.code = path, line, code
        self.patch, self.signature, self.advice = patch, signature, advice

    def __repr__(self):
        return f"Finding({self.path}:{self.line}, {self.patch or self.advice!r})"


def signatures(patches):
    """(kind -> [(Signature, patch)]) for the patches that declare what to look for."""
    table = {kind: [] for kind in KINDS}
    for patch in patches:
        for text in patch.looks_for:
            signature = Signature(text)
            table[signature.kind].append((signature, patch))
    return table


class _FileReader(ast.NodeVisitor):
    """One Python file: its imports (local name -> dotted name), then every node matched against the signatures."""

    def __init__(self, path, tree, lines, table, options, local_modules):
        self.path, self.tree, self.lines, self.table, self.options = path, tree, lines, table, options
        self.local_modules = local_modules
        self.aliases = {}
        self.derived = {}  # a class of this file (later: of the repository) -> the library classes it derives from
        self.optional = set()  # import nodes inside a try that handles ImportError
        self.findings = []
        self.missing = []  # (node, top-level module): maybe installed nowhere (scan() asks)
        self.imports = []  # (node, absolute module name), every import of the file

    def prepare(self):
        """The file's imports and the library classes its classes derive from (before ``find``)."""
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Try) and handles_import_errors(node):
                self.optional.update(id(inner) for statement in node.body for inner in ast.walk(statement))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.aliases[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        self.aliases[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    if alias.name != "*":
                        self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        self._derive_classes()

    def find(self, repository_classes):
        """Every match of the signatures; ``repository_classes``: class name -> library bases, over the repository."""
        self.derived = {**repository_classes, **self.derived}
        self.visit(self.tree)
        return self.findings

    def _derive_classes(self):
        classes = [node for node in ast.walk(self.tree) if isinstance(node, ast.ClassDef)]
        changed = True
        while changed:  # a class derived from a class of this file derived from a library's
            changed = False
            for node in classes:
                bases = set()
                for base in node.bases:
                    bases |= self.derived.get(getattr(base, "id", None), set()) | {self.resolve(base)} - {None}
                if bases != self.derived.get(node.name, set()):
                    self.derived[node.name] = bases
                    changed = True

    def resolve(self, node):
        """The dotted name an expression stands for through this file's imports, or None."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def _found(self, node, signature, patch):
        code = self.lines[node.lineno - 1].strip() if node.lineno <= len(self.lines) else ""
        self.findings.append(Finding(self.path, node.lineno, code, patch.name, signature.text))

    def _check_module(self, node, module):
        optional = id(node) in self.optional
        for signature, patch in self.table["import"]:
            if (module == signature.target or module.startswith(signature.target + ".")) and not (
                    optional and patch.provides):
                self._found(node, signature, patch)
                return True
        return False

    def visit_Import(self, node):
        for alias in node.names:
            self.imports.append((node, alias.name))
            if not self._check_module(node, alias.name):
                self._note_missing(node, alias.name)

    def visit_ImportFrom(self, node):
        if node.level or not node.module:
            return
        self.imports.append((node, node.module))
        if self._check_module(node, node.module):
            return
        for alias in node.names:
            dotted = f"{node.module}.{alias.name}"
            if self._check_module(node, dotted):
                return
            for signature, patch in self.table["name"]:
                if dotted == signature.target:
                    self._found(node, signature, patch)
        self._note_missing(node, node.module)

    def _note_missing(self, node, module):
        top = module.split(".")[0]
        if id(node) not in self.optional and self.local_modules is not None and top not in self.local_modules:
            self.missing.append((node, top))

    def visit_Attribute(self, node):
        if isinstance(node.ctx, ast.Load):
            dotted = self.resolve(node)
            for signature, patch in self.table["name"]:
                if dotted == signature.target:
                    self._found(node, signature, patch)
        for signature, patch in self.table["attribute"]:
            if node.attr == signature.target:
                self._found(node, signature, patch)
        self.generic_visit(node)

    def _class_bases(self, node):
        """The library classes a class expression of this file or the repository derives from."""
        name = node.id if isinstance(node, ast.Name) else (self.resolve(node) or "").rpartition(".")[2]
        return self.derived.get(name, set())

    def visit_Call(self, node):
        called = self.resolve(node.func)
        names = {called} if called else set()
        if isinstance(node.func, (ast.Name, ast.Attribute)):
            names |= self._class_bases(node.func)
        if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, (ast.Name, ast.Attribute)):
            names |= {f"{base}.{node.func.attr}" for base in self._class_bases(node.func.value)}
        keywords = {keyword.arg for keyword in node.keywords}  # any keyword named breaks where it was removed;
        valued = {keyword.arg for keyword in node.keywords if not _maybe_none(keyword.value)}  # None is not a value
        method = node.func.attr if isinstance(node.func, ast.Attribute) and called is None else None
        found = set()
        for signature, patch in self.table["call"]:
            if patch.name in found:
                continue
            if signature.target.startswith("*."):
                if signature.target[2:] != method:
                    continue
            elif not any(fnmatch.fnmatchcase(name, signature.target) for name in names):
                continue
            if signature.keyword is None or (bool(signature.keyword & keywords) if signature.present
                                             else not signature.keyword & valued):
                self._found(node, signature, patch)
                found.add(patch.name)
        self.generic_visit(node)

    def visit_Constant(self, node):
        if isinstance(node.value, str) and node.value.startswith("--"):
            option = node.value.split("=", 1)[0]
            for pattern, signature, patch in self.options:
                if signature.kind == "option" and pattern.fullmatch(option):
                    self._found(node, signature, patch)

    def visit_Assert(self, node):
        """``assert timm.__version__ == "0.3.2"`` (MAE): a release demanded at run time, which no patch meets (zeropatch
        never reports a version it does not have)."""
        test = node.test
        if (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
                and isinstance(test.left, ast.Attribute) and test.left.attr == "__version__"
                and isinstance(test.comparators[0], ast.Constant) and isinstance(test.comparators[0].value, str)):
            module = self.resolve(test.left.value)
            wanted, installed = test.comparators[0].value, module and installed_version(module.split(".")[0])
            if installed and installed != wanted:
                self.findings.append(Finding(
                    self.path, node.lineno, self.lines[node.lineno - 1].strip(),
                    advice=f"asserts {module} {wanted}, {installed} is installed: the script stops here, and no patch "
                           f"changes a version; run it with python -O (asserts skipped) or delete the line"))
        self.generic_visit(node)

    def visit_Dict(self, node):
        for key in node.keys:
            for signature, patch in self.table["key"]:
                if isinstance(key, ast.Constant) and key.value == signature.target:
                    self._found(key, signature, patch)
        self.generic_visit(node)

    def visit_ClassDef(self, node):
        bases = self.derived.get(node.name, set())
        methods = {item.name: item for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))}
        for signature, patch in self.table["override"]:
            method = methods.get(signature.method)
            if signature.target in bases and method is not None and method.args.kwarg is None:
                self._found(method, signature, patch)
        for signature, patch in self.table["define"]:
            method = methods.get(signature.method)
            if signature.target in bases and method is not None:
                named = {getattr(inner, "attr", None) or getattr(inner, "id", None) or getattr(inner, "arg", None)
                         for inner in ast.walk(method)}
                if signature.keyword is None or bool(signature.keyword & named) == signature.present:
                    self._found(method, signature, patch)
        self.generic_visit(node)


def _maybe_none(value):
    """``None``, or ``x if c else None``: a keyword given so may as well not be given (``torch_dtype=(torch.bfloat16
    if bf16 else None)``)."""
    if isinstance(value, ast.IfExp):
        return _maybe_none(value.body) or _maybe_none(value.orelse)
    return isinstance(value, ast.Constant) and value.value is None


def handles_import_errors(node):
    """Whether a ``try`` statement handles a failed import (its imports are optional)."""
    for handler in node.handlers:
        if handler.type is None:
            return True
        names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        if any(isinstance(name, ast.Name) and name.id in IMPORT_ERRORS for name in names):
            return True
    return False


def _files(root):
    if os.path.isfile(root):
        yield root
        return
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = sorted(name for name in subfolders if name not in SKIPPED_FOLDERS and not name.startswith("."))
        for name in sorted(names):
            yield os.path.join(folder, name)


def _local_modules(root, files):
    """Top-level names a repository's own files provide (``ldm`` for ``ldm/models/...``, ``utils`` for ``utils.py``):
    its imports of them are not missing installs, wherever the scripts put the repository on ``sys.path``."""
    names = set()
    for path in files:
        if path.endswith(".py"):
            parts = os.path.relpath(path, root).split(os.sep)  # the repository's own folders, not those above it
            names.add(parts[-1][:-3])
            names.update(part for part in parts[:-1] if part.isidentifier())
    return names


def _text_pattern(signature):
    """An option in either spelling, or a key as JSON / YAML write it."""
    if signature.kind == "key":
        return re.compile(r"(?<![\w-])[\"']?" + re.escape(signature.target) + r"[\"']?\s*:")
    body = re.escape(signature.target[2:]).replace("_", "[-_]")
    return re.compile(r"(?<![\w-])--" + body + r"(?![\w-])")


class Scan:
    """The result: the findings (a patch's drift, or what no patch fixes), the files read and those unreadable."""

    def __init__(self):
        self.findings = []
        self.python_files = 0
        self.launch_files = 0
        self.unreadable = []


def scan(root, patches, python=None, arguments=()):
    """Scan a folder, or a script and the files of its repository it reaches (``_reach``; ``arguments``: the
    script's, whose configuration files count), for the drift ``patches`` declare and for what no patch fixes.
    ``python``: the interpreter release the job will run on (default: this one)."""
    import importlib.util

    from zeropatch._reach import reached_files

    python = python or sys.version_info[:2]
    table = signatures(patches)
    provided = {signature.target.split(".")[0] for signature, patch in table["import"] if patch.provides}
    options = [(_text_pattern(signature), signature, patch) for signature, patch in table["option"] + table["key"]]
    folder = os.path.isdir(root)
    files = list(_files(root)) if folder else reached_files(root, arguments)
    base = root if folder else os.path.dirname(os.path.abspath(root))
    local = _local_modules(root, files) if folder else None  # a script's imports: the dry run tries them
    result = Scan()
    missing = {}
    readers = []
    for path in files:
        shown = os.path.relpath(path, base)
        shown = path if shown.startswith(os.pardir) else shown  # a configuration file from elsewhere
        try:
            if os.path.getsize(path) > MAX_FILE_BYTES:
                continue
            if path.endswith(".py"):
                with open(path, encoding="utf-8", errors="replace") as file:
                    source = file.read()
                tree = ast.parse(source, path)
            elif path.endswith(LAUNCH_SUFFIXES) and options:
                with open(path, encoding="utf-8", errors="replace") as file:
                    source = file.read()
                tree = None
            else:
                if path.endswith(".cu"):
                    result.findings.append(Finding(shown, 1, "", advice="CUDA source: built with nvcc for a GPU; no "
                                                                        "patch runs it on this machine"))
                continue
        except (OSError, SyntaxError, ValueError) as error:
            result.unreadable.append(f"{shown}: {type(error).__name__}: {error}")
            continue
        lines = source.splitlines()
        if tree is None:
            result.launch_files += 1
            for number, line in enumerate(lines, 1):
                for pattern, signature, patch in options:
                    if pattern.search(line):
                        result.findings.append(Finding(shown, number, line.strip(), patch.name, signature.text))
            continue
        result.python_files += 1
        reader = _FileReader(shown, tree, lines, table, options, local)
        reader.prepare()
        readers.append(reader)
    repository_classes = {}
    for reader in readers:
        for name, bases in reader.derived.items():
            repository_classes.setdefault(name, set()).update(bases)
    for reader in readers:
        result.findings += reader.find(repository_classes)
        for node, top in reader.missing:
            missing.setdefault(top, []).append((reader.path, node))
        result.findings += _python_removals(reader.path, reader.imports, reader.lines, python)
    for top, places in sorted(missing.items()):
        if (top in sys.stdlib_module_names or top in PYTHON_REMOVALS or top in provided
                or importlib.util.find_spec(top) is not None):
            continue  # (what Python removed is named for the job's release by _python_removals)
        where, node = places[0]
        kind = "needs a CUDA build; " if top in CUDA_BUILDS else ""
        more = f" (and {len(places) - 1} more imports)" if len(places) > 1 else ""
        result.findings.append(Finding(where, node.lineno, ast.unparse(node),
                                       advice=f"{top} is not installed here{more}: {kind}install it, or no patch helps"))
    return result


def _python_removals(shown, imports, lines, python):
    """Modules the job's Python release removed (3.12: ``imp``, ``distutils`` unless setuptools stands in), and
    compiled extensions built at run time."""
    import importlib.util

    found = []
    for node, module in imports:
        top = module.split(".")[0]
        advice = None
        if python >= (3, 12) and top == "imp":
            advice = "imp was removed in Python 3.12: use importlib"
        elif python >= (3, 12) and top == "distutils" and importlib.util.find_spec("setuptools") is None:
            advice = "distutils was removed in Python 3.12: install setuptools (it provides distutils) or use sysconfig"
        elif module == "torch.utils.cpp_extension":
            advice = ("a compiled extension: it must be built for the installed torch (a compiler; nvcc for CUDA "
                      "sources); no runtime patch")
        if advice:
            found.append(Finding(shown, node.lineno, lines[node.lineno - 1].strip(), advice=advice))
    return found
