"""colossalai_kwargs on the real ColossalAI: removed keywords are dropped (with one INFO line) or mapped, keywords whose
meaning cannot be kept are refused with what to use instead, launch's config works in both spellings, and keywords
the installed release still has are untouched."""

import pytest

from conftest import CAPTURE_ZEROPATCH_LOG, assert_ok, distribution_version, requires, run_python

pytestmark = requires("torch", "colossalai")
COLOSSALAI = distribution_version("colossalai") or (0,)

PRELUDE = CAPTURE_ZEROPATCH_LOG + '''
import os
import zeropatch
'''


@pytest.mark.skipif(COLOSSALAI < (0, 4, 5), reason="enable_sequence_overlap exists before 0.4.5")
def test_enable_sequence_overlap_is_dropped_with_one_info_line():
    assert_ok(run_python(PRELUDE + '''
from colossalai.shardformer import ShardConfig
for _ in range(2):
    config = ShardConfig(enable_tensor_parallelism=False, enable_jit_fused=True, enable_sequence_overlap=False)
assert config.enable_jit_fused and not hasattr(config, "enable_sequence_overlap")
infos = [message for level, message in records if "ShardConfig(enable_sequence_overlap=False)" in message]
assert len(infos) == 1 and "dropped" in infos[0] and "PR #6086" in infos[0], records
print("ok")
'''))


@pytest.mark.skipif(COLOSSALAI >= (0, 4, 5), reason="needs a release that still has enable_sequence_overlap")
def test_a_release_that_still_has_the_keyword_is_untouched():
    assert_ok(run_python(PRELUDE + '''
from colossalai.shardformer import ShardConfig
config = ShardConfig(enable_tensor_parallelism=False, enable_sequence_overlap=False)
assert config.enable_sequence_overlap is False
assert not any(level != "DEBUG" and "enable_sequence_overlap" in message for level, message in records), records
assert any(level == "DEBUG" and "not-needed" in message and "still takes enable_sequence_overlap" in message
           for level, message in records), records
print("ok")
'''))


@pytest.mark.skipif(COLOSSALAI < (0, 4, 3), reason="the MoE plugin changed in 0.4.1 / 0.4.3")
def test_moe_keywords_whose_meaning_cannot_be_kept_are_refused_with_what_to_use():
    assert_ok(run_python(PRELUDE + '''
from colossalai.booster.plugin import MoeHybridParallelPlugin
expected = {"extra_dp_size": "dp_size // ep_size", "checkpoint_io": "get_checkpoint_io", "use_ep_inside": "moe_dp_outside"}
for keyword, advice in expected.items():
    value = False if keyword == "use_ep_inside" else 2
    try:
        MoeHybridParallelPlugin(ep_size=1, **{keyword: value})
    except TypeError as error:
        assert keyword in str(error) and advice in str(error), error
    else:
        raise AssertionError(f"{keyword} must be refused")
try:
    MoeHybridParallelPlugin(ep_size=1, use_ep_inside=True, moe_dp_outside=True)
except TypeError as error:
    assert "pass only moe_dp_outside" in str(error), error
else:
    raise AssertionError("use_ep_inside together with moe_dp_outside must be refused")
print("ok")
'''))


@pytest.mark.skipif(COLOSSALAI < (0, 3, 8), reason="launch takes config before 0.3.8")
def test_launch_accepts_an_empty_legacy_config_and_refuses_a_real_one():
    assert_ok(run_python(PRELUDE + '''
import colossalai, torch.distributed as dist
try:
    colossalai.launch_from_torch(config={"parallel": {"tensor": {"size": 2}}})
except TypeError as error:
    assert "0.3.8 removed the global config" in str(error) and "Booster plugin" in str(error), error
else:
    raise AssertionError("a config with settings must be refused")
colossalai.launch({}, rank=0, world_size=1, host="127.0.0.1", port=0)     # Open-Sora's tests
assert dist.is_initialized() and dist.get_world_size() == 1
assert any("colossalai.launch({}) -> colossalai.launch()" in message for _, message in records), records
print("ok")
'''))
