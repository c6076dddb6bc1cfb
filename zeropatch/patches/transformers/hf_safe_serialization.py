"""hf_safe_serialization: ``save_pretrained(safe_serialization=False)`` and ``--save_safetensors False`` write
PyTorch ``.bin`` weights again, as on transformers 4.

Breaks, silently: transformers 5.0 saves safetensors only. ``save_pretrained`` lost its ``safe_serialization`` and
``save_function`` parameters and takes both into ``**kwargs`` (meant for the Hub), where they do nothing: the code
asked for ``pytorch_model.bin`` and gets ``model.safetensors``, and whatever reads the file it asked for (a
conversion or merge script's ``torch.load(os.path.join(out, "pytorch_model.bin"))``, a resume that looks for it)
stops: "FileNotFoundError: [Errno 2] No such file or directory: '.../pytorch_model.bin'". ``TrainingArguments``
lost ``save_safetensors`` (``hf_training_args`` takes the option again, as ``args.save_safetensors``).

Changes: a ``save_pretrained`` that passes ``safe_serialization=False``, and a Trainer save whose arguments hold
``save_safetensors=False``, write what transformers 4 wrote: transformers 5 writes its files (its key names, sharding
and index), then each weights file it wrote is rewritten with ``torch.save`` (or the call's ``save_function``, as 4.x
used it) under 4.x's name (``pytorch_model.bin``, ``pytorch_model-00001-of-00002.bin`` with
``pytorch_model.bin.index.json``, ``adapter_model.bin``), and the safetensors file removed. The same tensors under the
same names; a weight tied to a saved one (an output embedding), which safetensors leaves out, is in the file again,
sharing its storage, as 4.x's ``torch.save`` kept it; an earlier save's ``.bin`` shards that this one did not write
are removed, as 4.x removed them. Only the process that writes does it. A call that asks for
safetensors, or names no format, is transformers 5's own. On transformers < 5: not-needed.
"""

import json
import os
import re

from zeropatch._core import NotNeeded, Patch, Skip, inform_once

SAFETENSORS = ".safetensors"
SHARD = re.compile(r"-\d{5}-of-\d{5}$")  # a shard's suffix, before the extension


def pickled_name(name):
    """transformers 4's name for the weights file (or index) transformers 5 writes as ``name``; None for any other
    file."""
    if not name.startswith(("model", "adapter_model")) or SAFETENSORS not in name:
        return None
    return ("pytorch_" + name if name.startswith("model") else name).replace(SAFETENSORS, ".bin")


def _files(directory):
    """name -> (size, mtime, inode) of the files in ``directory`` (empty where it does not exist)."""
    if not os.path.isdir(directory):
        return {}
    found = {}
    for entry in os.scandir(directory):
        if entry.is_file():
            stat = entry.stat()
            found[entry.name] = (stat.st_size, stat.st_mtime_ns, stat.st_ino)
    return found


def _tied_to_saved(reference, saved):
    """{name left out: the saved name whose storage it shares} for the tensors of the ``reference`` state dict that
    share storage (and view) with a saved one."""
    views = {}
    for name in saved:
        if _has_storage(reference.get(name)):
            views.setdefault(_view(reference[name]), name)
    return {name: views[_view(tensor)] for name, tensor in reference.items()
            if name not in saved and _has_storage(tensor) and _view(tensor) in views}


def _has_storage(tensor):
    """A tensor with data of its own (not a meta, offloaded or ZeRO-3-partitioned placeholder)."""
    return hasattr(tensor, "untyped_storage") and tensor.device.type != "meta" and tensor.numel() > 0


def _view(tensor):
    return (tensor.untyped_storage().data_ptr(), tensor.storage_offset(), tuple(tensor.shape), tuple(tensor.stride()))


def rewrite_as_pickles(directory, before, reference, save_function=None):
    """The weights files transformers 5 wrote in ``directory`` since ``before`` (``_files``), rewritten as 4.x's
    pickles, tied names put back beside the tensor they share; their names, rewritten."""
    import safetensors.torch
    import torch

    save = save_function or torch.save
    written = sorted(name for name, stat in _files(directory).items()
                     if before.get(name) != stat and pickled_name(name) is not None)
    weights = [name for name in written if name.endswith(SAFETENSORS)]
    shards = {name: safetensors.torch.load_file(os.path.join(directory, name)) for name in weights}
    tied = _tied_to_saved(reference, {key for shard in shards.values() for key in shard})
    placed = {}
    for name, shard in shards.items():
        for left_out, saved in tied.items():
            if saved in shard:
                shard[left_out] = shard[saved]
                placed[left_out] = pickled_name(name)
        save(shard, os.path.join(directory, pickled_name(name)))
    for name in written:
        if name.endswith(".json"):
            with open(os.path.join(directory, name), encoding="utf-8") as file:
                index = json.load(file)
            renamed = {key: pickled_name(shard) for key, shard in index["weight_map"].items()}
            index["weight_map"] = dict(sorted({**renamed, **placed}.items()))
            with open(os.path.join(directory, pickled_name(name)), "w", encoding="utf-8") as file:
                file.write(json.dumps(index, indent=2, sort_keys=True) + "\n")
    for name in written:
        os.remove(os.path.join(directory, name))
    _remove_stale_shards(directory, {pickled_name(name) for name in weights})
    return written


