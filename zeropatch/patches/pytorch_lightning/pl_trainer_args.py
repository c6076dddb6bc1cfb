"""pl_trainer_args: a ``Trainer`` built the pytorch-lightning 1.x way is built, and trains, as 1.x built it.

Breaks: pytorch-lightning 1.7 and 2.0 removed the Trainer's 1.x keywords, its argparse helpers and attributes
(CHANGELOG 2.0; ``_graveyard``): "Trainer.__init__() got an unexpected keyword argument 'gpus'" (also
``resume_from_checkpoint``, ``checkpoint_callback``, ``progress_bar_refresh_rate``, ...), "type object 'Trainer' has no
attribute 'add_argparse_args'" (latent-diffusion's, taming-transformers' and ControlNet's ``main.py`` build their whole
command line and Trainer with it), "'Trainer' object has no attribute 'root_gpu'". Passing the keywords through by
hand changes the run silently: 2.x's defaults take every GPU with DDP where 1.x trained on the CPU, in one process.

Changes, on 2.x (each only where the installed Trainer lacks the name):
- ``Trainer(...)`` with a 1.x keyword: the call is 1.x code, built as 1.9 built it. ``gpus`` chooses the accelerator
  and devices with 1.x's parsing (``"0,"`` is GPU 0, ``"1"`` one GPU, ``0`` / ``None`` the CPU), ``num_processes`` /
  ``tpu_cores`` likewise; an accelerator spelled as a strategy (``"ddp"``, ``"ddp_spawn"``, ``"ddp_cpu"``,
  ``distributed_backend=``) is that strategy; no GPUs asked for is the CPU (1.x's default, not 2.x's "auto"); several
  devices without a strategy is ``ddp_spawn`` (1.x's choice); DDP finds unused parameters, as 1.x's did (2.x's
  does not: a module some of whose parameters get no gradient in a step, as several optimizers trained in turn, fails
  in its second step). Renamed keywords map to their successors
  (``resume_from_checkpoint`` -> ``fit(ckpt_path=)``, ``checkpoint_callback`` -> ``enable_checkpointing``, or, a
  ``ModelCheckpoint`` given there as 1.0-1.4 took it, into ``callbacks``,
  ``replace_sampler_ddp`` -> ``use_distributed_sampler``, ``weights_summary``, ``progress_bar_refresh_rate`` and
  ``process_position`` to their callbacks, ``max_steps=None`` -> -1, a dict ``accumulate_grad_batches`` ->
  ``GradientAccumulationScheduler``, ...); ones that only tuned what 2.x does anyway are dropped with one log line; one
  whose effect 2.x cannot give (``amp_backend="apex"``, ``accelerator="dp"``, ``track_grad_norm``, ...) is refused
  with what to use.
- ``Trainer.add_argparse_args`` / ``from_argparse_args`` / ``parse_argparser`` (and ``LightningDataModule``'s), with
  1.9's flag types and defaults over today's Trainer arguments and the 1.x keywords above.
- ``trainer.root_gpu``, ``training_type_plugin``, ``num_gpus``, ``data_parallel_device_ids``, ``use_amp``,
  ``resume_from_checkpoint``, ``disable_validation``, as 1.x answered them.
"""

import argparse
import inspect
import weakref

from zeropatch._core import NotNeeded, Patch, inform_once, lacks

TRAINER_MODULE = "pytorch_lightning.trainer.trainer"
DATAMODULE_MODULE = "pytorch_lightning.core.datamodule"
HELPERS = ("add_argparse_args", "from_argparse_args", "parse_argparser")
STRATEGY_ACCELERATORS = {"ddp": "ddp", "ddp_spawn": "ddp_spawn", "ddp_cpu": "ddp_spawn", "ddp_fork": "ddp_fork",
                         "deepspeed": "deepspeed", "fsdp": "fsdp"}  # 1.5-1.6: accelerator= a strategy's name
