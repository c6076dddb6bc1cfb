"""local_rank_arg: ``--local-rank=N`` (torch >= 2.0's launcher) reaches a script that declared ``--local_rank``.

Breaks: since torch 2.0, ``python -m torch.distributed.launch`` (and torchrun without ``--use-env``-style
environment reading) passes each worker ``--local-rank=N``; before, it passed ``--local_rank=N``. A script that
declared only ``parser.add_argument("--local_rank", ...)`` (the DiT era: PixArt-alpha declares both spellings for
this reason) dies at once: "error: unrecognized arguments: --local-rank=0". The reverse holds for a script that
declared only ``--local-rank`` under a torch < 2.0 launcher.

Changes: ``ArgumentParser.parse_known_args`` (which ``parse_args`` calls) reads the other spelling of the local-rank
option as the spelling the parser declared, into the declared destination, for parsers that declared exactly one
of the two. Parsers that declared neither, or both, see their arguments unchanged; arguments after ``--`` are never
touched.
"""

import sys

from zeropatch._core import Patch, inform_once

SPELLINGS = ("--local_rank", "--local-rank")


def _as_declared(parser, arguments):
    declared = [spelling for spelling in SPELLINGS if spelling in parser._option_string_actions]
    if len(declared) != 1:
        return arguments
    ours = declared[0]
    other = SPELLINGS[1 - SPELLINGS.index(ours)]
    rewritten = []
    for position, argument in enumerate(arguments):
        if argument == "--":
            return rewritten + arguments[position:]
        if argument == other or argument.startswith(other + "="):
            inform_once(f"local_rank_arg: {other} given by the launcher is read as the script's {ours}")
            argument = ours + argument[len(other):]
        rewritten.append(argument)
    return rewritten


def _parse_known_args(wrapped, parser, args, kwargs):
    arguments = kwargs.pop("args", args[0] if args else None)
    arguments = sys.argv[1:] if arguments is None else list(arguments)
    if all(isinstance(argument, str) for argument in arguments):
        arguments = _as_declared(parser, arguments)
    return wrapped(arguments, *args[1:], **kwargs)


def apply(patcher, argparse):
    patcher.wrap(argparse.ArgumentParser, "parse_known_args", _parse_known_args)
    return "ArgumentParser.parse_known_args reads --local-rank / --local_rank as the spelling declared"


PATCH = Patch(
    "local_rank_arg",
    since="0.3.0",
    summary="--local-rank=N from torch >= 2.0's launcher reaches a script that declared --local_rank (and back)",
    package="torch",
    affected="2.6.0-2.15.0 (swept; the launcher changed in torch 2)",
    targets=("argparse",),
    apply=apply,
    errors=(r"unrecognized arguments:.*--local[-_]rank",),
    looks_for=("option --local_rank", "call torch.distributed.launch"),
)
