"""What ``zeropatch check PATH`` looks for, and what it found (a ``Finding``: file, line, code, and why).

What it looks for is declared by the patches, next to their error texts (``Patch.looks_for``), one signature each:

- ``import MODULE``: an import of a module a release removed or moved (``import torch._six``, ``from torch._six
  import inf``, ``from torch import _six``), also one of its submodules;
- ``name DOTTED``: a name read off a module (``np.float`` after ``import numpy as np``, ``from numpy import float``);
  ``name MODULE.* without NAMES``: any name read off ``MODULE``, or submodule of it imported, but ``NAMES`` (``a|b``):
  what a module a patch provides lacks (``pkg_resources.get_provider``, ``pkg_resources.extern``);
- ``attribute NAME``: an attribute of any object read or set under a name only the library's objects have
  (``optimizer._param_store``, ``config.rope_scaling = ...``);
- ``call DOTTED [with KEYWORDS | without KEYWORDS]``: a call of a function or class (through the file's imports, and
  the repository's classes derived from it), with or without a keyword (``call transformers.Trainer with
  tokenizer``; ``a|b``: any of them); ``*`` in DOTTED stands for any part (``call
  transformers.*ForCausalLM.from_pretrained``), and
  ``*.METHOD`` for a method of an object the file's imports do not name (``draw.textsize(...)``, not
  ``os.path.getsize``); ``with NAME=VALUE`` (a Python literal) matches the keyword given that value or an expression
  that may hold it (``save_pretrained(out, safe_serialization=False)`` or ``=args.safe``, not ``=True``);
- ``override DOTTED METHOD``: a class derived from ``DOTTED`` defines ``METHOD`` without ``**kwargs`` (the library now
  passes it arguments it does not take);
- ``define DOTTED METHOD [with|without NAMES]``: a class derived from ``DOTTED`` defines ``METHOD``, whose parameters
  and body do (or do not) name one of ``NAMES`` (``define transformers.PreTrainedModel __init__ without post_init``);
- ``option --NAME [of DOTTED]``: a command-line option in a launch file (``.sh``, ``.md``, ``.yaml``, ...), either
  spelling (``--warmup_ratio``, ``--warmup-ratio``), or a Python string that is the option (``add_argument(
  "--local_rank")``, ``sys.argv += ["--warmup_ratio", "0.03"]``); ``of DOTTED`` (``a|b``, ``*`` for any part): an
  option of that library's command line (``of transformers.HfArgumentParser|transformers.*TrainingArguments``), found
  only in a repository whose Python code names one of them and whose own ``add_argument`` does not define the option
  (a diffusers-style script's own ``--logging_dir`` is not TrainingArguments');
- ``default DOTTED``: a field of a class decorated with ``DOTTED`` (``dataclasses.dataclass``) whose default is an
  instance of a class of the repository decorated with it that has no ``__hash__`` (neither ``frozen`` nor
  ``unsafe_hash``, ``eq`` kept): ``common: CommonConfig = CommonConfig()``, or ``field(default=CommonConfig())``;
- ``key NAME [matching REGEX]``: a configuration key, in a launch file (``"cpu_offload_params": true``) or a Python
  dict literal; ``matching REGEX``: only where its value, as written (a string without its quotes, as YAML writes it),
  matches (``"min_loss_scale": 1e-10``, not ``1``; ``opt: radam``);
- ``string REGEX``: a string in the code (a literal, or the text of an f-string or a ``.format`` template; not a
  docstring) or a line of a launch file that REGEX finds: what a value is built from, wherever it goes
  (python_bracketed_host's: a URL with a bracketed host, ``f"tcp://[{addr}]:{port}"``);
- ``pin DIST[<VERSION]``: the repository's requirement files (``_pins``) require the distribution ``DIST``, or with
  ``<VERSION`` pin it to releases before ``VERSION`` only: an old release of another library whose own code meets the
  drift (``pin diffusers<0.29``: diffusers 0.24 imports what huggingface_hub 1.0 removed).
"""

import fnmatch
import re

from zeropatch._versions import version_tuple

KINDS = ("import", "name", "attribute", "call", "override", "define", "option", "key", "string", "pin", "default")


class Signature:
    """One parsed ``looks_for`` entry."""

    __slots__ = ("kind", "target", "method", "keyword", "values", "present", "before", "owners", "value", "text")

    def __init__(self, text):
        words = text.split()
        self.text = text
        self.keyword = None
        self.values = {}  # keyword -> the literal it must be given (where the entry names one)
        self.present = True
        if not words or words[0] not in KINDS or len(words) < 2:
            raise ValueError(f"looks_for entry {text!r}: it starts with one of {', '.join(KINDS)}, then what to find")
        self.kind, self.target = words[0], words[1]
        rest = words[2:]
        self.before = None  # for a pin: the release its releases must all come before
        if self.kind == "pin" and "<" in self.target:
            self.target, _, release = self.target.partition("<")
            self.before = _release(text, release)
        self.method = None
        self.owners = None  # for an option: the names whose command line it belongs to (None: any)
        self.value = None  # for a key: the pattern its value, as written, must match (None: any)
        if self.kind == "key" and len(rest) == 2 and rest[0] == "matching":
            self.value, rest = _pattern(text, rest[1]), []
        if self.kind == "string":
            self.value = _pattern(text, self.target)
        if self.kind == "option" and len(rest) == 2 and rest[0] == "of":
            self.owners, rest = frozenset(rest[1].split("|")), []
        if self.kind == "define" and (len(rest) == 1 or len(rest) == 3 and rest[1] in ("with", "without")):
            self.method, rest = rest[0], rest[1:]
        if self.kind == "name" and self.target.endswith(".*") and rest[:1] == ["without"] and len(rest) == 2:
            self.present, self.keyword = False, frozenset(rest[1].split("|"))
        elif self.kind in ("call", "define") and rest[:1] in (["with"], ["without"]) and len(rest) == 2:
            self.present = rest[0] == "with"
            named = [word.partition("=") for word in rest[1].split("|")]
            self.keyword = frozenset(name for name, _, _ in named)
            self.values = {name: _literal(text, value) for name, equals, value in named if equals}
        elif self.kind == "override" and len(rest) == 1:
            self.method = rest[0]
        elif (rest or self.kind == "override" or (self.kind == "define" and self.method is None) or not self.target
              or (self.kind == "option") != self.target.startswith("--")):
            raise ValueError(f"looks_for entry {text!r}: valid forms are 'import MODULE', 'name DOTTED', 'name "
                             f"MODULE.* without NAMES', 'attribute NAME', 'call DOTTED [with|without KEYWORDS]', "
                             f"'override DOTTED METHOD', 'define DOTTED METHOD [with|without NAMES]', 'option --NAME "
                             f"[of DOTTED]', 'key NAME [matching REGEX]', 'string REGEX', 'pin DIST[<VERSION]', "
                             f"'default DOTTED'")


