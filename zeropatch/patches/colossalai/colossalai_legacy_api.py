"""colossalai_legacy_api: ColossalAI 0.2-0.3 training code finds its API again on 0.4-0.5, with the meaning it had,
where it can be bridged: ``colossalai.nn.parallel``, ``ColoInitContext``, ``zero_optim_wrapper``'s ``optim_config``,
``colossalai.tensor``'s ``ProcessGroup`` and ``ComputeSpec``, ``colossalai.get_default_parser``, and Gemini's 0.3
keywords (``device=``, ``placement_policy="cpu"``).

Breaks: 0.3.3 (the 0.3 releases of mid-2023) moved the tensor-parallel ``ColoTensor`` machinery and the old engine
under ``colossalai.legacy`` and rebuilt Gemini, so the examples and applications of 0.2-0.3 (``examples/language/gpt/
gemini/train_gpt_demo.py``, the OPT demo) die at import: "No module named 'colossalai.nn.parallel'", "cannot import
name 'ProcessGroup' from 'colossalai.tensor'", "module 'colossalai' has no attribute 'get_default_parser'"; past
them, ``ColoInitContext`` (answered by ``moved_names`` with the legacy class) fails building the first layer
("'ColoParameter' object has no attribute 'shared_param_modules'"), ``zero_optim_wrapper(..., optim_config={"verbose":
True})`` with "got multiple values for keyword argument 'verbose'" (0.4 added ``verbose`` beside the config), and
``GeminiDDP(model, device=..., placement_policy="cpu")`` / ``GeminiPlugin(device=...)`` with "unexpected keyword
argument 'device'".

Changes: where the installed release lacks them, ``colossalai.get_default_parser`` is ColossalAI's own, kept in
``colossalai.legacy.initialize`` (the same parser), ``colossalai.tensor.ProcessGroup`` / ``ComputeSpec`` the classes
kept in ``colossalai.legacy.tensor``; ``colossalai.nn.parallel`` is provided with today's ``zero_model_wrapper``,
``zero_optim_wrapper`` and ``GeminiDDP`` (the same wrappers: stage 1-2 leave the model as it is and give a
LowLevelZeroOptimizer, stage 3 Gemini). ``ColoInitContext`` (in ``colossalai.zero``, ``colossalai.zero.gemini`` and a
provided ``colossalai.utils.model.colo_init_context``) does what 0.3's did to a model built inside it, with plain
parameters (GeminiDDP and the plugins take those since 0.3.3): at the end of each module's constructor its parameters
are moved to ``device`` in ``dtype`` (each shared one once), its buffers to ``device``. ``zero_optim_wrapper`` takes
``verbose`` from ``optim_config`` as 0.2-0.3 did (the config went to the optimizer whole). Gemini's 0.3 keywords are
today's: ``device`` is ``chunk_init_device``, ``search_range_mb`` / ``min_chunk_size_mb`` are ``search_range_m`` /
``min_chunk_size_m``, and ``placement_policy="cpu"`` / ``"cuda"`` are the static placements ColossalAI documents as
equal to them (everything sharded and offloaded; sharded, optimizer states on the device). Not bridged, and refused
with today's way: tensor parallelism through ColoTensor specs (``ColoInitContext(default_dist_spec=ShardSpec(...))``,
a process group of more than one tensor-parallel rank: use a plugin's ``tp_size``), ``ZeroDDP(model,
gemini_manager)`` (use ``GeminiDDP(model, placement_policy=...)``). No legacy decision: every change answers a name,
a keyword or a value the installed release refuses.
"""

from zeropatch._core import NotNeeded, Patch, Skip, inform_once, is_provided, lacks

PARALLEL = "colossalai.nn.parallel"
INIT_CONTEXT = "colossalai.utils.model.colo_init_context"
CONTEXT_HOMES = ("colossalai.zero", "colossalai.zero.gemini")
# module -> name -> (the module ColossalAI keeps it in now, its name there)
KEPT = {"colossalai": {"get_default_parser": ("colossalai.legacy.initialize", "get_default_parser")},
        "colossalai.tensor": {"ProcessGroup": ("colossalai.legacy.tensor", "ProcessGroup"),
                              "ComputeSpec": ("colossalai.legacy.tensor", "ComputeSpec")}}
