"""pl_multiple_optimizers: a module training two optimizers the 1.x way (tests/pl_optimizers_job.py) runs on 2.x as
on the 1.x releases themselves. Each expectation below is what that job printed on pytorch-lightning 1.9.5 (code
not known to be legacy) or 1.5.10 (code pinned before 1.6), run there without the patch."""

import json
import sys

from conftest import ROOT, assert_ok, requires, run_command, run_python

JOB = ROOT / "tests" / "pl_optimizers_job.py"
ZEROPATCH = [sys.executable, "-m", "zeropatch"]


def seen(result):
    assert_ok(result)
    return json.loads(result.stdout.split("SEEN ")[1].splitlines()[0])


@requires("pytorch_lightning")
def test_frequencies_schedulers_and_1x_hooks_as_on_1_9(tmp_path):
    got = seen(run_command(ZEROPATCH + ["run", "--", sys.executable, JOB, "[2, 1]"], cwd=tmp_path))
    turns = [[0, 0], [1, 0], [2, 1], [3, 0], [4, 0], [5, 1]]  # [batch_idx, optimizer_idx]: 2 batches, then 1
    assert got["steps"] == [[batch, index, batch] for batch, index in turns], got["steps"]
    assert got["optimizer_step"] == turns, got  # the 1.x override got optimizer_idx
    assert got["batch_end"] == [[["loss"]] if index == 0 else [["d", "loss"]] for _, index in turns], got
    assert got["lrs"] == [0.1 * 0.5 ** 4, 0.1 * 0.5 ** 2] and got["global_step"] == 6, got  # each its own turns


@requires("pytorch_lightning")
def test_code_pinned_before_1_6_counts_batches_as_1_5(tmp_path):
    (tmp_path / "environment.yaml").write_text("dependencies:\n  - pip:\n    - pytorch-lightning==1.4.2\n")
    (tmp_path / "job.py").write_text(JOB.read_text())
    result = run_command(ZEROPATCH + ["run", "--", sys.executable, tmp_path / "job.py", "null"], cwd=tmp_path)
    got = seen(result)
    assert got["steps"] == [[batch, index, batch] for batch in range(6) for index in (0, 1)], got["steps"]
    assert got["global_step"] == 6 and got["lrs"] == [0.1 * 0.5 ** 6] * 2, got
    assert got["batch_end"] == [[["loss"], ["d", "loss"]]] * 6, got
    assert "global_step counts batches (< 1.6)" in result.stderr, result.stderr[-2000:]


@requires("pytorch_lightning")
def test_several_optimizers_without_optimizer_idx_keep_2x_error(tmp_path):
    result = run_command(ZEROPATCH + ["run", "--", sys.executable, JOB, "null", "without-index"], cwd=tmp_path)
    assert result.returncode != 0, result.stdout
    assert "Training with multiple optimizers is only supported with manual optimization" in result.stderr, \
        result.stderr[-2000:]


@requires("pytorch_lightning")
def test_one_optimizer_with_optimizer_idx_trains_only_where_1_9_did():
    """One optimizer: 1.9 passed no optimizer_idx, so a default served (it trains) and a required one failed there
    too: the release's own error is kept (2.6's says what to change, and its own suite asserts it; 2.0's is a TypeError)."""
    assert_ok(run_python('''
import zeropatch, pytorch_lightning as pl
from pytorch_lightning.demos.boring_classes import BoringModel
class Required(BoringModel):
    def training_step(self, batch, batch_idx, optimizer_idx):
        return super().training_step(batch, batch_idx)
class Defaulted(BoringModel):
    def training_step(self, batch, batch_idx, optimizer_idx=0):
        return super().training_step(batch, batch_idx)
def trainer():
    return pl.Trainer(logger=False, enable_checkpointing=False, max_steps=2, enable_progress_bar=False,
                      enable_model_summary=False)
def error(model):
    try:
        trainer().fit(model)
    except Exception as raised:
        return type(raised).__name__, str(raised)
fitted = trainer()
fitted.fit(Defaulted())
assert fitted.global_step == 2, fitted.global_step
with_patch = error(Required())
zeropatch.uninstall("pl_multiple_optimizers")
assert with_patch is not None and with_patch == error(Required()), (with_patch, error(Required()))
print("OK")
'''))