def _release(text, value):
    if not re.fullmatch(r"\d+(\.\d+)*", value):
        raise ValueError(f"looks_for entry {text!r}: {value!r} after '<' is not a release (0.29, 4.46.3)")
    return version_tuple(value)


def _pattern(text, value):
    try:
        return re.compile(value)
    except re.error as error:
        raise ValueError(f"looks_for entry {text!r}: {value!r} after 'matching' is not a regular expression: "
                         f"{error}") from None


def _literal(text, value):
    import ast

    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        raise ValueError(f"looks_for entry {text!r}: {value!r} after '=' is not a Python literal") from None


class Finding:
    """Code that will break: where, the line, and why (a patch, or what no patch fixes); ``needs``: the other patches
    that must be on for ``patch`` to fix it (moved_names answering with a name of a module torch_six provides);
    ``conditional``: it breaks only on a path a run may not take (an import under an option's ``if``)."""

    __slots__ = ("path", "line", "code", "patch", "signature", "advice", "needs", "conditional")

    def __init__(self, path, line, code, patch=None, signature=None, advice=None, needs=(), conditional=False):
        self.path, self.line, self.code = path, line, code
        self.patch, self.signature, self.advice, self.needs = patch, signature, advice, needs
        self.conditional = conditional

    def __repr__(self):
        return f"Finding({self.path}:{self.line}, {self.patch or self.advice!r})"


def signatures(patches):
    """(kind -> [(Signature, patch)]) for the patches that declare what to look for, also where their drift is left
    failing (``refusal``); ``"calls"`` and ``"names"``: the ``call`` and ``name`` entries indexed (``Calls``,
    ``Names``)."""
    table = {kind: [] for kind in KINDS}
    for patch in patches:
        refused = [text for entry in patch.unfixable if len(entry) > 2 for text in entry[2]]
        for text in (*patch.looks_for, *refused):
            signature = Signature(text)
            table[signature.kind].append((signature, patch))
    table["calls"] = Calls(table["call"])
    table["names"] = Names(table["name"])
    return table


class Names:
    """The ``name`` entries found by the dotted name read: ``name DOTTED`` by that name, ``name MODULE.* without
    NAMES`` by its module; in the order declared."""

    def __init__(self, entries):
        self.exact, self.within = {}, []
        for order, (signature, patch) in enumerate(entries):
            if signature.keyword is None:
                self.exact.setdefault(signature.target, []).append((order, signature, patch))
            else:
                self.within.append((order, signature, patch, signature.target[:-2]))

    def asked_by(self, dotted):
        """(Signature, patch, the module of a ``MODULE.*`` entry or None) of the entries that may match ``dotted``."""
        items = [(order, signature, patch, None) for order, signature, patch in self.exact.get(dotted, ())]
        items += [item for item in self.within if dotted.startswith(item[3] + ".")]
        return [item[1:] for item in sorted(items, key=lambda item: item[0])]


class Calls:
    """The ``call`` entries found by what a call names, in the order declared: a plain dotted target by name, a
    ``*.METHOD`` by method, a target with ``*`` inside (``transformers.*ForCausalLM.from_pretrained``) by its
    pattern. A file has thousands of calls and the patches hundreds of entries: each call asks only its own."""

    def __init__(self, entries):
        self.exact, self.methods, self.patterns = {}, {}, []
        for order, (signature, patch) in enumerate(entries):
            item = (order, signature, patch)
            if signature.target.startswith("*."):
                self.methods.setdefault(signature.target[2:], []).append(item)
            elif "*" in signature.target:
                self.patterns.append((re.compile(fnmatch.translate(signature.target)), item))
            else:
                self.exact.setdefault(signature.target, []).append(item)

    def asked_by(self, names, method):
        """(Signature, patch) of the entries a call of ``names`` (dotted) or of ``method`` (an unresolved
        ``obj.method(...)``) matches, in declaration order."""
        items = [item for name in names for item in self.exact.get(name, ())]
        items += [item for pattern, item in self.patterns if any(pattern.match(name) for name in names)]
        items += self.methods.get(method, []) if method else []
        return [(signature, patch) for _, signature, patch in sorted(items, key=lambda item: item[0])]


def refusal(patch, text):
    """(advice, the first release of the patch's library it fails on or None) of the ``unfixable`` entry of
    ``patch`` that names the signature ``text``; None for the code its ``looks_for`` names (what the patch fixes)."""
    return next(((entry[1], (entry[3:] or (None,))[0]) for entry in patch.unfixable
                 if len(entry) > 2 and text in entry[2]), None)
