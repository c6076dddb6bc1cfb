"""Libraries no runtime patch can bring back: compiled packages with no build that loads on the installed torch.
``zeropatch check`` names their imports, and ``zeropatch explain`` their errors, with what to do instead."""

import re

from zeropatch._versions import installed_version, version_tuple

# import name -> (the first torch release no build of it loads on, its failures, what to do)
DEAD_ENDS = {
    "torchtext": ((2, 4), r"torchtext[\\/]lib[\\/]libtorchtext|No module named 'torchtext'",
                  "torchtext's last release, 0.18.0, was built for torch 2.3: it does not load on a later torch "
                  "(\"Could not load this library: .../torchtext/lib/libtorchtext.so\"), and no patch can supply its "
                  "compiled parts. Replace it (its datasets: Hugging Face datasets; its tokenizers and vocabularies: "
                  "plain Python with torch.utils.data), or run the job on torch 2.3"),
}


def dead_end(module):
    """What to do about ``module`` (an import name) where the installed torch has no build of it; None elsewhere."""
    entry = DEAD_ENDS.get(module)
    torch = installed_version("torch")
    if entry is None or torch is None or version_tuple(torch) < entry[0]:
        return None
    return entry[2]


def dead_ends_for_error(text):
    """(module, what to do) for each dead end whose failure ``text`` (an error or a whole traceback) shows."""
    return [(module, dead_end(module)) for module, (_, pattern, _) in DEAD_ENDS.items()
            if re.search(pattern, text) and dead_end(module)]
