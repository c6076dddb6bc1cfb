"""hf_fsdp_version: legacy code's ``--fsdp "full_shard auto_wrap"`` runs FSDP1 again, as on transformers 4 and 5.0-5.9.

Breaks: transformers 5.10 made FSDP2 (``fully_shard``) the default of the HF Trainer's FSDP (``fsdp_config``'s
``version``: 1 until 5.9). The 2023 fine-tuners launch with ``--fsdp "full_shard auto_wrap"`` and use FSDP1's API
on the model the Trainer wrapped: FastChat's ``trainer_save_model_safe`` (``FSDP.state_dict_type(trainer.model,
StateDictType.FULL_STATE_DICT, ...)``) fails its final save with "KeyError: None" after the whole training run,
and a launch naming an FSDP1-only strategy (``--fsdp "hybrid_shard"``) is refused: "`fsdp=hybrid_shard` is only
available with FSDP1".

Changes, where ``fsdp`` is given the 4.x way (a string or a list of options) and its ``fsdp_config`` names no
``version``: the config gets ``version: 1``, FSDP1, as the code was written for (transformers' own FSDP1 path, which
5.24 still has),
- for any code when the options name a sharding strategy FSDP2 refuses (``no_shard``, ``hybrid_shard``,
  ``hybrid_shard_zero2``): 5.10 refuses that launch, so no code written for it makes one, and no legacy decision is
  taken;
- for ``full_shard`` / ``shard_grad_op`` (or no strategy), which 5.10 runs under FSDP2, only for code written for
  transformers < 5.10 (``zeropatch._legacy``: its repository's pin of transformers, or ``ZEROPATCH_LEGACY``). For code
  not known to be legacy nothing changes, and the first such launch says once that it runs FSDP2, with the switch.
A version given either way is kept; ``fsdp=True`` (5.x's spelling) is left alone. The decision is in ``status`` and
the job report.
"""

from zeropatch._core import NotNeeded, Patch, Skip, inform_once, warn_once
from zeropatch._legacy import ENV_LEGACY, Tally, decide, decided

CHANGED_IN = "5.10"
FSDP1_ONLY = ("no_shard", "hybrid_shard", "hybrid_shard_zero2")  # strategies 5.10 refuses under FSDP2
OLD = "--fsdp given as options: FSDP1, as transformers <= 5.9 (old contract)"
REFUSED = "--fsdp naming an FSDP1-only strategy: FSDP1 (FSDP2 refuses it)"
NEW = "--fsdp given as options: FSDP2 (transformers 5.10's contract kept)"
_TALLY = Tally()  # OLD / NEW -> how many TrainingArguments each contract decided


def _options(fsdp):
    """The options of ``fsdp`` given the 4.x way (a string or a list of them, enum members included), lowercased."""
    items = fsdp.split() if isinstance(fsdp, str) else list(fsdp) if isinstance(fsdp, (list, tuple)) else []
    return [str(getattr(item, "value", item)).lower() for item in items]


def _fsdp1_for_legacy_code(wrapped, instance, args, kwargs):
    fsdp = args[0] if args else kwargs.get("fsdp")
    fsdp_config = args[1] if len(args) > 1 else kwargs.get("fsdp_config")
    if not isinstance(fsdp_config, dict) or "version" in fsdp_config:
        return wrapped(*args, **kwargs)
    refused = sorted(set(_options(fsdp)) & set(FSDP1_ONLY))
    if refused:  # no legacy decision: 5.10 refuses these strategies under FSDP2, so no code written for it gets here
        fsdp_config["version"] = 1
        _TALLY.count(REFUSED)
        inform_once(f"hf_fsdp_version: --fsdp {' '.join(refused)} runs FSDP1, the only FSDP that takes it "
                    f"(transformers >= 5.10 defaults to FSDP2, which refuses it)")
        return wrapped(*args, **kwargs)
    # legacy decision: a changed default (fsdp_config's version, 1 -> 2 in 5.10), which code written for 5.10 relies on
    decision = decide("transformers", CHANGED_IN)
    if decision.legacy:
        fsdp_config["version"] = 1  # the dict TrainingArguments reads its FSDP version from next
        _TALLY.count(OLD)
        inform_once(f"hf_fsdp_version: --fsdp runs FSDP1, as transformers <= 5.9 did ({decision.why})")
    else:
        _TALLY.count(NEW)
        warn_once(f"hf_fsdp_version: --fsdp runs FSDP2 (transformers >= 5.10; 5.9 and 4.x ran FSDP1, whose API "
                  f"FSDP.state_dict_type is then refused on the model). This code is not known to be written for "
                  f"transformers < 5.10 ({decision.why}); if it is, {ENV_LEGACY}=transformers restores FSDP1")
    return wrapped(*args, **kwargs)


def report():
    decision = decided("transformers", CHANGED_IN)
    return _TALLY.report(decision and decision.why)


def apply(patcher, training_args):
    arguments = getattr(training_args, "TrainingArguments", None)
    if arguments is None:
        raise Skip("transformers.training_args has no TrainingArguments")
    if "_apply_legacy_fsdp_to_config" not in vars(arguments):
        raise NotNeeded("transformers < 5.10 runs FSDP1 for --fsdp given as options")
    patcher.wrap(arguments, "_apply_legacy_fsdp_to_config", _fsdp1_for_legacy_code)
    decision = decide("transformers", CHANGED_IN)
    contract = "old contract: FSDP1" if decision.legacy else "new contract kept: FSDP2"
    return f"--fsdp naming an FSDP1-only strategy: FSDP1; other options: {contract} ({decision.why})"


PATCH = Patch(
    "hf_fsdp_version",
    since="0.4.0",
    summary="legacy code's --fsdp \"full_shard auto_wrap\" runs FSDP1 (as transformers 4 and <= 5.9), whose API it "
    "calls on the model, not FSDP2",
    package="transformers",
    affected="5.10.1-5.24.0",
    targets=("transformers.training_args",),
    apply=apply,
    report=report,
    errors=(r"is only available with FSDP1",
            r"_state_dict_type_to_config\[state_dict_type\][\s\S]{0,300}KeyError: None"),  # FSDP1's API, no FSDP1
    looks_for=("option --fsdp",
               *(f"call transformers.{arguments} with fsdp"
                 for arguments in ("TrainingArguments", "training_args.TrainingArguments"))),
)