DDP_STRATEGIES = ("ddp", "ddp_spawn", "ddp_fork", "ddp_notebook")  # 1.x: find_unused_parameters=True; 2.x: False
REFUSED_STRATEGIES = {"dp": "DataParallel is gone since 2.0; strategy='ddp' splits no batch: divide batch_size by "
                            "the number of GPUs to keep the step's batch",
                      "ddp2": "ddp2 is gone since 1.7: use strategy='ddp'",
                      "horovod": "Horovod is gone since 2.0: use strategy='ddp'",
                      "ddp_sharded": "FairScale sharding is gone since 2.0: use strategy='fsdp' or 'deepspeed_stage_2'",
                      "ddp_sharded_spawn": "FairScale sharding is gone since 2.0: use strategy='fsdp'"}
_RESUME = weakref.WeakKeyDictionary()  # trainer -> resume_from_checkpoint it was built with


def _refuse(keyword, value, use):
    raise TypeError(f"Trainer({keyword}={value!r}): pytorch-lightning 2 cannot do what this did in 1.x; {use}")


def _no_gpus(value):
    return value in (None, 0, "0", [], "[]", "")


def _hardware(kwargs, legacy, strategy_name):
    """1.x's choice of accelerator, devices and strategy from gpus / num_processes / tpu_cores / ipus."""
    gpus, processes, tpu_cores = legacy.pop("gpus", None), legacy.pop("num_processes", None), legacy.pop("tpu_cores", None)
    if legacy.pop("ipus", None):
        _refuse("ipus", True, "Graphcore IPUs left the core in 2.0 (the lightning-graphcore package)")
    automatic = kwargs.get("accelerator", "auto") in ("auto", None)
    if not _no_gpus(gpus):
        chosen, devices = "gpu", gpus
        if legacy.pop("auto_select_gpus", None) and isinstance(gpus, int) and gpus > 0:
            from pytorch_lightning.accelerators import find_usable_cuda_devices

            devices = find_usable_cuda_devices(gpus)
    elif tpu_cores:
        chosen, devices = "tpu", tpu_cores
    else:
        chosen, devices = "cpu", processes or 1
    if automatic:
        kwargs["accelerator"] = chosen
    if kwargs.get("devices", "auto") == "auto" or not _no_gpus(gpus):
        kwargs["devices"] = devices
    count = len(devices) if isinstance(devices, (list, tuple)) else (
        len([part for part in devices.split(",") if part]) if isinstance(devices, str) and "," in devices else devices)
    if strategy_name is not None:
        kwargs["strategy"] = strategy_name
    elif kwargs.get("strategy", "auto") == "auto" and isinstance(count, int) and (count > 1 or count == -1):
        kwargs["strategy"] = "ddp_spawn"  # 1.x's choice for several devices


def _translate(kwargs, legacy, hardware=True):
    """Map the 1.x keywords in ``legacy`` (name -> value) into today's ``kwargs``; returns the log notes.
    ``hardware``: whether the installed Trainer lacks gpus= (2.x), so 1.x's choice of hardware is made here."""
    notes = []
    if hardware:
        accelerator = kwargs.get("accelerator")
        strategy_name = legacy.pop("distributed_backend", None)
        if isinstance(accelerator, str) and (accelerator in STRATEGY_ACCELERATORS or accelerator in REFUSED_STRATEGIES):
            strategy_name = accelerator
            kwargs["accelerator"] = "cpu" if accelerator == "ddp_cpu" else "auto"
        if strategy_name in REFUSED_STRATEGIES:
            _refuse("accelerator", strategy_name, REFUSED_STRATEGIES[strategy_name])
        if strategy_name is not None:
            strategy_name = STRATEGY_ACCELERATORS.get(strategy_name, strategy_name)
        _hardware(kwargs, legacy, strategy_name)
        if kwargs.get("strategy") in DDP_STRATEGIES:
            kwargs["strategy"] += "_find_unused_parameters_true"
            notes.append("DDP finds unused parameters, as 1.x's did")
    callbacks = kwargs.get("callbacks")
    callbacks = list(callbacks) if isinstance(callbacks, (list, tuple)) else [] if callbacks is None else [callbacks]
    added = []
    for keyword, value in legacy.items():
        note = _one(keyword, value, kwargs, added)
        if note:
            notes.append(note)
    if added:
        kwargs["callbacks"] = callbacks + added
    if kwargs.get("max_steps", -1) is None:
        kwargs["max_steps"] = -1
        notes.append("max_steps=None -> -1 (no limit)")
    if isinstance(kwargs.get("accumulate_grad_batches"), dict):
        from pytorch_lightning.callbacks import GradientAccumulationScheduler

        kwargs["callbacks"] = list(kwargs.get("callbacks") or []) + [
            GradientAccumulationScheduler(scheduling=kwargs.pop("accumulate_grad_batches"))]
        notes.append("accumulate_grad_batches={epoch: n} -> GradientAccumulationScheduler")
    return notes


