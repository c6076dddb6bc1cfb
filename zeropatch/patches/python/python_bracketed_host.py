"""python_bracketed_host: ``init_method="tcp://[HOST]:PORT"`` with a host name (or an IPv4 address) in the brackets
reaches torch's rendezvous again, as it did before Python refused it.

Breaks: Python's security releases of 2023-2024 (gh-103848: 3.11.4 and every 3.12; backported to 3.9 and 3.10 later)
made ``urllib.parse.urlsplit`` accept only an IPv6 address between brackets. Launch code of 2021-2023 writes every
host bracketed, so that one f-string serves IPv4 and IPv6 masters alike (``init_method=f"tcp://[{master_addr}]:
{port}"``, with ``MASTER_ADDR=localhost`` or SLURM's node name, as DeepSpeed ``init_distributed`` callers did), and
``torch.distributed.init_process_group`` now dies before any connection: "ValueError: 'localhost' does not appear to
be an IPv4 or IPv6 address" ("An IPv4 address cannot be in brackets" for ``[10.0.0.1]``).

Changes: torch's rendezvous (``torch.distributed.rendezvous._rendezvous_helper``, which ``init_process_group``,
``rendezvous`` and the stores made from backend options go through) is handed the URL with such a host written
without its brackets: ``tcp://localhost:29500``, the host name older Pythons read from the bracketed form, so the
store connects where it connected then. An IPv6 address keeps its brackets; ``urllib.parse`` itself is untouched
(every other caller is still refused, as the security fix means). No legacy decision: a URL Python refuses cannot
come from code written for it.
"""

import ipaddress
import re

from zeropatch._core import Patch, Skip
from zeropatch._legacy import Tally

# scheme://[userinfo@][HOST]rest: the bracketed host of a URL
_BRACKETED = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://(?:[^/@\[\]]*@)?)\[(?P<host>[^\]/]*)\](?P<tail>.*)", re.S)
_TALLY = Tally()


def unbracketed(url):
    """``url`` with a bracketed host that is no IPv6 address written without its brackets; any other URL as given."""
    match = _BRACKETED.fullmatch(url) if isinstance(url, str) else None
    if match is None:
        return url
    try:
        if ipaddress.ip_address(match["host"].partition("%")[0]).version == 6:  # a zone (%eth0) is IPv6's own
            return url
    except ValueError:  # a host name
        pass
    return match["head"] + match["host"] + match["tail"]


def _with_an_unbracketed_url(wrapped, instance, args, kwargs):
    given = args[0] if args else kwargs.get("url")
    url = unbracketed(given)
    if url is not given:
        _TALLY.count(f"{given} read as {url}")
        args, kwargs = ((url, *args[1:]), kwargs) if args else (args, {**kwargs, "url": url})
    return wrapped(*args, **kwargs)


def report():
    return _TALLY.report("URLs whose bracketed host Python refuses, handed to the rendezvous unbracketed"
                         if _TALLY.counts else None)


def apply(patcher, module):
    if not callable(getattr(module, "_rendezvous_helper", None)):
        raise Skip("torch.distributed.rendezvous has no _rendezvous_helper(url, ...)")
    patcher.wrap(module, "_rendezvous_helper", _with_an_unbracketed_url)
    return "init_method tcp://[HOST]:PORT: a host name or IPv4 address in the brackets reaches the rendezvous unbracketed"


PATCH = Patch(
    "python_bracketed_host",
    since="0.8.0",
    summary="init_method='tcp://[HOST]:PORT' with a host name (MASTER_ADDR=localhost, a SLURM node) in the brackets "
    "reaches torch's rendezvous again: Python's urlsplit refuses it since its 2023 security releases",
    package="python",
    affected="3.11.7 (swept; every Python since the security fix gh-103848 refuses a bracketed host name)",
    targets=("torch.distributed.rendezvous",),
    apply=apply,
    report=report,
    errors=(r"(?s)_check_bracketed_host.*does not appear to be an IPv4 or IPv6 address",
            r"An IPv4 address cannot be in brackets"),
    looks_for=(r"string tcp://\[(?![0-9A-Fa-f.]*:[0-9A-Fa-f:.%\w]*\])",),
)