GEMINI = {"colossalai.zero.gemini.gemini_ddp": "GeminiDDP", "colossalai.booster.plugin.gemini_plugin": "GeminiPlugin"}
WRAPPER_HOME = "colossalai.zero.wrapper"
RENAMED = {"device": "chunk_init_device", "search_range_mb": "search_range_m", "min_chunk_size_mb": "min_chunk_size_m"}
# 0.3's placement policies as the static placement ColossalAI documents as equal to each
PLACEMENTS = {"cpu": {"shard_param_frac": 1.0, "offload_optim_frac": 1.0, "offload_param_frac": 1.0},
              "cuda": {"shard_param_frac": 1.0, "offload_optim_frac": 0.0, "offload_param_frac": 0.0}}
NOT_BRIDGED_TP = ("tensor parallelism through ColoTensor process groups and specs (0.2-0.3's shardinit, "
                  "tensor_parallelize) is not bridged: ColossalAI 0.3.3 removed it. Shard the model with a plugin's "
                  "tp_size instead (GeminiPlugin(tp_size=...), HybridParallelPlugin(tp_size=...))")
_CONTEXT = []  # the ColoInitContext class, made once (it derives from a ColossalAI class)


def _refuse_sharding(default_pg, default_dist_spec):
    tensor_parallel = getattr(default_pg, "tp_world_size", lambda: 1)()
    placement = getattr(getattr(default_dist_spec, "placement", None), "name", None)  # a _DistSpec's: SHARD, REPLICATE
    if tensor_parallel > 1 or placement == "SHARD":
        raise NotImplementedError(f"ColoInitContext(default_pg=..., default_dist_spec=...): {NOT_BRIDGED_TP}")


def _context_class():
    """0.3's ColoInitContext on today's ColossalAI, deriving from the library's own hook of module constructors."""
    if _CONTEXT:
        return _CONTEXT[0]
    import torch
    from colossalai.utils.model.utils import InsertPostInitMethodToModuleSubClasses

    class ColoInitContext(InsertPostInitMethodToModuleSubClasses):
        """Builds a model with its parameters on ``device`` in ``dtype`` (each moved at the end of its module's
        constructor, a shared one once) and its buffers on ``device``, as ColossalAI 0.2-0.3's did, with plain
        parameters (zeropatch's colossalai_legacy_api)."""

        def __init__(self, device=torch.device("cpu"), dtype=torch.float, default_pg=None, default_dist_spec=None):
            _refuse_sharding(default_pg, default_dist_spec)
            super().__init__()
            self._device, self._dtype = device, dtype
            self._made = {}  # id of a parameter this context made -> it (held: its id stays its own)

        def _pre_context_exec(self):
            pass

        def _post_context_exec(self):
            pass

        def _post_init_method(self, module, *args, **kwargs):
            copies = {}  # id of a parameter of this module -> (it, its moved copy): a shared one is moved once; as
            # 0.3's, the originals are let go when the module is done, not kept to the end of the context
            for owner in module.modules():
                for name, param in list(owner._parameters.items()):
                    if param is None or id(param) in self._made or param.device.type == "meta":
                        continue
                    if id(param) not in copies:
                        moved = torch.nn.Parameter(param.detach().to(device=self._device, dtype=self._dtype),
                                                   requires_grad=param.requires_grad)
                        copies[id(param)] = (param, moved)
                        self._made[id(moved)] = moved
                    owner._parameters[name] = copies[id(param)][1]
            buffers = list(module.buffers())
            if not any(buffer.device.type == "meta" for buffer in buffers):
                for buffer in buffers:
                    buffer.data = buffer.data.to(device=self._device)

    _CONTEXT.append(ColoInitContext)
    return ColoInitContext


