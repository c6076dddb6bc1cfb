"""The legacy training script of the main job (examples/legacy_train.py, written the 2024 way) runs unmodified under
`zeropatch run --patches all,colossalai_cpu` on two CPU ranks, and leaves nothing behind. examples/main_job.py (the
main job, `nox -s example`) also shows each breakage without its patch."""

import glob
import os
import sys
import tempfile
from pathlib import Path

from conftest import ROOT, TEMPORARY, assert_ok, clean_environment, requires, run_command

pytestmark = requires("torch", "torchvision", "av", "colossalai", "deepspeed", "accelerate", "transformers", "pandarallel")


def test_the_2024_script_runs_unmodified_on_two_ranks_and_cleans_up():
    # its own TMPDIR: what it leaves behind is its own, whatever runs beside it; a short path, since pandarallel's
    # manager makes a socket under it (AF_UNIX paths end at 107 bytes; pytest's tmp_path under xdist is too deep)
    private_tmp = Path(tempfile.mkdtemp(prefix="example-", dir=TEMPORARY))
    result = run_command([sys.executable, "-m", "zeropatch", "run", "--patches", "all,colossalai_cpu", "--",
                          sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                          ROOT / "examples" / "legacy_train.py"], env=clean_environment(TMPDIR=private_tmp))
    assert_ok(result)
    assert "legacy_train: completed" in result.stdout, result.stdout[-2000:]
    for patch in ("torchvision_video", "pandas_groupby_names", "colossalai_kwargs", "colossalai_cpu", "pg_deepcopy",
                  "param_store", "hf_post_init", "param_names"):
        assert f"{patch} (in " in result.stderr, (patch, result.stderr[-2000:])
    assert not glob.glob(str(private_tmp / "legacy-train-*")), os.listdir(private_tmp)