def _remove_stale_shards(directory, pickles):
    """4.x's clean-up: the shards of an earlier save (``pytorch_model-00003-of-00003.bin``) that this one did not
    write, of the same weights name."""
    stems = {SHARD.sub("", name[:-len(".bin")]) for name in pickles}
    for name in os.listdir(directory):
        if name.endswith(".bin") and name not in pickles and SHARD.search(name[:-len(".bin")]) \
                and SHARD.sub("", name[:-len(".bin")]) in stems:
            os.remove(os.path.join(directory, name))


def _reference(model, state_dict):
    """The state dict in which a save's tied names are looked up: none for an adapter (peft's, or one loaded into
    the model), whose saved names are not the model's."""
    if getattr(model, "peft_config", None):
        return {}
    return model.state_dict() if state_dict is None else state_dict


def _save_pretrained(wrapped, model, args, kwargs):
    if kwargs.get("safe_serialization", True) is not False:
        return wrapped(*args, **kwargs)
    kwargs = dict(kwargs)
    kwargs.pop("safe_serialization")
    save_function = kwargs.pop("save_function", None)
    directory = kwargs.get("save_directory", args[0] if args else None)
    writes = kwargs.get("is_main_process", args[1] if len(args) > 1 else True)
    before = _files(directory) if writes else None
    result = wrapped(*args, **kwargs)
    if writes:
        reference = _reference(model, kwargs.get("state_dict", args[2] if len(args) > 2 else None))
        _written(rewrite_as_pickles(directory, before, reference, save_function),
                 "save_pretrained(safe_serialization=False)")
    return result


def _trainer_save(wrapped, trainer, args, kwargs):
    if getattr(trainer.args, "save_safetensors", True) is not False or not trainer.args.should_save:
        return wrapped(*args, **kwargs)
    directory = kwargs.get("output_dir", args[0] if args else None) or trainer.args.output_dir
    before = _files(directory)
    result = wrapped(*args, **kwargs)
    reference = _reference(trainer.accelerator.unwrap_model(trainer.model),
                           kwargs.get("state_dict", args[1] if len(args) > 1 else None))
    _written(rewrite_as_pickles(directory, before, reference), "the Trainer's save_safetensors=False")
    return result


def _written(names, why):
    if names:
        inform_once(f"hf_safe_serialization: {why}: weights written as pytorch_model.bin / adapter_model.bin, as "
                    "transformers 4 wrote them")


def apply(patcher, module):
    import inspect

    if module.__name__ == "transformers.trainer":
        trainer = getattr(module, "Trainer", None)
        if trainer is None or not hasattr(trainer, "_save"):
            raise Skip("transformers.trainer has no Trainer._save")
        from transformers import TrainingArguments

        if "save_safetensors" in getattr(TrainingArguments, "__dataclass_fields__", {}):
            raise NotNeeded("TrainingArguments still has save_safetensors")
        patcher.wrap(trainer, "_save", _trainer_save)
        return "Trainer._save writes .bin weights where the arguments say save_safetensors=False"
    model = getattr(module, "PreTrainedModel", None)
    if model is None or not hasattr(model, "save_pretrained"):
        raise Skip("transformers.modeling_utils has no PreTrainedModel.save_pretrained")
    if "safe_serialization" in inspect.signature(model.save_pretrained).parameters:
        raise NotNeeded("save_pretrained still takes safe_serialization")
    patcher.wrap(model, "save_pretrained", _save_pretrained)
    return "save_pretrained(safe_serialization=False) writes pytorch_model.bin"


PATCH = Patch(
    "hf_safe_serialization",
    since="0.4.0",
    summary="save_pretrained(safe_serialization=False) and --save_safetensors False write pytorch_model.bin again "
    "(transformers 5 silently writes safetensors)",
    package="transformers",
    affected="5.0.0-5.24.0",
    targets=("transformers.modeling_utils", "transformers.trainer"),
    apply=apply,
    errors=(r"No such file or directory: '[^']*pytorch_model[^']*\.bin'",),
    looks_for=("call *.save_pretrained with safe_serialization=False", "option --save_safetensors",
               *(f"call transformers.{arguments} with save_safetensors"
                 for arguments in ("TrainingArguments", "training_args.TrainingArguments"))),
)