def _one(keyword, value, kwargs, added):
    """One removed keyword other than the hardware ones; returns a log note, or None where its value was 1.x's
    default (nothing to do)."""
    from pytorch_lightning import callbacks as pl_callbacks

    if keyword == "resume_from_checkpoint":
        return None if value is None else "resume_from_checkpoint -> fit(ckpt_path=)"
    if keyword == "checkpoint_callback":
        if value is None or value is True:
            return None
        if isinstance(value, pl_callbacks.Callback):  # 1.0-1.4: the checkpoint callback itself (taming's main.py)
            added.append(value)
            return f"checkpoint_callback={type(value).__name__}(...) -> callbacks, as 1.0-1.4 used it"
        kwargs["enable_checkpointing"] = bool(value) and kwargs.get("enable_checkpointing", True) is not False
        return f"checkpoint_callback={value!r} -> enable_checkpointing={kwargs['enable_checkpointing']}"
    if keyword == "replace_sampler_ddp":
        kwargs["use_distributed_sampler"] = bool(value)
        return None if value else "replace_sampler_ddp=False -> use_distributed_sampler=False"
    if keyword == "weights_summary":
        if value == "top":
            return None
        if value is None:
            kwargs["enable_model_summary"] = False
            return "weights_summary=None -> enable_model_summary=False"
        if value == "full":
            added.append(pl_callbacks.ModelSummary(max_depth=-1))
            return "weights_summary='full' -> ModelSummary(max_depth=-1)"
        _refuse(keyword, value, "1.x took 'top', 'full' or None")
    if keyword in ("progress_bar_refresh_rate", "process_position"):
        if value in (None, 0) and keyword == "process_position":
            return None
        if value is None:
            return None
        if value == 0:
            kwargs["enable_progress_bar"] = False
            return "progress_bar_refresh_rate=0 -> enable_progress_bar=False"
        added.append(pl_callbacks.TQDMProgressBar(**{"refresh_rate" if keyword == "progress_bar_refresh_rate"
                                                     else "process_position": value}))
        return f"{keyword}={value!r} -> TQDMProgressBar({keyword.replace('progress_bar_', '')}={value!r})"
    if keyword == "reload_dataloaders_every_epoch":
        if value:
            kwargs["reload_dataloaders_every_n_epochs"] = 1
            return "reload_dataloaders_every_epoch=True -> reload_dataloaders_every_n_epochs=1"
        return None
    if keyword in ("flush_logs_every_n_steps", "move_metrics_to_cpu", "amp_level", "log_gpu_memory"):
        if value in (None, False):
            return None
        if keyword == "log_gpu_memory":
            _refuse(keyword, value, "log device memory with callbacks=[DeviceStatsMonitor()]")
        return f"{keyword}={value!r} dropped: it tuned logging / metric placement only, which 2.x decides itself"
    if keyword == "amp_backend":
        if value in (None, "native"):
            return None
        _refuse(keyword, value, "apex AMP is gone since 2.0: precision='16-mixed' is torch's native AMP")
    if keyword == "multiple_trainloader_mode":
        if value in (None, "max_size_cycle"):
            return None
        _refuse(keyword, value, "return CombinedLoader(loaders, mode='min_size') from train_dataloader()")
    if keyword == "track_grad_norm":
        if value in (None, -1, "-1"):
            return None
        _refuse(keyword, value, "log the norms in on_before_optimizer_step: self.log_dict(grad_norm(self, norm_type=p))")
    if keyword in ("auto_lr_find", "auto_scale_batch_size", "stochastic_weight_avg", "terminate_on_nan",
                   "weights_save_path", "prepare_data_per_node", "auto_select_gpus"):
        if value in (None, False) or (keyword == "prepare_data_per_node" and value is True):
            return None
        _refuse(keyword, value, {
            "auto_lr_find": "use lightning's Tuner(trainer).lr_find(model)",
            "auto_scale_batch_size": "use lightning's Tuner(trainer).scale_batch_size(model)",
            "stochastic_weight_avg": "add callbacks=[StochasticWeightAveraging(swa_lrs=...)] (2.x requires swa_lrs)",
            "terminate_on_nan": "add callbacks=[EarlyStopping(monitor=..., check_finite=True)]",
            "weights_save_path": "give ModelCheckpoint(dirpath=...) the folder",
            "prepare_data_per_node": "set prepare_data_per_node on the LightningModule or LightningDataModule",
            "auto_select_gpus": "pass gpus as a number with it, or devices=find_usable_cuda_devices(n)",
        }[keyword])
    raise AssertionError(keyword)


