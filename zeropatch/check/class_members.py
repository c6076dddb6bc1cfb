"""The attributes a class has by its source, read statically (parsed, never imported): what ``zeropatch check``
compares a repository's ``self.NAME`` reads with, in its subclasses of a library's classes. A release that removes an
attribute breaks the subclasses that read it, at run time and often after minutes of start-up: SimCSE's
``TrainingArguments`` subclass reads ``self.no_cuda``, which transformers 5 removed.

A class's attributes are its methods, nested classes, class attributes and dataclass fields, what its methods assign
to ``self.NAME``, the identifier strings of its body (a ``setattr`` over listed names, ``__slots__``) and those of its
bases, followed through the imports of the modules that define them. Where that cannot be known the answer is None,
never a guess: a ``__getattr__`` (``torch.nn.Module``'s parameters and submodules), a ``setattr`` on ``self`` over
names not listed in the class, ``self.__dict__`` written, a base not found.
"""

import ast
import builtins
import functools
import os

from zeropatch.check.installed import module_file, module_tree


@functools.lru_cache(maxsize=None)
def library_members(dotted, depth=8):
    """The attribute names of the installed class ``dotted`` ("transformers.TrainingArguments") and its bases, as a
    frozenset; None where they cannot be known."""
    found = _definition(*dotted.rpartition(".")[::2], depth)
    if found is None:
        return None
    module, node = found
    members = own_members(node)
    if members is None or depth == 0:
        return None
    for base in node.bases:
        inherited = _base_members(module, base, depth - 1)
        if inherited is None:
            return None
        members |= inherited
    return frozenset(members)


def own_members(node):
    """The attribute names a class statement gives its instances by itself (not its bases'), or None (see above)."""
    names = set()
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(item.name)
        elif isinstance(item, (ast.Assign, ast.AnnAssign)):
            for target in item.targets if isinstance(item, ast.Assign) else [item.target]:
                names.update(inner.id for inner in ast.walk(target) if isinstance(inner, ast.Name))
    if names & {"__getattr__", "__getattribute__"}:
        return None
    for inner in ast.walk(node):
        if isinstance(inner, ast.Constant) and isinstance(inner.value, str) and inner.value.isidentifier():
            names.add(inner.value)
    for method in node.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) or not method.args.args:
            continue
        me = method.args.args[0].arg
        loops = {id(target): loop for loop in ast.walk(method) if isinstance(loop, ast.For)
                 for target in ast.walk(loop.target) if isinstance(target, ast.Name)}
        for inner in ast.walk(method):
            if isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name) and inner.value.id == me:
                if isinstance(inner.ctx, ast.Store):
                    names.add(inner.attr)
                elif inner.attr == "__dict__":
                    return None
            elif _sets_unlisted_names(inner, me, method, loops):
                return None
    return names


def _sets_unlisted_names(node, me, method, loops):
    """Whether ``node`` is a ``setattr(me, name, ...)`` whose name is neither a string nor a loop over a literal or over
    a class attribute (whose strings the class body lists)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
            and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == me and len(node.args) > 1):
        return False
    name = node.args[1]
    if isinstance(name, ast.Constant):
        return False
    if not isinstance(name, ast.Name):
        return True
    for target in ast.walk(method):
        if isinstance(target, ast.Name) and target.id == name.id and id(target) in loops:
            source = loops[id(target)].iter
            if isinstance(source, (ast.Tuple, ast.List, ast.Set)) or (
                    isinstance(source, ast.Attribute) and isinstance(source.value, ast.Name)):
                return False
    return True


def _base_members(module, base, depth):
    """The members a base expression of a class defined in ``module`` brings, or None."""
    if isinstance(base, ast.Subscript):  # Generic[T], Dict[str, Any]
        base = base.value
    if isinstance(base, ast.Name) and base.id == "object":
        return set()
    if isinstance(base, ast.Name) and isinstance(getattr(builtins, base.id, None), type):
        return set(dir(getattr(builtins, base.id)))
    dotted = _dotted(module, base)
    members = None if dotted is None else library_members(dotted, depth)
    return None if members is None else set(members)


def _dotted(module, node):
    """The dotted name an expression in ``module`` stands for, through its imports and its own classes."""
    if isinstance(node, ast.Attribute):
        owner = _dotted(module, node.value)
        return f"{owner}.{node.attr}" if owner else None
    if not isinstance(node, ast.Name):
        return None
    tree = module_tree(module)
    for statement in _top_level(tree):
        if isinstance(statement, ast.ClassDef) and statement.name == node.id:
            return f"{module}.{node.id}"
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            for alias in statement.names:
                if (alias.asname or alias.name.split(".")[0]) == node.id:
                    if isinstance(statement, ast.Import):
                        return alias.name if alias.asname else node.id
                    return f"{_absolute(module, statement)}.{alias.name}"
    return None


def _definition(module, name, depth):
    """(the module that defines class ``name`` as ``module`` exports it, its class statement), following imports."""
    tree = module_tree(module)
    if tree is None or depth < 0:
        return None
    for statement in _top_level(tree):
        if isinstance(statement, ast.ClassDef) and statement.name == name:
            return module, statement
    for statement in _top_level(tree):
        if isinstance(statement, ast.ImportFrom):
            for alias in statement.names:
                if (alias.asname or alias.name) == name:
                    return _definition(_absolute(module, statement), alias.name, depth - 1)
    return None


def _top_level(tree):
    """A module's statements, those under its top-level ``if`` / ``try`` (``if TYPE_CHECKING:``) included."""
    pending = list(tree.body)
    while pending:
        statement = pending.pop(0)
        yield statement
        if isinstance(statement, (ast.If, ast.Try)):
            pending += statement.body + statement.orelse + getattr(statement, "finalbody", [])
            pending += [line for handler in getattr(statement, "handlers", []) for line in handler.body]


def _absolute(module, statement):
    """The absolute module an ``ImportFrom`` in ``module`` names."""
    if not statement.level:
        return statement.module
    package = module if _is_package(module) else module.rpartition(".")[0]
    for _ in range(statement.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{statement.module}" if statement.module else package


def _is_package(module):
    return os.path.basename(module_file(module) or "") == "__init__.py"
