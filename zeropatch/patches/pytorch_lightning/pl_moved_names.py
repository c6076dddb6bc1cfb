"""pl_moved_names: the modules and names pytorch-lightning 1.x code imports, where 2.x moved or removed them.

Breaks: "No module named 'pytorch_lightning.utilities.distributed'" (latent-diffusion's ``main.py`` and
``ldm/models/diffusion/ddpm.py``, ControlNet, and their forks: ``from pytorch_lightning.utilities.distributed import
rank_zero_only``; the module went in 2.0), "module 'pytorch_lightning.loggers' has no attribute 'TestTubeLogger'"
(latent-diffusion's and taming-transformers' default logger; gone in 1.7), ``pytorch_lightning.core.lightning``,
``callbacks.base``, ``loggers.base`` (gone in 1.9 / 2.0), ``utilities.seed.seed_everything``, ``utilities.cloud_io``,
``utilities.apply_func``, ``pytorch_lightning.profiler`` (2.0).

Changes: each module is provided where the installed release has none (where it is there but emptied, as 2.0.0-2.0.1's
``utilities.distributed``, its names go back into it), holding the very objects 2.x keeps elsewhere
(``rank_zero_only`` is Lightning's own decorator, whose ``rank`` the Trainer sets; ``LightningModule`` is the same
class): ``utilities.distributed`` (``rank_zero_only`` / ``_info`` / ``_warn`` / ``_debug``, ``distributed_available``,
``gather_all_tensors``, ``sync_ddp``, ``sync_ddp_if_available``, ``all_gather_ddp_if_available``,
``init_dist_connection``, ``get_default_process_group_backend_for_device``, ``tpu_distributed``), ``core.lightning``,
``callbacks.base``, ``loggers.base`` (``LightningLoggerBase`` is ``Logger``), ``utilities.cloud_io``,
``utilities.apply_func``, ``profiler``; and names put back where their module stays: ``utilities.seed.seed_everything``
/ ``reset_seed``, ``loggers.LightningLoggerBase`` and ``loggers.TestTubeLogger``. ``TestTubeLogger`` is test-tube's
logger on today's ``TensorBoardLogger``: its arguments, its folders (``save_dir/name/version_N/tf``) and its
``experiment``, a tensorboard ``SummaryWriter`` as test-tube's was; like 1.x's, it needs tensorboard (or
tensorboardX) installed.
"""

from zeropatch._core import NotNeeded, Patch, is_provided, lacks

PACKAGE = "pytorch_lightning."
# provided module -> {its name: (where 2.x keeps the object, under which name)}; "*": every public name of a module
PROVIDED = {
    "utilities.distributed": {
        "rank_zero_only": ("pytorch_lightning.utilities.rank_zero", "rank_zero_only"),
        "rank_zero_info": ("pytorch_lightning.utilities.rank_zero", "rank_zero_info"),
        "rank_zero_warn": ("pytorch_lightning.utilities.rank_zero", "rank_zero_warn"),
        "rank_zero_debug": ("pytorch_lightning.utilities.rank_zero", "rank_zero_debug"),
        "rank_zero_deprecation": ("pytorch_lightning.utilities.rank_zero", "rank_zero_deprecation"),
        "distributed_available": ("lightning_fabric.utilities.distributed", "_distributed_is_initialized"),
        "gather_all_tensors": ("lightning_fabric.utilities.distributed", "_gather_all_tensors"),
        "sync_ddp": ("lightning_fabric.utilities.distributed", "_sync_ddp"),
        "sync_ddp_if_available": ("lightning_fabric.utilities.distributed", "_sync_ddp_if_available"),
        "all_gather_ddp_if_available": ("lightning_fabric.utilities.distributed", "_all_gather_ddp_if_available"),
        "init_dist_connection": ("lightning_fabric.utilities.distributed", "_init_dist_connection"),
        "get_default_process_group_backend_for_device": (
            "lightning_fabric.utilities.distributed", "_get_default_process_group_backend_for_device"),
    },
    "core.lightning": {"LightningModule": ("pytorch_lightning.core.module", "LightningModule")},
    "callbacks.base": {"Callback": ("pytorch_lightning.callbacks.callback", "Callback")},
    "loggers.base": {
        "LightningLoggerBase": ("pytorch_lightning.loggers.logger", "Logger"),
        "Logger": ("pytorch_lightning.loggers.logger", "Logger"),
        "rank_zero_experiment": ("pytorch_lightning.loggers.logger", "rank_zero_experiment"),
        "DummyLogger": ("pytorch_lightning.loggers.logger", "DummyLogger"),
        "DummyExperiment": ("lightning_fabric.loggers.logger", "_DummyExperiment"),
    },
    "utilities.cloud_io": {"load": ("lightning_fabric.utilities.cloud_io", "_load"),
                           "atomic_save": ("lightning_fabric.utilities.cloud_io", "_atomic_save"),
                           "get_filesystem": ("lightning_fabric.utilities.cloud_io", "get_filesystem")},
    "utilities.apply_func": {"apply_to_collection": ("lightning_utilities.core.apply_func", "apply_to_collection"),
                             "apply_to_collections": ("lightning_utilities.core.apply_func", "apply_to_collections"),
                             "move_data_to_device": ("lightning_fabric.utilities.apply_func", "move_data_to_device")},
    "profiler": {"*": ("pytorch_lightning.profilers", "*")},
}
PUT_BACK = {  # module that stays -> {removed name: (where 2.x keeps it, under which name)}
    "utilities.seed": {"seed_everything": ("lightning_fabric.utilities.seed", "seed_everything"),
                       "reset_seed": ("lightning_fabric.utilities.seed", "reset_seed")},
    "loggers": {"LightningLoggerBase": ("pytorch_lightning.loggers.logger", "Logger")},
}