# the keywords 1.5-1.9 had and 2.x has not, with 1.x's default and its command-line type (1.9's add_argparse_args)
LEGACY = {
    "gpus": (None, "gpus"), "num_processes": (None, int), "tpu_cores": (None, "gpus"), "ipus": (None, int),
    "auto_select_gpus": (None, bool), "distributed_backend": (None, str), "resume_from_checkpoint": (None, str),
    "checkpoint_callback": (None, bool), "replace_sampler_ddp": (True, bool), "weights_summary": ("top", str),
    "progress_bar_refresh_rate": (None, int), "process_position": (0, int), "flush_logs_every_n_steps": (None, int),
    "reload_dataloaders_every_epoch": (False, bool), "move_metrics_to_cpu": (False, bool), "amp_backend": (None, str),
    "amp_level": (None, str), "log_gpu_memory": (None, str), "multiple_trainloader_mode": ("max_size_cycle", str),
    "track_grad_norm": (-1, float), "auto_lr_find": (False, "bool_or_str"), "auto_scale_batch_size": (False, "bool_or_str"),
    "stochastic_weight_avg": (False, bool), "terminate_on_nan": (None, bool), "weights_save_path": (None, str),
    "prepare_data_per_node": (None, bool),
}


def _building_as_1x(removed):
    """Trainer.__init__ taking the 1.x keywords the installed Trainer lacks (``removed``)."""
    hardware = "gpus" in removed

    def build(wrapped, trainer, args, kwargs):
        legacy = {keyword: kwargs.pop(keyword) for keyword in list(kwargs) if keyword in removed}
        accelerator = kwargs.get("accelerator")
        if not legacy and not (hardware and isinstance(accelerator, str) and (
                accelerator in STRATEGY_ACCELERATORS or accelerator in REFUSED_STRATEGIES)):
            return wrapped(*args, **kwargs)
        return _build(wrapped, trainer, args, kwargs, legacy, hardware)

    return build


def _build(wrapped, trainer, args, kwargs, legacy, hardware):
    resume = legacy.get("resume_from_checkpoint")
    notes = _translate(kwargs, legacy, hardware)
    inform_once("pl_trainer_args: a Trainer built with pytorch-lightning 1.x keywords, built as 1.x built it "
                f"(accelerator={kwargs.get('accelerator')!r}, devices={kwargs.get('devices', 'auto')!r}, "
                f"strategy={kwargs.get('strategy', 'auto')!r})" + (": " + "; ".join(notes) if notes else ""))
    result = wrapped(*args, **kwargs)
    if resume is not None:
        _RESUME[trainer] = resume
    return result


