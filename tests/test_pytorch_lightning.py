"""pytorch-lightning 1.x code on 2.x: the Trainer built from 1.x keywords as 1.9 built it (pl_trainer_args), the
1.x hooks (pl_legacy_hooks: a test loop without test_step for any code, since 2.x refuses it; a resume at an epoch's
end, a changed default, for code written for 1.x only), and a 1.x multi-GPU launch rehearsed on two CPU processes
(cpu_rehearsal)."""

import json
import sys

from conftest import ROOT, assert_ok, clean_environment, requires, run_command, run_python

ZEROPATCH = [sys.executable, "-m", "zeropatch"]

TRANSLATE = '''
import json, zeropatch
from zeropatch.patches.pytorch_lightning.pl_trainer_args import _translate
def translated(kwargs, legacy):
    try:
        notes = _translate(kwargs, legacy)
    except TypeError as error:
        return "refused: " + str(error)
    return {key: (type(value).__name__ if key == "callbacks" else value) for key, value in kwargs.items()}
cases = [
    ({}, {"gpus": "0,"}), ({}, {"gpus": "0,1"}), ({}, {"gpus": 2}), ({}, {"gpus": "1"}), ({}, {"gpus": None}),
    ({}, {"gpus": 0}), ({}, {"gpus": "0"}), ({"accelerator": "ddp"}, {"gpus": "0,"}), ({"accelerator": "ddp_cpu"}, {"num_processes": 2}),
    ({"accelerator": "ddp_spawn"}, {"gpus": [0, 1]}), ({}, {"num_processes": 3}), ({"strategy": "ddp"}, {"gpus": 4}),
    ({}, {"checkpoint_callback": False}), ({}, {"replace_sampler_ddp": False}), ({}, {"weights_summary": None}),
    ({}, {"progress_bar_refresh_rate": 0}), ({"max_steps": None}, {"gpus": None}), ({}, {"reload_dataloaders_every_epoch": True}),
    ({"accelerator": "dp"}, {"gpus": 2}), ({}, {"amp_backend": "apex"}), ({}, {"stochastic_weight_avg": True}),
    ({}, {"distributed_backend": "ddp", "gpus": 2}), ({"accumulate_grad_batches": {0: 2}}, {"gpus": None}),
]
print(json.dumps([translated(dict(kwargs), dict(legacy)) for kwargs, legacy in cases]))
'''


@requires("pytorch_lightning")
def test_the_1x_keywords_choose_hardware_and_successors_as_1_9_did():
    result = run_python(TRANSLATE)
    assert_ok(result)
    got = json.loads(result.stdout.strip().splitlines()[-1])
    cpu = {"accelerator": "cpu", "devices": 1}
    expected = [
        {"accelerator": "gpu", "devices": "0,"},  # GPU 0
        {"accelerator": "gpu", "devices": "0,1", "strategy": "ddp_spawn_find_unused_parameters_true"},  # 1.x's choice for several GPUs
        {"accelerator": "gpu", "devices": 2, "strategy": "ddp_spawn_find_unused_parameters_true"},
        {"accelerator": "gpu", "devices": "1"},  # a count: one GPU
        cpu, cpu, cpu,  # None, 0, "0": the CPU, 1.x's default (2.x's "auto" would take every GPU)
        {"accelerator": "gpu", "devices": "0,", "strategy": "ddp_find_unused_parameters_true"},  # latent-diffusion's accelerator="ddp"
        {"accelerator": "cpu", "devices": 2, "strategy": "ddp_spawn_find_unused_parameters_true"},
        {"accelerator": "gpu", "devices": [0, 1], "strategy": "ddp_spawn_find_unused_parameters_true"},
        {"accelerator": "cpu", "devices": 3, "strategy": "ddp_spawn_find_unused_parameters_true"},
        {"strategy": "ddp_find_unused_parameters_true", "accelerator": "gpu", "devices": 4},
        {**cpu, "enable_checkpointing": False},
        {**cpu, "use_distributed_sampler": False},
        {**cpu, "enable_model_summary": False},
        {**cpu, "enable_progress_bar": False},
        {"max_steps": -1, **cpu},
        {**cpu, "reload_dataloaders_every_n_epochs": 1},
    ]
    assert got[:len(expected)] == expected, got
    refusals = got[len(expected):len(expected) + 3]
    assert all(isinstance(text, str) and text.startswith("refused: ") for text in refusals), refusals
    assert "divide batch_size" in refusals[0] and "16-mixed" in refusals[1] and "swa_lrs" in refusals[2]
    assert got[-2] == {"accelerator": "gpu", "devices": 2, "strategy": "ddp_find_unused_parameters_true"}, got[-2]
    assert got[-1] == {**cpu, "callbacks": "list"}, got[-1]  # GradientAccumulationScheduler


