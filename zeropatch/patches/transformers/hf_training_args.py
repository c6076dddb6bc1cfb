"""hf_training_args: the TrainingArguments options the 2023 fine-tuners pass take effect again, as on transformers 4.

Breaks: stanford_alpaca, FastChat and LLaVA-1.5 launch ``train.py`` with ``--evaluation_strategy "no"``,
``--warmup_ratio 0.03``, ``--fsdp_transformer_layer_cls_to_wrap LlamaDecoderLayer``, ``--group_by_length``, ...
through ``HfArgumentParser``. transformers removed the options one release at a time (``evaluation_strategy`` after
4.49.0, which still has it; the rest in 5.x), and the parser stops: "ValueError: Some specified arguments are not used
by the HfArgumentParser: ['--evaluation_strategy', 'no', ...]"; the keyword form,
``TrainingArguments(evaluation_strategy=)``, is a TypeError.

Changes: where the installed TrainingArguments lacks an option and has its successor, ``HfArgumentParser`` (command
line, ``.args`` files, ``parse_dict`` / JSON / YAML) and ``TrainingArguments(...)`` itself take the old option and
give it the effect it had on transformers 4.5x: ``evaluation_strategy`` is ``eval_strategy``; ``no_cuda`` is
``use_cpu``; ``per_gpu_{train,eval}_batch_size`` is ``per_device_*`` (which it overrode); ``group_by_length`` is
``train_sampling_strategy="group_by_length"`` (the same LengthGroupedSampler); ``warmup_ratio`` r (0 < r < 1) is
``warmup_steps=r``, which transformers 5 reads as a ratio with 4.x's rounding (``ceil(steps * r)``), unless
``warmup_steps`` is set, which won in 4.x too; ``fsdp_transformer_layer_cls_to_wrap`` joins ``fsdp_config``'s
``transformer_layer_cls_to_wrap`` list, as 4.x put it there; ``logging_dir`` is TensorBoard's directory again
(``TENSORBOARD_LOGGING_DIR``, which transformers 5 reads) and readable as ``args.logging_dir``;
``overwrite_output_dir``, which only scripts read, is readable again as ``args.overwrite_output_dir``;
``save_safetensors`` is readable again as ``args.save_safetensors``, which ``hf_safe_serialization`` obeys;
``use_mps_device``, a no-op since 4.3x (mps is used where it is available), is accepted; ``report_to=None``
(alpaca-lora without wandb) is "all", every installed integration, as 4.x took it (5.x passes None on to the Trainer,
which refuses it: "ValueError: None is not supported"). Each translation is logged once. Silently, transformers 5
also stopped setting ``local_rank`` when it sets up the device (4.x made it the process's local index: 0 in one
process, LOCAL_RANK under torchrun); FastChat's ``train_lora.py`` saves its adapter only
``if training_args.local_rank == 0``, so on 5.x it trains and saves nothing. For code written for transformers 4 (its pins
decide, as for ``hf_checkpoint_dtype``), ``local_rank`` is set as 4.x set it again; the decision is in the job
report. An old option with no such successor on the installed release is left to fail as it does. A subclass of
TrainingArguments built with the old keywords directly (not through the parser) is not reached: its own dataclass
``__init__`` refuses them first (``unfixable`` says what to pass instead).
"""

import contextvars
import functools
import json
import os
import sys

from zeropatch._core import NotNeeded, Patch, Skip, inform_once, installed_version, version_tuple
from zeropatch._legacy import Tally, decide, decided

RENAMED = {"evaluation_strategy": "eval_strategy", "no_cuda": "use_cpu",
           "per_gpu_train_batch_size": "per_device_train_batch_size",
           "per_gpu_eval_batch_size": "per_device_eval_batch_size"}
SPECIAL = {"group_by_length": "train_sampling_strategy", "warmup_ratio": "warmup_steps",
           "fsdp_transformer_layer_cls_to_wrap": "fsdp_config", "logging_dir": None, "overwrite_output_dir": None,
           "use_mps_device": None, "save_safetensors": None}  # old option -> its field (None: kept beside them)
