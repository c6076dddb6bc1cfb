"""omegaconf_legacy_api on the installed omegaconf: for code written for 2.0 (declared here with ZEROPATCH_LEGACY),
a key a plain DictConfig lacks reads as None by attribute and by item, as 2.0 gave it, while struct and structured
configs, keys set to ??? and private names still refuse; other code keeps 2.1's error; pretty() is OmegaConf.to_yaml
with its arguments, on DictConfig and ListConfig."""

import pytest

from conftest import assert_ok, clean_environment, distribution_version, installed, requires, run_python

pytestmark = [requires("omegaconf"),
              pytest.mark.skipif(installed("omegaconf") and distribution_version("omegaconf") < (2, 1),
                                 reason="omegaconf 2.0 reads missing keys as None and has pretty() itself")]


def test_missing_keys_read_as_none_for_code_written_for_2_0_only():
    check = '''
import copy, pickle, dataclasses, zeropatch
from omegaconf import OmegaConf
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, MissingMandatoryValue
config = OmegaConf.create({"trainer": {"max_steps": 6}, "required": "???"})
def fails(read, error):
    try:
        read()
    except error:
        return True
    return False
if LEGACY:
    assert config.logger is None and config["modelcheckpoint"] is None and config.trainer.gpus is None
else:
    assert fails(lambda: config.logger, ConfigAttributeError) and fails(lambda: config["logger"], ConfigKeyError)
assert config.trainer.max_steps == 6 and config.get("logger", "default") == "default"
assert fails(lambda: config.required, MissingMandatoryValue)
assert getattr(config, "_private_probe", "absent") == "absent"
OmegaConf.set_struct(config, True)
assert fails(lambda: config.logger, ConfigAttributeError)
@dataclasses.dataclass
class Typed:
    steps: int = 1
assert fails(lambda: OmegaConf.structured(Typed).logger, ConfigAttributeError)
assert pickle.loads(pickle.dumps(config)) == config and copy.deepcopy(config) == config
print("OK")
'''
    assert_ok(run_python("LEGACY = True" + check, env=clean_environment(ZEROPATCH_LEGACY="omegaconf")))
    assert_ok(run_python("LEGACY = False" + check, env=clean_environment(ZEROPATCH_LEGACY="-omegaconf")))


def test_pretty_is_to_yaml_with_its_arguments():
    assert_ok(run_python('''
import zeropatch
from omegaconf import OmegaConf
config = OmegaConf.create({"b": 1, "a": "${b}", "items": [1, "${b}"]})
assert config.pretty() == OmegaConf.to_yaml(config) and "a: ${b}" in config.pretty()
assert config.pretty(resolve=True, sort_keys=True) == OmegaConf.to_yaml(config, resolve=True, sort_keys=True)
assert config.pretty(resolve=True).startswith("b: 1\\na: 1\\n")
assert config["items"].pretty(resolve=True) == "- 1\\n- 1\\n"
zeropatch.uninstall("omegaconf_legacy_api")
assert not hasattr(type(config), "pretty")
print("OK")
'''))
