"""One Python file read for ``zeropatch check``: its imports resolved (local name -> dotted name) and the classes it
derives from libraries' classes, then every node matched against the signatures (``signatures``).
Names resolve through the file's own imports (``import numpy as np``, ``from transformers import Trainer``);
what cannot be resolved statically (``getattr``, values passed around) is not seen.
"""

import ast

from zeropatch.check.branches import taken
from zeropatch.check.signatures import Finding
from zeropatch._versions import installed_version

IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


# modules of a library that import another distribution, which their own does not require: an import of them fails
# where that one is not installed (vits', ViT-pytorch's and PyTorch-YOLOv3's training loggers)
NEEDS_ANOTHER = {"torch.utils.tensorboard": "tensorboard"}

_HANDLERS = {}  # node type -> PythonFileReader's visit_ method for it, or False


class PythonFileReader(ast.NodeVisitor):
    """One Python file: its imports (local name -> dotted name), then every node matched against the signatures."""

    def __init__(self, path, tree, lines, table, options, local_modules):
        self.path, self.tree, self.lines, self.table, self.options = path, tree, lines, table, options
        self.nodes = list(ast.walk(tree))  # every node, walked once (breadth first, as ast.walk goes)
        self.local_modules = local_modules
        self.aliases = {}
        self.derived = {}  # a class of this file (later: of the repository) -> the library classes it derives from
        self.optional = set()  # import nodes inside a try that handles ImportError
        self.findings = []
        self.missing = []  # (node, top-level module, the ``if`` it runs under or None): maybe installed nowhere
        self._conditions = []  # the ``if`` statements being visited whose branch check cannot decide
        self.imports = []  # (node, absolute module name), every import of the file
        self.reads = []  # (node, dotted name), every attribute read off an imported module (``transforms.Scale``)
        self.named = set()  # the dotted names the file names through its imports (for ``option ... of``)
        self.own_options = set()  # the options its own ``add_argument`` calls define, as ``option_key`` writes them
        self.decorated = {}  # a class of this file (later: of the repository) -> {its decorator: it makes it hashable}
        self.taken = {}  # id of an ``if`` -> the branch the installed releases take (True: its body), where told

    def prepare(self):
        """The file's imports and the library classes its classes derive from (before ``find``); then again without
        the branches the installed releases never take (``branches``), whose imports are no breaks."""
        self._read_imports(set())
        skipped = self._branches_not_taken()
        if skipped:
            self.aliases, self.optional, self.own_options = {}, set(), set()
            self._read_imports(skipped)
        self.named.update(self.aliases.values())
        self._derive_classes()
        for node in self.nodes:
            if isinstance(node, ast.ClassDef):
                self.decorated[node.name] = {self.resolve(getattr(decorator, "func", decorator)): _hashable(decorator)
                                             for decorator in node.decorator_list}

    def _branches_not_taken(self):
        """The ids of the nodes under a branch of an ``if`` that the installed releases never take; fills ``taken``.
        A name stands for its value only where the file binds it once, at its top level (never in a function, as a
        parameter, or through ``global``)."""
        bound = {}
        for node in self.nodes:
            names = ([node.id] if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) else
                     [node.arg] if isinstance(node, ast.arg) else node.names if isinstance(node, ast.Global) else [])
            for name in names:
                bound[name] = bound.get(name, 0) + 1
        assigned = {node.targets[0].id: node.value for node in self.tree.body
                    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and bound[node.targets[0].id] == 1}
        skipped = set()
        for node in self.nodes:
            if isinstance(node, ast.If) and id(node) not in skipped:
                branch = taken(node.test, self.resolve, assigned)
                if branch is not None:
                    self.taken[id(node)] = branch
                    skipped.update(id(inner) for statement in (node.orelse if branch else node.body)
                                   for inner in ast.walk(statement))
        return skipped

    def _read_imports(self, skipped):
        for node in self.nodes:
            if id(node) in skipped:
                continue
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
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
                self.own_options.update(option_key(argument.value) for argument in node.args
                                        if isinstance(argument, ast.Constant) and str(argument.value).startswith("--"))

    def visit(self, node):
        """``ast.NodeVisitor.visit``, its method found by the node's type once per type, not by name per node."""
        handler = _HANDLERS.get(type(node))
        if handler is None:
            handler = _HANDLERS[type(node)] = getattr(type(self), f"visit_{type(node).__name__}", None) or False
        if handler:
            handler(self, node)
        else:
            self.generic_visit(node)

    def generic_visit(self, node):
        """``ast.NodeVisitor.generic_visit`` (every child, in field order), without its generators."""
        for field in node._fields:
            value = getattr(node, field, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        self.visit(item)
            elif isinstance(value, ast.AST):
                self.visit(value)

    def find(self, repository_classes, repository_decorated=None):
        """Every match of the signatures; ``repository_classes``: class name -> library bases, over the repository
        (``repository_decorated``: class name -> its decorators, as ``decorated``)."""
        self.derived = {**repository_classes, **self.derived}
        self.decorated = {**(repository_decorated or {}), **self.decorated}
        self.visit(self.tree)
        return self.findings

    def _derive_classes(self):
        classes = [node for node in self.nodes if isinstance(node, ast.ClassDef)]
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

    def _check_names(self, node, dotted, modules_only=False, direct=False):
        """``name`` signatures: ``dotted`` read off a module (``modules_only``: a module imported, which only ``name
        MODULE.* without NAMES`` signatures look at; ``direct``: an attribute read, which they match only where it is
        read off MODULE itself, once a line). Whether one matched."""
        matched = False
        for signature, patch, module in self.table["names"].asked_by(dotted):
            if module is None:
                if not modules_only:
                    self._found(node, signature, patch)
                    matched = True
                continue
            rest = dotted[len(module) + 1:]
            if rest.split(".")[0] not in signature.keyword and not (direct and "." in rest):
                self._found(node, signature, patch)
                matched = True
        return matched

    def visit_Import(self, node):
        for alias in node.names:
            self.imports.append((node, alias.name))
            self._check_names(node, alias.name, modules_only=True)
            if not self._check_module(node, alias.name):
                self._note_missing(node, alias.name)

    def visit_ImportFrom(self, node):
        if node.level or not node.module:
            return
        self.imports.append((node, node.module))
        lacking = self._check_names(node, node.module, modules_only=True)  # a submodule a provided module lacks
        if self._check_module(node, node.module):
            for alias in () if lacking else node.names:  # names imported from a provided module: provided?
                self._check_names(node, f"{node.module}.{alias.name}", modules_only=True)
            return
        for alias in node.names:
            dotted = f"{node.module}.{alias.name}"
            if self._check_module(node, dotted):
                return
            self._check_names(node, dotted)
        self._note_missing(node, node.module)

    def _note_missing(self, node, module):
        top = module.split(".")[0]
        if id(node) not in self.optional and self.local_modules is not None and top not in self.local_modules:
            condition = self._conditions[-1] if self._conditions else None
            self.missing.append((node, top, condition))
            needed = NEEDS_ANOTHER.get(module) or NEEDS_ANOTHER.get(module.rpartition(".")[0])
            if needed:
                self.missing.append((node, needed, condition))

    def visit_If(self, node):
        branch = self.taken.get(id(node))
        if branch is None:
            # a run takes it or not by what check cannot read (an option, the data); ``__main__`` is a script's run
            decided = "__name__" in {getattr(inner, "id", None) for inner in ast.walk(node.test)}
            if not decided:
                self._conditions.append(node)
            self.generic_visit(node)
            if not decided:
                self._conditions.pop()
            return
        self.visit(node.test)
        for statement in node.body if branch else node.orelse:
            self.visit(statement)

    def visit_Attribute(self, node):
        if isinstance(node.ctx, ast.Load):
            dotted = self.resolve(node)
            if dotted:
                self.named.add(dotted)
                self.reads.append((node, dotted))
                self._check_names(node, dotted, direct=True)
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
        given = {keyword.arg: keyword.value for keyword in node.keywords}  # any keyword named breaks where removed;
        valued = {name for name, value in given.items() if not _maybe_none(value)}  # None is not a value
        method = node.func.attr if isinstance(node.func, ast.Attribute) and called is None else None
        found = set()
        for signature, patch in self.table["calls"].asked_by(names, method):
            if patch.name in found:
                continue
            if signature.keyword is None or (_given(signature, given) if signature.present
                                             else not signature.keyword & valued):
                self._found(node, signature, patch)
                found.add(patch.name)
        self.generic_visit(node)

    def visit_Expr(self, node):
        if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):  # a docstring is prose
            self.generic_visit(node)

    def visit_Constant(self, node):
        if not isinstance(node.value, str):
            return
        for signature, patch in self.table["string"]:
            if signature.value.search(node.value):
                self._found(node, signature, patch)
        if node.value.startswith("--"):
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
        for key, value in zip(node.keys, node.values):
            for signature, patch in self.table["key"]:
                if isinstance(key, ast.Constant) and key.value == signature.target and (
                        signature.value is None or signature.value.fullmatch(_as_written(value))):
                    self._found(key, signature, patch)
        self.generic_visit(node)

    def visit_ClassDef(self, node):
        bases = self.derived.get(node.name, set())
        methods = {item.name: item for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))}
        for signature, patch in self.table["override"]:
            method = methods.get(signature.method)
            if signature.target in bases and method is not None and method.args.kwarg is None:
                self._found(method, signature, patch)
        for signature, patch in self.table["default"]:
            if signature.target in self.decorated.get(node.name, {}):
                for item in node.body:
                    if isinstance(item, ast.AnnAssign) and self._unhashable_instance(item.value, signature.target):
                        self._found(item, signature, patch)
        for signature, patch in self.table["define"]:
            method = methods.get(signature.method)
            if signature.target in bases and method is not None:
                named = {getattr(inner, "attr", None) or getattr(inner, "id", None) or getattr(inner, "arg", None)
                         for inner in ast.walk(method)}
                if signature.keyword is None or bool(signature.keyword & named) == signature.present:
                    self._found(method, signature, patch)
        self.generic_visit(node)


    def _unhashable_instance(self, value, decorator):
        """Whether a field's default (``X()``, ``field(default=X())``) makes an instance of a class decorated with
        ``decorator`` that has no ``__hash__``."""
        if isinstance(value, ast.Call) and self.resolve(value.func) == "dataclasses.field":
            value = next((keyword.value for keyword in value.keywords if keyword.arg == "default"), None)
        if not isinstance(value, ast.Call) or not isinstance(value.func, (ast.Name, ast.Attribute)):
            return False
        name = value.func.id if isinstance(value.func, ast.Name) else value.func.attr
        return self.decorated.get(name, {}).get(decorator) is False


def _hashable(decorator):
    """Whether a ``@dataclass(...)`` decorator gives its class a ``__hash__`` (``frozen=True``, ``unsafe_hash=True``, or
    ``eq=False``, which keeps object's)."""
    given = {keyword.arg: getattr(keyword.value, "value", None) for keyword in getattr(decorator, "keywords", ())}
    return given.get("frozen") is True or given.get("unsafe_hash") is True or given.get("eq") is False


def option_key(text):
    """An option as a key, whichever spelling: ``--logging-dir=x`` and ``--logging_dir`` are ``logging_dir``."""
    return text.split("=", 1)[0][2:].replace("-", "_")


def _given(signature, given):
    """Whether a call gives one of the signature's keywords, with the value it names where it names one (a literal
    equal to it, or an expression that may hold it)."""
    return any(name in given and (name not in signature.values or not isinstance(given[name], ast.Constant)
                                  or repr(given[name].value) == repr(signature.values[name]))  # False is not 0
               for name in signature.keyword)


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


def _as_written(value):
    """A dict value as a configuration file writes it: a string without its quotes (``"radam"`` as YAML's ``radam``),
    anything else as the source writes it (``1e-10``)."""
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return value.value
    return ast.unparse(value)