KEPT_AS_ATTRIBUTES = ("logging_dir", "overwrite_output_dir", "save_safetensors")
BOOLEANS = ("overwrite_output_dir", "save_safetensors")  # kept options read as booleans
MERGED_WITH = ("warmup_steps", "fsdp_config")  # successors an old option's value is combined with
TRUE_WORDS = ("true", "1", "yes", "y", "t")
LOCAL_RANK_UNSET_IN = "5.0"  # 4.x set local_rank to the process's local index at device set-up; 5.x leaves -1
_TALLY = Tally()
_kept = contextvars.ContextVar("zeropatch_training_args_kept", default=None)  # old option -> value, for one parse


def legacy_options(fields):
    """The old options the installed TrainingArguments lacks and can take through a successor it has."""
    found = {old: new for old, new in RENAMED.items() if old not in fields and new in fields}
    found.update({old: new for old, new in SPECIAL.items() if old not in fields and (new is None or new in fields)})
    return found


def _boolean(value):
    return value if isinstance(value, bool) else str(value).strip().lower() in TRUE_WORDS


def translate(values, options):
    """``values`` (option -> value, as parsed) with the old options given their successors' form; returns the new
    mapping and the old options kept beside the fields (logging_dir, overwrite_output_dir)."""
    values, kept = dict(values), {}
    for old in [name for name in values if name in options]:
        value = values.pop(old)
        if old in RENAMED:
            values.setdefault(RENAMED[old], value)
        elif old == "group_by_length":
            if _boolean(value):
                values.setdefault("train_sampling_strategy", "group_by_length")
        elif old == "warmup_ratio":
            ratio = float(value)
            if ratio >= 1 or ratio < 0:
                raise ValueError(f"zeropatch (hf_training_args): --warmup_ratio {value}: transformers 5 takes a ratio in "
                                 f"[0, 1) as --warmup_steps; give the number of warmup steps instead")
            if ratio and not float(values.get("warmup_steps") or 0):  # 4.x: warmup_steps > 0 won over the ratio
                values["warmup_steps"] = ratio
        elif old == "fsdp_transformer_layer_cls_to_wrap":
            values["fsdp_config"] = _with_layer_class(values.get("fsdp_config"), value)
        elif old in KEPT_AS_ATTRIBUTES:
            kept[old] = _boolean(value) if old in BOOLEANS else value
        inform_once(f"hf_training_args: {old} taken as transformers 4 took it (TrainingArguments has no {old})")
    return values, kept


def _with_layer_class(fsdp_config, layer_class):
    """``fsdp_config`` (None, a dict, a JSON string or a JSON file's path) with ``layer_class`` appended to its
    ``transformer_layer_cls_to_wrap``, as transformers 4 appended it."""
    if fsdp_config is None:
        config = {}
    elif isinstance(fsdp_config, dict):
        config = dict(fsdp_config)
    elif str(fsdp_config).lstrip().startswith("{"):
        config = json.loads(fsdp_config)
    else:
        with open(fsdp_config, encoding="utf-8") as file:
            config = json.load(file)
    key = "transformer_layer_cls_to_wrap" if "fsdp_transformer_layer_cls_to_wrap" not in config else \
        "fsdp_transformer_layer_cls_to_wrap"
    listed = config.get(key) or []
    config[key] = ([listed] if isinstance(listed, str) else list(listed)) + [layer_class]
    return config


def _keep_on(arguments, kept):
    if "logging_dir" in kept:
        os.environ.setdefault("TENSORBOARD_LOGGING_DIR", os.path.expanduser(str(kept["logging_dir"])))
    for name, value in kept.items():
        object.__setattr__(arguments, name, value)


def _training_arguments_classes(parser):
    from transformers import TrainingArguments

    return [kind for kind in parser.dataclass_types if isinstance(kind, type) and issubclass(kind, TrainingArguments)]


def _options_of(kind):
    import dataclasses

    return legacy_options({field.name for field in dataclasses.fields(kind)})


