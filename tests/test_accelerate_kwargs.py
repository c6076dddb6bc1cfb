"""accelerate_kwargs on the real accelerate: each legacy keyword takes effect as in the last release that had it,
split_batches included (on two CPU ranks: accelerate 1.x accepts it and silently does not split)."""

import pytest

from conftest import assert_ok, clean_environment, distribution_version, requires, run_python, run_ranks

pytestmark = requires("accelerate", "torch")

SPLIT = '''
import os, sys, torch
if os.environ.get("WITH_ZEROPATCH"):
    import zeropatch
from accelerate import Accelerator
accelerator = Accelerator(split_batches=True)
loader = accelerator.prepare(torch.utils.data.DataLoader(torch.arange(16.0), batch_size=8))
print("batches", [len(batch) for batch in loader], accelerator.num_processes)
accelerator.wait_for_everyone()
'''


def test_split_batches_splits_the_global_batch_over_the_ranks():
    def batches(**env):
        results = run_ranks(SPLIT, 2, env=clean_environment(**dict({"ACCELERATE_USE_CPU": "1", "ZEROPATCH": "0"}, **env)))
        assert_ok(results)
        return [line for result in results for line in result.stdout.splitlines() if line.startswith("batches")]

    import importlib.metadata

    from zeropatch._core import version_tuple

    plain = batches()
    if version_tuple(importlib.metadata.version("accelerate")) >= (1,):
        assert plain == ["batches [8] 2"] * 2, plain  # accepted, ignored: each rank takes whole batches
    assert batches(WITH_ZEROPATCH="1", ZEROPATCH="accelerate_kwargs") == ["batches [4, 4] 2"] * 2


@pytest.mark.skipif((distribution_version("accelerate") or (0,)) < (1,), reason="the dataloader keywords went in 1.0")
def test_each_keyword_lands_where_the_old_release_put_it():
    assert_ok(run_python('''
import tempfile, zeropatch
from accelerate import Accelerator
from accelerate.utils import DataLoaderConfiguration, ProjectConfiguration
logs = tempfile.mkdtemp()
accelerator = Accelerator(logging_dir=logs, project_dir="/tmp/project-zp", even_batches=(False,), dispatch_batches=None,
                          use_seedable_sampler=1)
assert accelerator.logging_dir == logs and accelerator.project_dir == "/tmp/project-zp"
assert accelerator.even_batches is True and accelerator.dispatch_batches is None
assert accelerator.dataloader_config.use_seedable_sampler is True
config = DataLoaderConfiguration(non_blocking=True)
accelerator = Accelerator(dataloader_config=config, even_batches=False, dispatch_batches=0)
assert accelerator.dataloader_config is config and config.non_blocking and config.even_batches is False
assert config.dispatch_batches is False
project = ProjectConfiguration(project_dir="/tmp/p-zp", automatic_checkpoint_naming=True)
assert Accelerator(project_config=project, logging_dir=logs).project_configuration.logging_dir == logs
assert zeropatch.status("accelerate_kwargs")[0].state == "applied"
zeropatch.uninstall("accelerate_kwargs")
try:
    Accelerator(logging_dir=logs)
except TypeError as error:
    assert "logging_dir" in str(error)
print("ok")
'''))