RESUME = ROOT / "tests" / "pl_resume_job.py"


@requires("pytorch_lightning")
def test_a_resume_as_1_5_for_code_written_for_1x_and_a_test_loop_without_test_step_for_any_code(tmp_path):
    """A resume at an epoch's end (1.5: the next epoch starts, its start hooks called) for code pinned to 1.4, or
    declared legacy; other code keeps 2.x's resume. A test loop without test_step (1.4: skipped with a warning) for
    any code: 1.5+ refuses the call, so no legacy decision is taken."""
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "environment.yaml").write_text("dependencies:\n  - pip:\n    - pytorch-lightning==1.4.2\n")
    script = tmp_path / "legacy" / "job.py"
    script.write_text(RESUME.read_text())
    first = run_command(ZEROPATCH + ["run", "--", sys.executable, script, tmp_path / "run", "4"])
    assert_ok(first)
    assert "test loop skipped" in first.stderr and "LEGACY TEST []" in first.stdout, first.stdout + first.stderr
    resumed = run_command(ZEROPATCH + ["run", "--", sys.executable, script, tmp_path / "run", "6",
                                       tmp_path / "run" / "last.ckpt"])
    assert_ok(resumed)
    events = json.loads(resumed.stdout.split("EVENTS ")[1].splitlines()[0])
    assert events == [["epoch start", 1], ["step", 1, 4, 0], ["step", 1, 5, 1], ["epoch end", 1]], events
    assert "resumed at the start of the next epoch" in resumed.stderr, resumed.stderr
    new = clean_environment(ZEROPATCH_LEGACY="-pytorch-lightning")  # declared written for today's
    new_code = run_command(ZEROPATCH + ["run", "--", sys.executable, script, tmp_path / "new", "4"], env=new)
    assert_ok(new_code)
    assert "test loop skipped" in new_code.stderr and "LEGACY TEST []" in new_code.stdout, new_code.stderr[-2000:]
    new_resume = run_command(ZEROPATCH + ["run", "--", sys.executable, script, tmp_path / "new", "6",
                                          tmp_path / "new" / "last.ckpt"], env=new)
    assert_ok(new_resume)
    new_events = json.loads(new_resume.stdout.split("EVENTS ")[1].splitlines()[0])
    assert new_events != events and "resumed at the start" not in new_resume.stderr, (new_events, new_resume.stderr)


@requires("pytorch_lightning")
def test_a_1x_multi_gpu_launch_is_rehearsed_on_two_cpu_processes(tmp_path):
    """latent-diffusion's way: Trainer(accelerator="ddp", gpus="0,1") under `zeropatch run --cpu`: two CPU ranks
    (Lightning's own DDP launcher starts the second, patched too) train in step, gloo underneath; its autoencoders'
    way too, two optimizers in turn (pl_multiple_optimizers), which needs 1.x's DDP that finds unused parameters."""
    script = tmp_path / "ddp_job.py"
    script.write_text('''
import sys, torch, pytorch_lightning as pl
from torch.utils.data import DataLoader, TensorDataset
class M(pl.LightningModule):  # two optimizers in turn, 1.x's way: DDP must find the toggled-off parameters unused
    def __init__(self):
        super().__init__(); self.l = torch.nn.Linear(4, 1); self.d = torch.nn.Linear(1, 1)
    def training_step(self, batch, i, optimizer_idx):
        out = self.l(batch[0])
        return out.pow(2).mean() if optimizer_idx == 0 else self.d(out.detach()).pow(2).mean()
    def configure_optimizers(self):
        return [torch.optim.SGD(self.l.parameters(), lr=0.1), torch.optim.SGD(self.d.parameters(), lr=0.1)]
torch.manual_seed(0)
model = M()
trainer = pl.Trainer(accelerator="ddp", gpus="0,1", max_steps=2, logger=False, enable_checkpointing=False,
                     enable_progress_bar=False, enable_model_summary=False)
trainer.fit(model, DataLoader(TensorDataset(torch.randn(16, 4)), batch_size=2))
weight = [round(w, 6) for w in [*model.l.weight.detach().flatten().tolist(), *model.d.weight.detach().flatten().tolist()]]
with open(f"{sys.argv[1]}/rank{trainer.global_rank}.txt", "w") as file:  # one file a rank: their stdout interleaves
    file.write(f"RANK {trainer.global_rank} OF {trainer.world_size} {trainer.strategy.root_device.type} "
               f"{torch.distributed.get_backend()} {weight}")
''')
    result = run_command(ZEROPATCH + ["run", "--cpu", "--", sys.executable, script, tmp_path])
    assert_ok(result)
    lines = sorted(path.read_text() for path in tmp_path.glob("rank*.txt"))
    assert len(lines) == 2 and lines[0].startswith("RANK 0 OF 2 cpu gloo") and lines[1].startswith("RANK 1 OF 2 cpu gloo"), \
        (lines, result.stdout)
    assert lines[0].split("gloo")[1] == lines[1].split("gloo")[1], lines  # DDP kept the ranks' weights equal
    assert "accelerator='gpu' -> 2 CPU process(es)" in result.stderr, result.stderr[-2000:]