def _command_line(arguments, options):
    """argv with the old options rewritten: ``--old value``, ``--old=value``, and a bare boolean ``--old``. The
    successors an old option merges with (``--warmup_steps``, ``--fsdp_config``) are read too, and stay."""
    rewritten, index, values = [], 0, {}
    while index < len(arguments):
        word = arguments[index]
        name, equals, value = word[2:].partition("=") if word.startswith("--") else ("", "", "")
        name = name.replace("-", "_")
        if name not in options and name not in MERGED_WITH:
            rewritten.append(word)
            index += 1
            continue
        if not equals:
            following = arguments[index + 1] if index + 1 < len(arguments) else None
            if following is not None and not following.startswith("--"):
                value, index = following, index + 1
            else:
                value = True  # a bare boolean flag
        if name in MERGED_WITH:
            rewritten += [word] if equals else [word, str(value)]
        values[name] = value
        index += 1
    translated, kept = translate(values, options)
    for name, value in translated.items():
        if name not in values or value is not values[name]:  # a successor set or merged (last one wins)
            rewritten += [f"--{name}", json.dumps(value) if isinstance(value, dict) else str(value)]
    return rewritten, kept


def _parse_known_args(wrapped, parser, args, kwargs):
    kinds = _training_arguments_classes(parser) if hasattr(parser, "dataclass_types") else []
    arguments = kwargs.get("args", args[0] if args else None)
    if not kinds:
        return wrapped(*args, **kwargs)
    arguments = sys.argv[1:] if arguments is None else arguments  # argparse's own default
    options = _options_of(kinds[0])
    rewritten, kept = _command_line(list(arguments), options)
    rest = {key: value for key, value in kwargs.items() if key != "args"}
    parsed = wrapped(rewritten, *args[1:], **rest)
    if _kept.get() is not None:  # parse_args_into_dataclasses puts them on the TrainingArguments it builds
        _kept.get().update(kept)
    elif kept:  # argparse's own parse_args / parse_known_args: on the namespace
        _keep_on(parsed[0], kept)
    return parsed


def _parse_into_dataclasses(wrapped, parser, args, kwargs):
    token = _kept.set({})
    try:
        outputs = wrapped(*args, **kwargs)
        kept = _kept.get()
    finally:
        _kept.reset(token)
    _keep_on_training_arguments(parser, outputs, kept)
    return outputs


def _parse_dict(wrapped, parser, args, kwargs):
    values = kwargs.get("args", args[0] if args else None)
    kinds = _training_arguments_classes(parser)
    if not kinds or not isinstance(values, dict):
        return wrapped(*args, **kwargs)
    translated, kept = translate(_report_to_as_4x(kinds[0], values), _options_of(kinds[0]))
    rest = {key: value for key, value in kwargs.items() if key != "args"}
    outputs = wrapped(translated, *args[1:], **rest)
    _keep_on_training_arguments(parser, outputs, kept)
    return outputs


def _keep_on_training_arguments(parser, outputs, kept):
    if not kept:
        return
    kinds = tuple(_training_arguments_classes(parser))
    for output in outputs if isinstance(outputs, tuple) else (outputs,):
        if kinds and isinstance(output, kinds):
            _keep_on(output, kept)


def _report_to_as_4x(kind, values):
    """``report_to=None`` as 4.x took it: "all" (every installed integration). 5.x's default is "none", and None
    reaches the Trainer, which refuses it; on 4.x (whose default is None) nothing changes."""
    import dataclasses

    if "report_to" not in values or values["report_to"] is not None:
        return values
    default = next((field.default for field in dataclasses.fields(kind) if field.name == "report_to"), None)
    if default is None:
        return values
    inform_once("hf_training_args: report_to=None is 'all' (every installed integration), as transformers 4 took it")
    return {**values, "report_to": "all"}


def _init_with_old_keywords(wrapped, arguments, args, kwargs):
    kwargs = _report_to_as_4x(type(arguments), kwargs)
    options = _options_of(type(arguments))
    if not options.keys() & kwargs.keys():
        return wrapped(*args, **kwargs)
    translated, kept = translate(kwargs, options)
    wrapped(*args, **translated)
    _keep_on(arguments, kept)


def _local_rank_as_4x(setup_devices):
    """TrainingArguments' device set-up, after which 4.x set ``local_rank`` to the process's local index (0 for one
    process, LOCAL_RANK under torchrun); 5.x leaves the field at -1. For code written for 4.x only."""
    def set_up(arguments):
        device = setup_devices(arguments)
        state = getattr(arguments, "distributed_state", None)
        # legacy decision: a changed default (local_rank left at -1 after device set-up since 5.0), which code
        # written for 5.x relies on; the removed options above need none (5.x refuses them)
        if state is not None and arguments.local_rank == -1 and decide("transformers", LOCAL_RANK_UNSET_IN).legacy:
            arguments.local_rank = state.local_process_index
            _TALLY.count("local_rank set to the process's local index (4.x)")
        return device

    return set_up


