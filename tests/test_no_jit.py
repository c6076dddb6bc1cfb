"""The suite depends on no JIT-built op and no shared user cache: DeepSpeed initialises, trains and checkpoints with a
stale lock (what a killed build leaves) planted in the default extensions folder for every op it could build,
where any JIT build would wait forever, and nothing new is built there."""

import os

from conftest import ROOT, assert_ok, clean_environment, requires, run_python

pytestmark = requires("torch", "deepspeed", "accelerate")
OPS = ("deepspeed_shm_comm", "deepspeed_ccl_comm", "fused_adam", "cpu_adam", "cpu_adagrad", "cpu_lion")


def test_deepspeed_builds_nothing_even_with_stale_locks_in_the_default_extensions_folder(tmp_path):
    home = tmp_path / "home"
    env = {key: value for key, value in clean_environment(HOME=home).items()
           if key not in ("TORCH_EXTENSIONS_DIR", "XDG_CACHE_HOME")}   # the user's own defaults, locks and all
    probe = run_python("import torch, torch.utils.cpp_extension as e; print(e._get_build_directory('x', False))", env=env)
    default_root = os.path.dirname(probe.stdout.strip().splitlines()[-1])   # ~/.cache/torch_extensions/py311_cpu
    assert default_root.startswith(str(home)), default_root
    for op in OPS:
        os.makedirs(os.path.join(default_root, op))
        open(os.path.join(default_root, op, "lock"), "w").close()
    before = sorted(os.listdir(default_root))
    result = run_python(f'''
import os, sys, tempfile
sys.path.insert(0, {str(ROOT / "patches" / "param_names")!r})
os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="0")
import torch, deepspeed
from repro import build, engine_for
deepspeed.init_distributed(dist_backend="gloo")
engine = engine_for(build(seed=0), 2)
loss = engine(torch.randn(2, 16)).pow(2).mean()
engine.backward(loss)
engine.step()
engine.save_checkpoint(tempfile.mkdtemp())
print("trained and saved")
''', env=env, timeout=240, step="DeepSpeed with stale locks in the default extensions folder")
    assert_ok(result)
    assert "trained and saved" in result.stdout
    assert sorted(os.listdir(default_root)) == before   # nothing was built there
    for op in OPS:
        assert os.listdir(os.path.join(default_root, op)) == ["lock"], op
