"""hf_trainer_names on the real transformers: ``transformers.trainer.ALL_LAYERNORM_LAYERS`` is pytorch_utils' own
list (one object), unseen in the module's ``dir()``, and gone again after uninstall."""

from conftest import assert_ok, clean_environment, requires, run_python

pytestmark = requires("torch", "transformers")


def test_the_name_is_pytorch_utils_list_and_leaves_no_trace():
    assert_ok(run_python('''
import zeropatch, transformers.trainer as trainer
from transformers import pytorch_utils
if "ALL_LAYERNORM_LAYERS" in vars(trainer):
    print("ok: still re-exported")
    raise SystemExit
from transformers.trainer import ALL_LAYERNORM_LAYERS
assert ALL_LAYERNORM_LAYERS is pytorch_utils.ALL_LAYERNORM_LAYERS
assert "ALL_LAYERNORM_LAYERS" not in dir(trainer)
zeropatch.uninstall("hf_trainer_names")
assert not hasattr(trainer, "ALL_LAYERNORM_LAYERS")
print("ok")
''', env=clean_environment(ZEROPATCH_DISABLE="moved_names")))  # (moved_names answers it too)
