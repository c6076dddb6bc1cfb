"""Names answered by transformers' top-level module, for the patches that put a removed top-level name back.

transformers' top-level module is a lazy module (``_LazyModule``) and transformers may re-create it without an
import (``direct_transformers_import`` executes ``transformers/__init__.py`` again and the new module replaces the
old in ``sys.modules``): a name set on one module object would be lost with it. So the names are answered by the
lazy module class's ``__getattr__``, for the module named ``transformers`` only, whichever object that is."""

from zeropatch._core import Skip


def answer_at_top_level(patcher, module, names):
    """Make ``transformers.<name>`` (and ``from transformers import <name>``) answer ``names[name]()`` (the value is
    made when first asked for), not listed in ``dir(transformers)``."""
    if not hasattr(type(module), "__getattr__"):
        raise Skip("transformers' top-level module is not a lazy module")

    def answering(wrapped, instance, args, kwargs):
        if args and args[0] in names and getattr(instance, "__name__", None) == "transformers":
            return names[args[0]]()
        return wrapped(*args, **kwargs)

    patcher.wrap(type(module), "__getattr__", answering)