@requires("pytorch_lightning")
def test_a_checkpoint_callback_given_as_1_0_took_it_writes_its_checkpoints(tmp_path):
    """taming-transformers' main.py: Trainer(checkpoint_callback=ModelCheckpoint(dirpath=..., save_last=True)), 1.0-1.4's
    way to give the checkpoint callback; 2.x's default one instead would write elsewhere and no last.ckpt."""
    assert_ok(run_python(f'''
import os, torch, zeropatch, pytorch_lightning as pl
from pytorch_lightning.callbacks import ModelCheckpoint
from torch.utils.data import DataLoader, TensorDataset
class Tiny(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)
    def training_step(self, batch, batch_idx):
        return self.layer(batch[0]).sum()
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
folder = {str(tmp_path / "checkpoints")!r}
given = ModelCheckpoint(dirpath=folder, filename="{{epoch:06}}", save_last=True)
trainer = pl.Trainer(checkpoint_callback=given, max_steps=2, gpus=None, logger=False, enable_progress_bar=False,
                     default_root_dir={str(tmp_path)!r})
assert trainer.checkpoint_callback is given, trainer.checkpoint_callbacks
trainer.fit(Tiny(), DataLoader(TensorDataset(torch.randn(4, 2)), batch_size=2))
assert sorted(os.listdir(folder)) == ["epoch=000000.ckpt", "last.ckpt"], os.listdir(folder)
print("OK")
'''))


@requires("pytorch_lightning")
def test_a_name_logged_twice_with_different_arguments_is_explained_not_patched(tmp_path):
    """taming-transformers' VQModel.validation_step logs val/rec_loss twice with different arguments: 1.0-1.3 let the
    later call win, 1.4 and later refuse it. No patch restores it (the calls' values would be reduced together);
    `zeropatch explain` says what to change."""
    script = tmp_path / "twice.py"
    script.write_text('''
import torch, pytorch_lightning as pl
from torch.utils.data import DataLoader, TensorDataset
class Twice(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)
    def validation_step(self, batch, batch_idx):
        loss = self.layer(batch[0]).abs().mean()
        self.log("val/rec_loss", loss, prog_bar=True, on_step=True, on_epoch=True)
        self.log_dict({"val/rec_loss": loss})
pl.Trainer(accelerator="cpu", logger=False, enable_progress_bar=False).validate(
    Twice(), DataLoader(TensorDataset(torch.randn(2, 2)), batch_size=2))
''')
    failed = run_command(ZEROPATCH + ["run", "--", sys.executable, script])
    assert failed.returncode != 0 and "twice in `validation_step` with different arguments" in failed.stderr, \
        failed.stderr[-2000:]
    explained = run_command(ZEROPATCH + ["explain", failed.stderr[-4000:]])
    assert "No patch can fix this" in explained.stdout and "Log the name once" in explained.stdout, explained.stdout


@requires("pytorch_lightning")
def test_a_module_that_is_not_a_lightning_module_gets_lightnings_own_error():
    """trainer.fit / validate / test / predict of a plain nn.Module: Lightning's TypeError, not a failure inside a
    patch's wrapper (pl_legacy_hooks once asked is_overridden of it: "ValueError: Expected a parent")."""
    assert_ok(run_python('''
import pytest, torch, zeropatch, pytorch_lightning as pl
trainer = pl.Trainer(logger=False, enable_progress_bar=False)
for method in ("fit", "validate", "test", "predict"):
    with pytest.raises(TypeError, match="must be a `LightningModule`"):
        getattr(trainer, method)(torch.nn.Linear(2, 2))
print("OK")
'''))