def report():
    decision = decided("transformers", LOCAL_RANK_UNSET_IN)  # None: no device set up in this process
    return _TALLY.report(decision and f"TrainingArguments.local_rank as transformers 4 set it: {decision.legacy} "
                                      f"({decision.why})")


def apply(patcher, module):
    if module.__name__ == "transformers.hf_argparser":
        parser = getattr(module, "HfArgumentParser", None)
        if parser is None or not hasattr(parser, "parse_args_into_dataclasses") or not hasattr(parser, "parse_dict"):
            raise Skip("HfArgumentParser has no parse_args_into_dataclasses / parse_dict")
        from transformers import TrainingArguments

        if not _options_of(TrainingArguments):
            raise NotNeeded("TrainingArguments still has the options transformers 4.5x had")
        patcher.wrap(parser, "parse_known_args", _parse_known_args)
        patcher.wrap(parser, "parse_args_into_dataclasses", _parse_into_dataclasses)
        patcher.wrap(parser, "parse_dict", _parse_dict)
        return "HfArgumentParser takes " + ", ".join(sorted(_options_of(TrainingArguments)))
    arguments_class = getattr(module, "TrainingArguments", None)
    if arguments_class is None:
        raise Skip("transformers.training_args has no TrainingArguments")
    if not _options_of(arguments_class):
        raise NotNeeded("TrainingArguments still has the options transformers 4.5x had")
    patcher.wrap(arguments_class, "__init__", _init_with_old_keywords)
    setup = vars(arguments_class).get("_setup_devices")
    if isinstance(setup, functools.cached_property) and version_tuple(installed_version("transformers") or "0") >= (5,):
        kept = functools.cached_property(_local_rank_as_4x(setup.func))
        kept.__set_name__(arguments_class, "_setup_devices")
        patcher.set(arguments_class, "_setup_devices", kept)
    return "TrainingArguments(...) takes " + ", ".join(sorted(_options_of(arguments_class)))


PATCH = Patch(
    "hf_training_args",
    since="0.4.0",
    summary="TrainingArguments options transformers removed after 4.49 (--evaluation_strategy, --warmup_ratio, "
    "--fsdp_transformer_layer_cls_to_wrap, --group_by_length, ...) take effect as on 4.5x, through HfArgumentParser "
    "and TrainingArguments(...)",
    package="transformers",
    affected="4.51.3-5.23.0",
    targets=("transformers.hf_argparser", "transformers.training_args"),
    apply=apply,
    report=report,
    errors=(r"Some specified arguments are not used by the HfArgumentParser: \[[^\]]*'--(" +
            "|".join([*RENAMED, *SPECIAL]) + ")'",
            r"Some keys are not used by the HfArgumentParser: \[[^\]]*'(" + "|".join([*RENAMED, *SPECIAL]) + ")'",
            r"TrainingArguments\.__init__\(\) got an unexpected keyword argument '(" + "|".join([*RENAMED, *SPECIAL])
            + ")'"),
    unfixable=((r"__init__\(\) got an unexpected keyword argument '(" + "|".join([*RENAMED, *SPECIAL]) + ")'",
                "a TrainingArguments subclass built with an option transformers removed: pass its successor "
                "(evaluation_strategy -> eval_strategy, no_cuda -> use_cpu, warmup_ratio -> warmup_steps as a "
                "ratio, group_by_length -> train_sampling_strategy='group_by_length'), or build it through "
                "HfArgumentParser, which zeropatch's hf_training_args translates"),),
    # an option of HfArgumentParser's command line, not a script's own argparse option of the same name
    looks_for=(*(f"option --{option} of transformers.HfArgumentParser|transformers.*TrainingArguments"
                 for option in (*RENAMED, *SPECIAL)),
               *(f"call transformers.{arguments} with {option}" for option in (*RENAMED, *SPECIAL)
                 for arguments in ("TrainingArguments", "training_args.TrainingArguments"))),
)
