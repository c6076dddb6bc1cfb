"""datasets_load_metric: ``datasets.load_metric`` (removed in datasets 3.0) is back, loading what it loaded through its
successor, ``evaluate.load``; dataset loading scripts stay refused.

Breaks: datasets deprecated ``load_metric`` in 2.5 for the evaluate library and removed it (with ``Metric``,
``list_metrics``, ``inspect_metric``) in 3.0: the transformers example scripts of 2021-2023 (``run_glue.py``,
``run_summarization.py``, ``run_clm.py``) and the fine-tuners written from them stop at import, "cannot import name
'load_metric' from 'datasets'". datasets 4.0 then stopped running dataset loading scripts (code from the Hub or a
repository): "Dataset scripts are no longer supported, but found X.py".

Changes, only where datasets lacks the name (``datasets``, ``datasets.load``): ``load_metric`` with 2.x's signature
loads the metrics 2.x could load, with ``evaluate.load`` (a module with the same ``add`` / ``add_batch`` / ``compute``,
process and cache arguments): a local metric script (a ``.py`` file, or a folder holding one of its name) and a
canonical metric by name (``"accuracy"``, ``"glue"``: evaluate's ``evaluate-metric`` namespace, where datasets'
metric scripts moved). It loads nothing 2.x refused: a community module (``"user/metric"``) is not run, as 2.x would not
have run it (use ``evaluate.load`` for those), and ``trust_remote_code=False`` refuses a canonical metric (its code
comes from the Hub). Without evaluate installed, the call says to install it. Not restored: ``datasets.Metric`` for
metric scripts of one's own written against it (evaluate's ``Metric`` has the same methods). Dataset loading scripts
are not re-enabled: ``explain`` and ``check`` name what to do instead.
"""

import os

from zeropatch._core import NotNeeded, Patch, lacks

TARGETS = ("datasets", "datasets.load")
DATASET_SCRIPTS_ADVICE = (
    "datasets >= 4.0 no longer runs dataset loading scripts (they are code, from the Hub or the repository), and "
    "zeropatch does not run them either: load the data files the script reads with a packaged builder "
    "(load_dataset('json' | 'csv' | 'parquet', data_files=...)), or a Hub dataset's Parquet export "
    "(revision='refs/convert/parquet'), or pin datasets<4.0 where you trust the script")


def _script(path):
    """How datasets 2.x resolved ``path``: ("local", script) for a metric script (a ``.py`` file, or a folder holding
    one of the folder's name), ("canonical", name) for a bare metric name; anything else it did not find."""
    filename = [part for part in path.replace(os.sep, "/").split("/") if part][-1]
    filename = filename if filename.endswith(".py") else filename + ".py"
    if path.endswith(filename):
        if os.path.isfile(path):
            return "local", path
        raise FileNotFoundError(f"Couldn't find a metric script at {os.path.abspath(path)}")
    in_folder = os.path.join(path, filename)
    if os.path.isfile(in_folder):
        return "local", in_folder
    relative = "://" not in path and not os.path.isabs(path)
    if relative and path.count("/") == 0:
        return "canonical", path
    community = relative and path.count("/") == 1
    raise FileNotFoundError(f"Couldn't find a metric script at {os.path.abspath(in_folder)}."
                            + (" datasets' load_metric never ran a community module from the Hub; "
                               f"evaluate.load({path!r}) does, if you trust its code" if community else ""))


def load_metric(path, config_name=None, process_id=0, num_process=1, cache_dir=None, experiment_id=None,
                keep_in_memory=False, download_config=None, download_mode=None, revision=None, trust_remote_code=None,
                **metric_init_kwargs):
    """Load a metric as datasets < 3.0 did (a local metric script, or a canonical metric by name), through its
    successor ``evaluate.load`` (restored by zeropatch)."""
    kind, script = _script(path)
    if kind == "canonical" and trust_remote_code is False:
        raise ValueError(f"load_metric({path!r}, trust_remote_code=False): the metric is code from the Hugging Face "
                         f"Hub (evaluate-metric/{path}); pass trust_remote_code=True to run it, or the path of a "
                         "local copy of its script")
    try:
        import evaluate
    except ImportError:
        raise ImportError("datasets 3.0 removed load_metric; zeropatch loads metrics with its successor, the evaluate "
                          "library, which is not installed: pip install evaluate") from None
    return evaluate.load(script, config_name=config_name, module_type="metric" if kind == "canonical" else None,
                         process_id=process_id, num_process=num_process, cache_dir=cache_dir,
                         experiment_id=experiment_id, keep_in_memory=keep_in_memory, download_config=download_config,
                         download_mode=download_mode, revision=revision, **metric_init_kwargs)


def apply(patcher, module):
    if not lacks(module, "load_metric"):
        raise NotNeeded(f"{module.__name__} still has load_metric (datasets < 3.0)")
    patcher.put_back(module, {"load_metric": load_metric}, home="datasets.load")
    return f"load_metric back in {module.__name__}, loading through evaluate.load"


PATCH = Patch(
    "datasets_load_metric",
    since="0.4.0",
    summary="from datasets import load_metric (removed in 3.0) loads the metrics it loaded, through evaluate.load; "
    "dataset scripts stay refused",
    package="datasets",
    affected="3.0.0-5.2.0",
    targets=TARGETS,
    apply=apply,
    errors=(r"cannot import name 'load_metric' from 'datasets'",
            r"module 'datasets(\.load)?' has no attribute 'load_metric'"),
    unfixable=((r"Dataset scripts are no longer supported, but found", DATASET_SCRIPTS_ADVICE),),
    looks_for=tuple(f"name {module}.load_metric" for module in TARGETS),
)
