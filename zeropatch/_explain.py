"""What ``zeropatch explain`` says about an error text (a message or a whole traceback): the patches that fix it, each
with its state here and how to turn it on; the drift a patch knows of and cannot fix, with what to do; the libraries
with no build for the installed torch; the standard modules this Python removed, with what stands in; the release that
removed a module or name, and what replaced it (the API history). The job report of ``zeropatch run`` says the same about a failed job's last
exception."""

from zeropatch import _core
from zeropatch.check.dead_ends import dead_ends_for_error

REHEARSAL = "cpu_rehearsal"


def how_to_turn_on(patch):
    if patch.name == REHEARSAL:
        return ["rehearse the job on this machine's CPU: `zeropatch run --cpu -- torchrun ... train.py ...`"]
    selection = "1" if patch.default else f"all,{patch.name}"
    if patch.default:
        first = "add `import zeropatch` at the top of the script (a default patch), or"
    else:
        first = f"add `import zeropatch; zeropatch.install({patch.name!r})` (an opt-in patch), or"
    return [first, f"run with `zeropatch run --patches {selection} -- python train.py ...`, or",
            f"set ZEROPATCH={selection} in the environment"]


def _here(patch):
    """(the affected releases with the one found here, the patch's state in this process)."""
    record = _core.status(patch.name)[0]
    return record.versions, f"{record.state} ({record.reason})"


def fixes_for(text):
    """(the patches that fix an error text, the API history's records of what it names missing): the patches whose
    declared errors match, and moved_names where the history answers a name the error shows missing."""
    from zeropatch._history import ANSWERING_PATCH, answerable, for_error  # (read only when explaining)

    records = for_error(text)  # which release removed what the error names, and for what
    patches = _core.patches_for_error(text)
    if any(answerable(record.module, record.name) is not None for record in records):
        patches.append(_core._registry()[ANSWERING_PATCH].patch)  # the history's moved and retired names are answered
    return patches, records


def explanation(text, here=_here):
    """(lines, whether a patch fixes it) for an error text; ``here(patch)``: (its affected releases, its state) where
    it is asked (this process, or a job)."""
    lines = [f"No patch can fix this ({patch.package} drift known to {patch.name}): {advice}"
             for patch, advice in _core.advice_for_error(text)]
    lines += [f"No patch can fix this ({module} has no build for the installed torch): {advice}"
              for module, advice in dead_ends_for_error(text)]
    from zeropatch._history import describe

    patches, records = fixes_for(text)
    maybe = [(patch, decides) for patch, decides in _core.patches_that_may_fix(text) if patch not in patches]
    for patch, decides in maybe:
        affected, state = here(patch)
        lines += [f"{patch.name} may fix this: {decides}", f"  {patch.name}: {patch.summary}",
                  f"  affected: {affected}", f"  here: {state}"]
    if not patches and not maybe:
        from zeropatch.check.stdlib_removals import removals_for_error

        lines += [f"No patch can fix this ({module} was removed in Python {'.'.join(map(str, release))}): {advice}"
                  for module, release, advice in removals_for_error(text)]
        lines.append("No zeropatch patch is known to fix this error. Run `zeropatch status` to see what is active.")
    for patch in patches:
        affected, state = here(patch)
        lines += [f"{patch.name}: {patch.summary}", f"  affected: {affected}", f"  here: {state}", "  turn it on:"]
        lines += [f"    {line}" for line in how_to_turn_on(patch)]
    lines += [f"API history: {describe(record)}" for record in records]
    return lines, bool(patches)