def _tpu_distributed():
    """1.x's tpu_distributed(): whether torch_xla runs several processes (never, without torch_xla)."""
    try:
        import torch_xla.core.xla_model as xm
    except ImportError:
        return False
    return xm.xrt_world_size() > 1


def _objects(table):
    import importlib

    found = {}
    for name, (module_name, attribute) in table.items():
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # a 1.x release without the 2.x home: nothing to take from it (1.5's loggers.logger)
            continue
        if attribute == "*":
            found.update({public: getattr(module, public) for public in getattr(module, "__all__", ())})
        elif hasattr(module, attribute):
            found[name] = getattr(module, attribute)
    return found


def _test_tube_logger():
    """test-tube's logger (pytorch-lightning 1.6's TestTubeLogger) on today's TensorBoardLogger."""
    from pytorch_lightning.loggers import TensorBoardLogger

    class TestTubeLogger(TensorBoardLogger):
        def __init__(self, save_dir, name="default", description=None, debug=False, version=None,
                     create_git_tag=False, log_graph=False, prefix=""):
            if debug or create_git_tag:
                raise TypeError("TestTubeLogger(debug=True / create_git_tag=True): test-tube's debug mode and git tags "
                                "are not available on pytorch-lightning 2; leave them False")
            super().__init__(save_dir, name=name, version=version, log_graph=log_graph, prefix=prefix, sub_dir="tf")
            self.description = description

    return TestTubeLogger


def _missing(module, short):
    """What 1.x code imports from the module and the installed release lacks there: name -> Lightning's object."""
    table = {**PROVIDED.get(short, {}), **PUT_BACK.get(short, {})}
    objects = _objects({name: place for name, place in table.items() if lacks(module, name)})
    if short == "utilities.distributed" and lacks(module, "tpu_distributed"):
        objects["tpu_distributed"] = _tpu_distributed
    if short == "loggers" and lacks(module, "TestTubeLogger"):
        objects["TestTubeLogger"] = _test_tube_logger()
    return objects


def apply(patcher, module):
    short = module.__name__[len(PACKAGE):]
    objects = _missing(module, short)
    if is_provided(module):
        patcher.fill(module, objects, f"pytorch-lightning 1.x's {module.__name__} (provided by zeropatch)")
        return f"{module.__name__} provided"
    if not objects:  # (2.0.0-2.0.1 keep utilities.distributed with private helpers only: its names go back there)
        raise NotNeeded(f"{module.__name__} still has what 1.x code imports from it")
    patcher.put_back(module, objects)
    return f"{', '.join(sorted(objects))} back in {module.__name__}"


PATCH = Patch(
    "pl_moved_names",
    since="0.4.0",
    summary="pytorch_lightning.utilities.distributed (rank_zero_only, ...), core.lightning, loggers.base, "
    "loggers.TestTubeLogger, utilities.seed.seed_everything and other 1.x modules and names, over the very objects "
    "2.x keeps elsewhere",
    package="pytorch-lightning",
    affected="2.0.0-2.6.6 (swept; utilities.distributed went in 2.0, TestTubeLogger before it)",
    targets=(*(PACKAGE + name for name in PROVIDED), *(PACKAGE + name for name in PUT_BACK)),
    provides=tuple(PACKAGE + name for name in PROVIDED),
    apply=apply,
    errors=(r"No module named 'pytorch_lightning\.(" + "|".join(name.replace(".", r"\.") for name in PROVIDED) + ")'",
            r"module 'pytorch_lightning\.loggers' has no attribute '(TestTubeLogger|LightningLoggerBase)'",
            r"cannot import name '(" + "|".join(sorted({name for table in (*PROVIDED.values(), *PUT_BACK.values())
                                                        for name in table if name != "*"} | {"TestTubeLogger", "tpu_distributed"}))
            + r")' from 'pytorch_lightning\.(" + "|".join(name.replace(".", r"\.") for name in (*PROVIDED, *PUT_BACK))
            + ")'"),
    looks_for=(*(f"import {PACKAGE}{name}" for name in PROVIDED),
               "name pytorch_lightning.loggers.TestTubeLogger", "name pytorch_lightning.loggers.LightningLoggerBase",
               "name pytorch_lightning.utilities.seed.seed_everything"),
)