def _resuming(wrapped, trainer, args, kwargs):
    """fit() without a ckpt_path resumes from the Trainer's resume_from_checkpoint, as 1.x's fit did."""
    resume = _RESUME.get(trainer)
    if resume is not None and len(args) < 5 and kwargs.get("ckpt_path") is None:
        kwargs["ckpt_path"] = resume
    return wrapped(*args, **kwargs)


def _str_to_bool(value):
    lowered = str(value).lower()
    if lowered in ("y", "yes", "t", "true", "on", "1"):
        return True
    if lowered in ("n", "no", "f", "false", "off", "0"):
        return False
    raise ValueError(f"invalid truth value {value}")


def _bool_or(kind):
    def parse(value):
        try:
            return _str_to_bool(value)
        except ValueError:
            return kind(value)
    return parse


def _gpus_type(value):
    return value if isinstance(value, str) and "," in value else int(value)


def _int_or_float(value):
    return float(value) if "." in str(value) else int(value)


def _precision_type(value):
    try:
        return int(value)
    except ValueError:
        return value


def _value_types(annotation):
    """The plain types a parameter's annotation admits (Literal values' types; Optional and Union flattened)."""
    import typing

    arguments = typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Literal:
        return {type(value) for value in arguments}
    if arguments and typing.get_origin(annotation) is typing.Union:
        return set().union(*(_value_types(argument) for argument in arguments))
    return {annotation} if isinstance(annotation, type) else set()


def _flags(cls):
    """(name, argparse type, nargs-const or None, default) for each command-line flag of ``cls``, by 1.9's rules."""
    flags = []
    for name, parameter in inspect.signature(cls.__init__).parameters.items():
        if name in ("self", "args", "kwargs") or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        types = _value_types(parameter.annotation) & {str, int, float, bool}
        default = None if parameter.default is parameter.empty else parameter.default
        if name == "precision":
            flags.append((name, _precision_type, False, default))
        elif bool in types:
            others = types - {bool}
            kind = _str_to_bool if not others else _bool_or(int if int in others else str)
            flags.append((name, kind, True, default))
        elif types == {int, float}:
            flags.append((name, _int_or_float, False, default))
        elif types:
            flags.append((name, next(kind for kind in (str, int, float) if kind in types), False, default))
    if issubclass(cls, _trainer_class()):
        kinds = {"gpus": _gpus_type, bool: _str_to_bool, "bool_or_str": _bool_or(str)}
        flags += [(name, kinds.get(kind, kind), kind in (bool, "bool_or_str"), default)
                  for name, (default, kind) in LEGACY.items()]
    return flags


def _trainer_class():
    import sys

    return sys.modules[TRAINER_MODULE].Trainer


def add_argparse_args(cls, parent_parser, *, use_argument_group=True):
    if isinstance(parent_parser, argparse._ArgumentGroup):
        raise RuntimeError("Please only pass an ArgumentParser instance.")
    if use_argument_group:
        group_name = cls.__module__.split(".")[0] + "." + cls.__qualname__
        if group_name.startswith("pytorch_lightning."):
            group_name = "pl." + cls.__qualname__
        parser = parent_parser.add_argument_group(group_name)
    else:
        parser = argparse.ArgumentParser(parents=[parent_parser], add_help=False)
    for name, kind, optional_value, default in _flags(cls):
        extra = {"nargs": "?", "const": True} if optional_value else {}
        parser.add_argument(f"--{name}", dest=name, type=kind, default=default, **extra)
    return parent_parser if use_argument_group else parser


def parse_argparser(cls, arg_parser):
    args = arg_parser.parse_args() if isinstance(arg_parser, argparse.ArgumentParser) else arg_parser
    booleans = {name for name, kind, optional_value, default in _flags(cls) if optional_value and isinstance(default, bool)}
    return argparse.Namespace(**{name: True if value is None and name in booleans else value
                                 for name, value in vars(args).items()})


def from_argparse_args(cls, args, **kwargs):
    if isinstance(args, argparse.ArgumentParser):
        args = cls.parse_argparser(args)
    params = vars(args)
    accepted = set(inspect.signature(cls.__init__).parameters)
    if issubclass(cls, _trainer_class()):
        accepted |= set(LEGACY)
    chosen = {name: params[name] for name in params if name in accepted}
    chosen.update(**kwargs)
    return cls(**chosen)