def _verbose_from_optim_config(wrapped, instance, args, kwargs):
    """zero_optim_wrapper: 0.2-0.3 handed ``optim_config`` whole to the optimizer, ``verbose`` included."""
    import inspect

    bound = inspect.signature(wrapped).bind_partial(*args, **kwargs)
    config = bound.arguments.get("optim_config")
    if isinstance(config, dict) and "verbose" in config and "verbose" not in bound.arguments:
        config = dict(config)
        bound.arguments["verbose"] = config.pop("verbose")
        bound.arguments["optim_config"] = config
        return wrapped(*bound.args, **bound.kwargs)
    return wrapped(*args, **kwargs)


def _gemini_keywords(owner_name):
    """``GeminiDDP`` / ``GeminiPlugin``: 0.3's keywords and placement policies, as today's."""
    def init(wrapped, instance, args, kwargs):
        for old, new in RENAMED.items():
            if old in kwargs:
                if new in kwargs:
                    raise TypeError(f"{owner_name}({old}=..., {new}=...): {old} is {new} since colossalai 0.3.3; "
                                    f"pass only {new}")
                kwargs[new] = kwargs.pop(old)
                inform_once(f"colossalai_legacy_api: {owner_name}({old}=...) -> {new}=... (renamed in colossalai 0.3.3)")
        policy = kwargs.get("placement_policy")
        if policy in PLACEMENTS:
            fractions = PLACEMENTS[policy]
            given = sorted(set(fractions) & set(kwargs))
            if given:
                raise TypeError(f"{owner_name}(placement_policy={policy!r}, {', '.join(given)}=...): 0.3's "
                                f"{policy!r} placement fixed them; pass placement_policy='static' with your fractions")
            kwargs.update(placement_policy="static", **fractions)
            inform_once(f"colossalai_legacy_api: {owner_name}(placement_policy={policy!r}) -> placement_policy="
                        f"'static', {', '.join(f'{key}={value}' for key, value in fractions.items())} (ColossalAI's "
                        f"documented equivalent since 0.3.3)")
        return wrapped(*args, **kwargs)
    return init


def _apply_gemini(patcher, module):
    import inspect

    name = GEMINI[module.__name__]
    owner = getattr(module, name, None)
    if owner is None:
        raise Skip(f"{module.__name__} has no {name}")
    if "device" in inspect.signature(owner.__init__).parameters:
        raise NotNeeded(f"{name} still takes device= (colossalai < 0.3.3)")
    patcher.wrap(owner, "__init__", _gemini_keywords(name))
    return f"{name} takes 0.3's device, search_range_mb, placement_policy='cpu' / 'cuda'"


def _apply_wrapper(patcher, zero):
    """zero_optim_wrapper wrapped where it is defined (``colossalai.zero.wrapper``), and ``colossalai.zero``'s name
    for it made that same wrapper (one object under both names: it pickles as the library's)."""
    import importlib
    import inspect

    home = importlib.import_module(WRAPPER_HOME)
    function = vars(home).get("zero_optim_wrapper")
    if function is None or "verbose" not in inspect.signature(function).parameters:
        raise NotNeeded("zero_optim_wrapper takes no verbose of its own (colossalai < 0.4)")
    original = getattr(function, "__wrapped__", function)
    wrapped = patcher.wrap_function(home, "zero_optim_wrapper", _verbose_from_optim_config)
    if vars(zero).get("zero_optim_wrapper") is original:
        patcher.set(zero, "zero_optim_wrapper", wrapped)
    return "zero_optim_wrapper takes verbose from optim_config"


