"""hf_rope_scaling on the real transformers: a 4.x assignment keeps theta (and ``None`` is unscaled RoPE with it),
an assignment naming its own theta and ``rope_parameters`` itself are left alone, and uninstall gives back the
library's property. The repro compares the rotary embedding with 4.x's (4.51.3 gives the same natively)."""

import pytest

from conftest import assert_ok, distribution_version, requires, run_python

pytestmark = [requires("torch", "transformers"),
              pytest.mark.skipif((distribution_version("transformers") or (0,)) < (5,), reason="transformers >= 5")]


def test_only_what_4x_kept_outside_the_scaling_is_carried_over():
    assert_ok(run_python('''
import zeropatch, transformers
from transformers import LlamaConfig
def built():
    return LlamaConfig(hidden_size=8, num_attention_heads=2, rope_theta=500000.0)
config = built()
config.rope_scaling = {"type": "dynamic", "factor": 4.0}
assert config.rope_parameters["rope_theta"] == 500000.0 and config.rope_parameters["rope_type"] == "dynamic"
assert config.rope_parameters["factor"] == 4.0
config.rope_scaling = None
assert config.rope_parameters["rope_type"] == "default" and config.rope_parameters["rope_theta"] == 500000.0
assert "factor" not in config.rope_parameters
config = built()
config.rope_scaling = {"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0}  # names its own theta
assert config.rope_parameters["rope_theta"] == 10000.0
config = built()
config.rope_parameters = {"rope_type": "linear", "factor": 2.0, "rope_theta": 1000.0}  # the new name: untouched
assert config.rope_parameters == {"rope_type": "linear", "factor": 2.0, "rope_theta": 1000.0}
zeropatch.uninstall("hf_rope_scaling")
config = built()
config.rope_scaling = {"type": "linear", "factor": 2.0}
assert config.rope_parameters.get("rope_theta") is None, config.rope_parameters
print("ok")
'''))


def test_a_config_class_written_for_4x_reads_rope_scaling_as_4x():
    """A remote-code config class (its __init__ takes rope_scaling, as Phi-3's and InternLM2's do) reads None when
    unscaled and its scaling alone when scaled; transformers' own classes read the full parameters, as today."""
    assert_ok(run_python('''
import zeropatch
from transformers import LlamaConfig, PretrainedConfig
class RemoteConfig(PretrainedConfig):
    model_type = "remote_llama"
    def __init__(self, hidden_size=8, rope_theta=10000.0, rope_scaling=None, **kwargs):
        self.hidden_size, self.rope_theta, self.rope_scaling = hidden_size, rope_theta, rope_scaling
        super().__init__(**kwargs)
assert RemoteConfig().rope_scaling is None
scaled = RemoteConfig(rope_scaling={"type": "linear", "factor": 2.0})
assert scaled.rope_scaling["type"] == "linear" and scaled.rope_scaling["factor"] == 2.0
assert "rope_theta" not in scaled.rope_scaling and scaled.rope_parameters["rope_theta"] == 10000.0
own = LlamaConfig(hidden_size=8, num_attention_heads=2)
assert own.rope_scaling == own.rope_parameters and own.rope_scaling["rope_type"] == "default"
zeropatch.uninstall("hf_rope_scaling")
assert RemoteConfig().rope_scaling == {"rope_theta": 10000.0, "rope_type": "default"}, RemoteConfig().rope_scaling
print("ok")
'''))
