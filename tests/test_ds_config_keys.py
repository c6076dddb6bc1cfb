"""ds_config_keys on the real DeepSpeedConfig: DeepSpeed 0.3-era offload keys become the offload blocks they meant
(pin_memory carried), keys the old DeepSpeed ignored in precision blocks are dropped, each with a log line; the
user's dict and file stay as written; typos and contradictions are still refused."""

import pytest

from conftest import assert_ok, requires, run_python

pytestmark = requires("torch", "deepspeed")

BUILD = '''
import json, logging, os, sys
os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1")
records = []
class Keep(logging.Handler):
    def emit(self, record):
        records.append(record.getMessage())
logging.getLogger("zeropatch").addHandler(Keep())
logging.getLogger("zeropatch").setLevel(logging.INFO)
from deepspeed.runtime.config import DeepSpeedConfig
from zeropatch.patches.deepspeed.ds_config_keys import _fp16_only_keys
STRICT_PRECISION = bool(_fp16_only_keys())  # DeepSpeed validates its precision blocks (pydantic models)
'''


def test_offload_keys_become_the_offload_blocks_with_their_pin_memory():
    assert_ok(run_python(BUILD + '''
import copy, zeropatch
legacy = {"train_batch_size": 1, "zero_optimization": {"stage": 3, "cpu_offload": True, "cpu_offload_params": True,
                                                      "cpu_offload_use_pin_memory": False}}
kept = copy.deepcopy(legacy)
zero = DeepSpeedConfig(legacy).zero_config
assert zero.offload_optimizer.device == "cpu" and zero.offload_param.device == "cpu", zero
assert zero.offload_optimizer.pin_memory is False and zero.offload_param.pin_memory is False  # as written
assert legacy == kept  # the user's dict is not modified
assert any("cpu_offload_params=True with cpu_offload_use_pin_memory=False -> offload_param" in r for r in records), records
zero = DeepSpeedConfig({"train_batch_size": 1, "zero_optimization": {"stage": 2, "cpu_offload_param": True}}).zero_config
assert zero.offload_param.device == "cpu" and zero.offload_optimizer is None
zero = DeepSpeedConfig({"train_batch_size": 1, "zero_optimization": {"stage": 2, "cpu_offload_use_pin_memory": True}}
                       ).zero_config
assert zero.offload_param is None and zero.offload_optimizer is None
assert any("cpu_offload_use_pin_memory=True dropped" in r for r in records), records
zeropatch.uninstall("ds_config_keys")
try:
    DeepSpeedConfig({"train_batch_size": 1, "zero_optimization": {"stage": 3, "cpu_offload_params": True}})
except Exception as error:
    assert "Extra inputs are not permitted" in str(error), error
else:
    raise AssertionError("DeepSpeed accepts cpu_offload_params: ds_config_keys is not needed here")
print("ok")
'''))


def test_keys_the_old_deepspeed_ignored_are_dropped_from_precision_blocks_read_from_a_file(tmp_path):
    path = tmp_path / "ds_config.json"
    path.write_text('{"train_batch_size": 1, "bf16": {"enabled": true, "loss_scale": 0, "initial_scale_power": 16, '
                    '"loss_scale_window": 1000, "hysteresis": 2, "min_loss_scale": 1}}')
    written = path.read_text()
    assert_ok(run_python(BUILD + f'''
import zeropatch
if not STRICT_PRECISION:
    print("this DeepSpeed reads its precision blocks leniently: nothing to drop"); raise SystemExit(0)
config = DeepSpeedConfig({str(path)!r})
assert config.bfloat16_config.enabled and not config.float16_config.enabled
assert any("dropped bf16.hysteresis, initial_scale_power, loss_scale, loss_scale_window, min_loss_scale" in r
           for r in records), records
config = DeepSpeedConfig({{"train_batch_size": 1, "fp16": {{"enabled": True, "opt_level": "O2", "loss_scale": 128}}}})
assert config.float16_config.enabled and config.float16_config.loss_scale == 128  # fp16's own keys kept
print("ok")
'''))
    assert path.read_text() == written


@pytest.mark.parametrize("config, refusal", [
    ({"zero_optimization": {"stage": 3, "cpu_offload_parms": True}}, "cpu_offload_parms"),  # a typo stays an error
    ({"bf16": {"enabled": True, "loss_scal": 0}}, "loss_scal"),
    ({"zero_optimization": {"stage": 3, "cpu_offload_params": True, "offload_param": {"device": "cpu"}}},
     "keep offload_param only"),
], ids=["zero typo", "bf16 typo", "legacy key and its successor"])
def test_what_has_no_old_meaning_is_still_refused(config, refusal):
    assert_ok(run_python(BUILD + f'''
import zeropatch
if "bf16" in {config!r} and not STRICT_PRECISION:
    print("this DeepSpeed ignores unknown bf16 keys"); raise SystemExit(0)
try:
    DeepSpeedConfig(dict(train_batch_size=1, **{config!r}))
except Exception as error:
    assert {refusal!r} in str(error), error
else:
    raise AssertionError("accepted")
print("ok")
'''))


def test_a_fractional_min_loss_scale_is_the_loss_scalers_floor_as_written():
    """2022-2023 fp16 configs wrote ``"min_loss_scale": 1e-10`` (no floor), which DeepSpeed read as a float; its integer
    field now refuses it. Kept, the loss scaler gets the number written; whole numbers and what DeepSpeed refuses for
    another reason (zero, negative: no floor at all) are left to DeepSpeed."""
    assert_ok(run_python(BUILD + '''
import copy, math
from zeropatch.patches.deepspeed.ds_config_keys import _integer_floor
def fp16(**keys):
    return {"train_batch_size": 1, "fp16": {"enabled": True, "loss_scale": 0, **keys}}
if not _integer_floor():
    print("this DeepSpeed reads min_loss_scale as written"); raise SystemExit(0)
import zeropatch
legacy = fp16(min_loss_scale=1e-10, initial_scale_power=12)
kept = copy.deepcopy(legacy)
config = DeepSpeedConfig(legacy)
assert legacy == kept  # the user's dict is not modified
assert config.float16_config.min_loss_scale == 1e-10 and config.float16_config.initial_scale_power == 12
assert config.float16_config.dynamic_loss_scale_args()["min_scale"] == 1e-10  # what the loss scaler is built from
assert any("fp16.min_loss_scale=1e-10 kept" in r for r in records), records
assert DeepSpeedConfig(fp16(min_loss_scale=2)).float16_config.min_loss_scale == 2
assert DeepSpeedConfig(fp16(min_loss_scale=0.5)).float16_config.min_loss_scale == 0.5
for refused in (0.0, -1e-10, math.nan):
    try:
        DeepSpeedConfig(fp16(min_loss_scale=refused))
    except Exception as error:
        assert "min_loss_scale" in str(error), error
    else:
        raise AssertionError(f"min_loss_scale={refused} accepted")
zeropatch.uninstall("ds_config_keys")
try:
    DeepSpeedConfig(fp16(min_loss_scale=1e-10))
except Exception as error:
    assert "got a number with a fractional part" in str(error), error
else:
    raise AssertionError("DeepSpeed accepts a fractional min_loss_scale: the patch is not needed here")
print("ok")
'''))
