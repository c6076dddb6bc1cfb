"""datasets_load_metric on the installed datasets: load_metric loads what datasets 2.x's did (a local metric script,
a canonical metric by name) through evaluate.load, and nothing it refused (a community module's code is never run;
trust_remote_code=False refuses Hub code); its process arguments work across two processes as 2.x's did. The Hub is
out of reach here: a canonical metric comes from a module cache seeded in a temporary HF_HOME with what evaluate
would have downloaded (the repro does the same). The not-needed side (datasets 2.21: its own load_metric, untouched)
is the repro's and test_orderings'."""

import sys

import pytest

from conftest import assert_ok, clean_environment, distribution_version, requires, run_command, run_python

pytestmark = [requires("datasets", "evaluate"),
              pytest.mark.skipif((distribution_version("datasets") or (3,)) < (3,),
                                 reason="datasets < 3.0 has its own load_metric (not-needed: the repro runs there)")]

ACCURACY = '''
import datasets
import evaluate


class Accuracy(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description="accuracy", citation="", inputs_description="",
            features=datasets.Features({"predictions": datasets.Value("int32"), "references": datasets.Value("int32")}))

    def _compute(self, predictions, references):
        import os
        return {"accuracy": sum(int(p == r) for p, r in zip(predictions, references)) / len(predictions),
                "config": self.config_name, "process": os.getpid()}
'''
RUNS_ITS_CODE = '''
import pathlib
pathlib.Path(__file__).parents[5].joinpath("community-code-ran").touch()
''' + ACCURACY


def cached(home, name, script):
    """A module as evaluate caches what it downloaded from the Hub (``name``: namespace--module)."""
    folder = home / "modules" / "evaluate_modules" / "metrics" / name / ("0" * 64)
    folder.mkdir(parents=True)
    (folder / f"{name.split('--')[-1]}.py").write_text(script)


def offline(home):
    return clean_environment(HF_HOME=str(home), HF_HUB_OFFLINE="1", HF_EVALUATE_OFFLINE="1", HF_DATASETS_OFFLINE="1")


def test_a_local_metric_script_loads_from_its_folder_or_its_file(tmp_path):
    (tmp_path / "accuracy").mkdir()
    (tmp_path / "accuracy" / "accuracy.py").write_text(ACCURACY)
    assert_ok(run_python(f'''
import pickle, zeropatch, datasets
from datasets import load_metric
assert zeropatch.status("datasets_load_metric")[0].state == "applied"
assert load_metric.__module__ == "datasets.load" and pickle.loads(pickle.dumps(load_metric)) is load_metric
for path in ({str(tmp_path / "accuracy")!r}, {str(tmp_path / "accuracy" / "accuracy.py")!r}):
    metric = load_metric(path, "mnli", keep_in_memory=True, experiment_id="local", timeout=30)
    metric.add_batch(predictions=[1, 0], references=[1, 1])
    metric.add(predictions=1, references=1)
    result = metric.compute()
    assert result["accuracy"] == 2 / 3 and result["config"] == "mnli", result
    assert metric.timeout == 30  # metric_init_kwargs reach the metric
for missing in ({str(tmp_path / "absent")!r}, {str(tmp_path / "absent.py")!r}):
    try:
        load_metric(missing)
    except FileNotFoundError as error:
        assert "Couldn't find a metric script at" in str(error), error
    else:
        raise AssertionError(missing)
print("ok")
''', env=offline(tmp_path / "hf"), cwd=tmp_path))


def test_a_canonical_name_loads_evaluates_metric_and_no_community_code_runs(tmp_path):
    home = tmp_path / "hf"
    cached(home, "evaluate-metric--accuracy", ACCURACY)
    cached(home, "someone--accuracy", RUNS_ITS_CODE)
    marker = home / "community-code-ran"
    assert_ok(run_python('''
import sys, zeropatch
from datasets import load_metric
metric = load_metric("accuracy", trust_remote_code=True)
assert type(metric).__module__.startswith("evaluate_modules.metrics.evaluate-metric--accuracy."), type(metric)
assert metric.compute(predictions=[0, 1], references=[0, 0])["accuracy"] == 0.5
try:
    load_metric("accuracy", trust_remote_code=False)
except ValueError as error:
    assert "trust_remote_code=False" in str(error) and "evaluate-metric/accuracy" in str(error), error
else:
    raise AssertionError("trust_remote_code=False ran Hub code")
try:
    load_metric("someone/accuracy")
except FileNotFoundError as error:
    assert "never ran a community module" in str(error), error
else:
    raise AssertionError("a community module was loaded")
print("ok")
''', env=offline(home), cwd=tmp_path))
    assert not marker.exists(), "load_metric ran a community module's code"
    assert_ok(run_python('import evaluate; evaluate.load("someone/accuracy")', env=offline(home), cwd=tmp_path))
    assert marker.exists(), "evaluate.load would not run that cached module either: the check above proves nothing"


def test_without_evaluate_the_call_says_what_to_install(tmp_path):
    result = run_python('''
import sys, zeropatch
sys.modules["evaluate"] = None  # evaluate not installed
from datasets import load_metric
load_metric("accuracy")
''', env=offline(tmp_path / "hf"), cwd=tmp_path)
    assert result.returncode != 0 and "pip install evaluate" in result.stderr, result.stderr


def test_two_processes_compute_one_result_as_datasets_2_did(tmp_path):
    """process_id / num_process / experiment_id: each process adds its predictions, process 0 computes over all."""
    (tmp_path / "accuracy").mkdir()
    (tmp_path / "accuracy" / "accuracy.py").write_text(ACCURACY)
    script = tmp_path / "rank.py"
    script.write_text(f'''
import sys, zeropatch
from datasets import load_metric
rank = int(sys.argv[1])
metric = load_metric({str(tmp_path / "accuracy")!r}, process_id=rank, num_process=2, experiment_id="two-ranks",
                     cache_dir={str(tmp_path / "metric-cache")!r}, timeout=60)
metric.add_batch(predictions=[rank, rank], references=[0, 0])
print("result", metric.compute())
''')
    import concurrent.futures

    env = offline(tmp_path / "hf")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda rank: run_command([sys.executable, script, str(rank)], env=env, cwd=tmp_path,
                                                         timeout=180), (0, 1)))
    assert_ok(results)
    first, second = (result.stdout.strip().splitlines()[-1] for result in results)
    assert "'accuracy': 0.5" in first and second == "result None", (first, second)


def test_dataset_scripts_stay_refused_and_explain_says_what_to_do(tmp_path):
    (tmp_path / "squad").mkdir()
    (tmp_path / "squad" / "squad.py").write_text("raise SystemExit('the dataset script ran')\n")
    result = run_python(f'''
import zeropatch, datasets
datasets.load_dataset({str(tmp_path / "squad")!r})
''', env=offline(tmp_path / "hf"), cwd=tmp_path)
    if distribution_version("datasets") < (4,):
        pytest.skip("datasets < 4.0 still runs dataset scripts (trust_remote_code)")
    assert result.returncode != 0 and "Dataset scripts are no longer supported" in result.stderr, result.stderr
    explained = run_command([sys.executable, "-m", "zeropatch", "explain", result.stderr.strip().splitlines()[-1]],
                            env=clean_environment())
    assert "No patch can fix this" in explained.stdout and "packaged builder" in explained.stdout, explained.stdout