def apply(patcher, module):
    import importlib

    name = module.__name__
    if name in GEMINI:
        return _apply_gemini(patcher, module)
    if name in (PARALLEL, INIT_CONTEXT):
        if not is_provided(module):
            raise NotNeeded(f"colossalai still has {name} (colossalai < 0.3)")
        zero = importlib.import_module("colossalai.zero")
        names = ({"ColoInitContext": _context_class()} if name == INIT_CONTEXT else
                 {"zero_model_wrapper": zero.zero_model_wrapper, "zero_optim_wrapper": zero.zero_optim_wrapper,
                  "GeminiDDP": zero.GeminiDDP})
        patcher.fill(module, names, f"{name} as ColossalAI 0.2 had it, on today's ColossalAI (provided by "
                                    f"zeropatch's colossalai_legacy_api): {', '.join(names)}")
        return f"{name} provided ({', '.join(names)})"
    done = []
    if name == "colossalai.zero":
        try:
            done.append(_apply_wrapper(patcher, module))
        except NotNeeded:
            pass
    if name in CONTEXT_HOMES and lacks(module, "ColoInitContext"):
        patcher.put_back(module, {"ColoInitContext": _context_class()})
        done.append("ColoInitContext back")
    wanted = {old: where for old, where in KEPT.get(name, {}).items() if lacks(module, old)}
    if wanted:
        try:
            values = {old: getattr(importlib.import_module(home), new) for old, (home, new) in wanted.items()}
        except (ImportError, AttributeError) as error:
            raise Skip(f"colossalai.legacy lacks what {name} had: {error}") from None
        patcher.put_back(module, values)
        done.append(f"{', '.join(values)} back (ColossalAI's own, kept under colossalai.legacy)")
    if not done:
        raise NotNeeded(f"{name} still has its 0.3 API")
    return f"{name}: {'; '.join(done)}"


PATCH = Patch(
    "colossalai_legacy_api",
    since="0.8.0",
    summary="ColossalAI 0.2-0.3 training code finds colossalai.nn.parallel, ColoInitContext, zero_optim_wrapper's "
    "optim_config, colossalai.tensor.ProcessGroup, get_default_parser and Gemini's device= / placement_policy='cpu' "
    "again on 0.4-0.5, with their old meaning; ColoTensor tensor parallelism and ZeroDDP are refused with today's way",
    package="colossalai",
    affected="0.4.0-0.5.0 (swept; the releases since mid-2023 moved the same API: the older ones do not import here)",
    targets=(*KEPT, *CONTEXT_HOMES, *GEMINI, PARALLEL, INIT_CONTEXT),
    provides=(PARALLEL, INIT_CONTEXT),
    apply=apply,
    errors=(r"No module named 'colossalai\.(nn\.parallel|utils\.model\.colo_init_context)'",
            r"cannot import name '(ProcessGroup|ComputeSpec|ColoInitContext)' from 'colossalai\.(tensor|zero)",
            r"module 'colossalai' has no attribute 'get_default_parser'",
            r"cannot import name 'get_default_parser' from 'colossalai'",
            r"'ColoParameter' object has no attribute 'shared_param_modules'",
            r"zero_optim_wrapper\(\) got multiple values for keyword argument 'verbose'|LowLevelZeroOptimizer\(\) got "
            r"multiple values for keyword argument 'verbose'",
            r"(GeminiDDP|GeminiPlugin)\.__init__\(\) got an unexpected keyword argument '(device|search_range_mb|"
            r"min_chunk_size_mb)'",
            r"Unknown tensor placement policy (cpu|cuda)"),
    unfixable=((r"cannot import name 'ZeroDDP'|object has no attribute 'set_dist_spec'",
                "ZeroDDP(model, gemini_manager) and ColoTensor tensor parallelism went in colossalai 0.3.3: build "
                "GeminiDDP(model, placement_policy=...) (or boost with GeminiPlugin), and shard with a plugin's "
                "tp_size", ("name colossalai.zero.ZeroDDP", "name colossalai.nn.parallel.ZeroDDP",
                            "attribute set_dist_spec")),),
    looks_for=(f"import {PARALLEL}", f"import {INIT_CONTEXT}", "name colossalai.tensor.ProcessGroup",
               "name colossalai.tensor.ComputeSpec", "name colossalai.get_default_parser",
               "name colossalai.zero.ColoInitContext", "name colossalai.zero.gemini.ColoInitContext",
               "call colossalai.zero.zero_optim_wrapper with optim_config",
               *(f"call {gemini} with device|search_range_mb|min_chunk_size_mb|placement_policy='cpu'|"
                 "placement_policy='cuda'" for gemini in ("colossalai.zero.GeminiDDP", f"{PARALLEL}.GeminiDDP",
                                                          "colossalai.booster.plugin.GeminiPlugin"))),
)
