"""pg_deepcopy: ``copy.deepcopy`` of anything that holds a torch.distributed handle.

Breaks: every torch release with torch.distributed (pytorch issues #76927, #73825, open). ProcessGroup,
its Backend subclasses, Work and Store objects refuse deepcopy and pickle ("cannot pickle
'torch._C._distributed_c10d.ProcessGroup' object"), so ``ema = deepcopy(model)`` dies when any submodule
keeps a group (sequence-parallel attention's ``self.sp_group``).

Changes: those classes get ``__deepcopy__`` returning the handle itself, so a deep copy shares the group
and copies everything else (the semantics DDP uses when it drops its group from its pickled state).
Pickling still refuses, since a written handle would be dead on load, but the TypeError names the group
and its ranks, and ``torch.save`` adds the attribute paths that hold handles and suggests
``state_dict()``.
"""

import sys

from zeropatch._core import NotNeeded, Patch

HANDLE_CLASS_NAMES = ("ProcessGroup", "Backend", "Work", "Store")
PICKLE_ERROR = r"cannot pickle '[\w.]*(ProcessGroup|Backend|Gloo|NCCL|Work|Store)[\w]*' object"


class HandlePickleError(TypeError):
    """A torch.distributed handle was asked to be pickled."""


def _share_handle(handle, memo):
    return handle


def _describe(handle):
    dist = sys.modules.get("torch.distributed")
    parts = []
    name = getattr(handle, "group_name", None)
    if name:
        parts.append(f"group {name!r}")
    try:
        if dist is not None and dist.is_initialized():
            parts.append(f"ranks {dist.get_process_group_ranks(handle)}")
    except Exception:
        pass
    return f" ({', '.join(parts)})" if parts else ""


def _refuse_pickle(handle, protocol=None):
    kind = f"{type(handle).__module__}.{type(handle).__qualname__}"
    raise HandlePickleError(
        f"cannot pickle '{kind}' object{_describe(handle)}: a torch.distributed handle is a live connection "
        "and cannot be written to disk; save the model's state_dict() instead"
    )


def handle_paths(root, is_handle, limit=20):
    """Attribute paths under ``root`` (modules, attributes, dicts, lists, tuples) that reach a handle."""
    found, seen, stack = [], set(), [("", root)]
    while stack and len(found) < limit:
        path, value = stack.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if is_handle(value):
            found.append(path or "<root>")
            continue
        if isinstance(value, dict):
            children = [(f"{path}[{key!r}]", item) for key, item in value.items()]
        elif isinstance(value, (list, tuple, set, frozenset)):
            children = [(f"{path}[{index}]", item) for index, item in enumerate(value)]
        elif hasattr(value, "__dict__") and not isinstance(value, type):
            children = []
            for key, item in vars(value).items():
                if key in ("_modules", "_parameters", "_buffers"):  # nn.Module: name children plainly
                    children += [(f"{path}.{name}".lstrip("."), child) for name, child in (item or {}).items()]
                else:
                    children.append((f"{path}.{key}".lstrip("."), item))
        else:
            continue
        stack.extend(reversed(children))
    return found


def _save_naming_paths(handle_types):
    def save(wrapped, instance, args, kwargs):
        try:
            return wrapped(*args, **kwargs)
        except HandlePickleError as error:
            target = args[0] if args else kwargs.get("obj")
            paths = handle_paths(target, lambda value: isinstance(value, handle_types))
            if not paths:
                raise
            raise HandlePickleError(f"{error} (held at: {', '.join(paths)})") from None

    return save


def apply(patcher, distributed):
    c10d = sys.modules.get("torch._C._distributed_c10d")
    if c10d is None:
        raise NotNeeded("torch.distributed is not available in this torch build")
    classes = tuple(getattr(c10d, name) for name in HANDLE_CLASS_NAMES if hasattr(c10d, name))
    if all("__deepcopy__" in vars(cls) for cls in classes):
        raise NotNeeded("this torch deep-copies process groups itself")
    for cls in classes:
        patcher.set(cls, "__deepcopy__", _share_handle)
        patcher.set(cls, "__reduce_ex__", _refuse_pickle)
    serialization = sys.modules["torch.serialization"]
    torch = sys.modules["torch"]
    original_save = serialization.save
    wrapped_save = patcher.wrap(serialization, "save", _save_naming_paths(classes))
    if getattr(torch, "save", None) is original_save:
        patcher.set(torch, "save", wrapped_save)
    else:  # torch is still initialising and will bind torch.save from torch.serialization

        def unbind_wrapped_save():
            if getattr(torch, "save", None) is wrapped_save:
                torch.save = original_save

        patcher.on_revert(unbind_wrapped_save)
    return f"deepcopy shares {', '.join(cls.__name__ for cls in classes)}; torch.save names held handles"


PATCH = Patch(
    "pg_deepcopy",
    since="0.1.0",
    summary="copy.deepcopy of objects holding process groups shares the groups instead of crashing",
    package="torch",
    affected="2.10-2.15",
    targets=("torch.distributed",),
    apply=apply,
    errors=(PICKLE_ERROR,),
)