def _root_gpu(trainer):
    device = trainer.strategy.root_device
    return device.index if device.type == "cuda" else None


def _gpu_ids(trainer):
    from pytorch_lightning.accelerators import CUDAAccelerator

    return trainer.device_ids if isinstance(trainer.accelerator, CUDAAccelerator) else None


ATTRIBUTES = {
    "root_gpu": _root_gpu,
    "training_type_plugin": lambda trainer: trainer.strategy,
    "num_gpus": lambda trainer: len(_gpu_ids(trainer) or ()),
    "data_parallel_device_ids": _gpu_ids,
    "use_amp": lambda trainer: str(trainer.precision).startswith(("16", "bf16")) and "mixed" in str(trainer.precision),
    "resume_from_checkpoint": lambda trainer: _RESUME.get(trainer),
    "disable_validation": lambda trainer: not trainer.enable_validation,
}


def _apply_to_trainer(patcher, module):
    trainer = getattr(module, "Trainer", None)
    if trainer is None:
        raise NotNeeded(f"{module.__name__} has no Trainer")
    accepted = inspect.signature(trainer.__init__).parameters
    removed = {keyword for keyword in LEGACY if keyword not in accepted}
    helpers = {name: classmethod(globals()[name]) for name in HELPERS if lacks(trainer, name)}
    attributes = {name: property(getter) for name, getter in ATTRIBUTES.items() if lacks(trainer, name)}
    if not (removed or helpers or attributes):
        raise NotNeeded("the Trainer still has 1.x's keywords, argparse helpers and attributes")
    if removed:
        patcher.wrap(trainer, "__init__", _building_as_1x(removed))
    if "resume_from_checkpoint" in removed:
        patcher.wrap(trainer, "fit", _resuming)
    patcher.add_methods(trainer, helpers)
    patcher.add_methods(trainer, attributes)
    back = [what for what, names in (("keywords", removed), ("argparse helpers", helpers), ("attributes", attributes))
            if names]
    return f"the Trainer has 1.x's {', '.join(back)} again"


def apply(patcher, module):
    if module.__name__ == TRAINER_MODULE:
        return _apply_to_trainer(patcher, module)
    datamodule = module.LightningDataModule
    missing = {name: classmethod(globals()[name]) for name in HELPERS if lacks(datamodule, name)}
    if not missing:
        raise NotNeeded("LightningDataModule still has its argparse helpers")
    patcher.add_methods(datamodule, missing)
    return "LightningDataModule's argparse helpers are back"


PATCH = Patch(
    "pl_trainer_args",
    since="0.4.0",
    summary="Trainer(gpus=, resume_from_checkpoint=, ...), Trainer.add_argparse_args / from_argparse_args and "
    "trainer.root_gpu built and answered as pytorch-lightning 1.x did (1.x's CPU default, ddp_spawn for several "
    "devices), or refused with what to use",
    package="pytorch-lightning",
    affected="2.0.0-2.6.6 (swept; the argparse helpers and gpus= went in 2.0, the other keywords and root_gpu before it)",
    targets=(TRAINER_MODULE, DATAMODULE_MODULE),
    apply=apply,
    errors=(r"Trainer\.__init__\(\) got an unexpected keyword argument '(" + "|".join(LEGACY) + ")'",
            r"type object 'Trainer' has no attribute '(" + "|".join(HELPERS) + ")'",
            r"'Trainer' object has no attribute '(" + "|".join(ATTRIBUTES) + ")'"),
    looks_for=(*(f"call pytorch_lightning.{trainer} with {keyword}" for trainer in ("Trainer", "trainer.Trainer")
                 for keyword in LEGACY),
               *(f"call pytorch_lightning.{trainer}.{helper}" for trainer in ("Trainer", "trainer.Trainer")
                 for helper in HELPERS),
               *(f"attribute {name}" for name in ("root_gpu", "training_type_plugin", "data_parallel_device_ids"))),
)
