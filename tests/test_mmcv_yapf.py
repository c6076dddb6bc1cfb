"""mmcv_yapf on the real yapf (and mmcv 1.7.0 where installed): FormatCode takes verify= again and formats exactly as
without it; mmcv's pretty_text and dump work."""

import pytest

from conftest import assert_ok, distribution_version, requires, run_python

pytestmark = [requires("yapf"), pytest.mark.skipif((distribution_version("yapf") or (0,)) < (0, 40, 2),
                                                    reason="FormatCode lost verify in yapf 0.40.2")]


def test_verify_is_accepted_and_changes_nothing_but_the_check():
    assert_ok(run_python('''
import zeropatch
from yapf.yapflib.yapf_api import FormatCode
source = "x = dict(a=1,b=[1,2,\\n  3])\\nif x :\\n  y=2\\n"
plain = FormatCode(source, style_config="pep8")
assert FormatCode(source, style_config="pep8", verify=True) == plain
assert FormatCode(source, style_config="pep8", verify=False) == plain
assert FormatCode(source, style_config="pep8", print_diff=True, verify=True) == FormatCode(source, style_config="pep8", print_diff=True)
zeropatch.uninstall("mmcv_yapf")
from yapf.yapflib import yapf_api
try:
    yapf_api.FormatCode(source, verify=True)
except TypeError as error:
    assert "verify" in str(error)
else:
    raise AssertionError("uninstall restores yapf's own FormatCode")
print("ok")
'''))


@requires("mmcv")
def test_mmcv_pretty_text_is_yapf_formatted():
    assert_ok(run_python('''
import zeropatch
from mmcv import Config
from yapf.yapflib.yapf_api import FormatCode
config = Config(dict(model=dict(type="PixArt_XL_2", depth=28), lr=2e-5))
text = config.pretty_text
assert "model = dict(type='PixArt_XL_2', depth=28)" in text, text
assert FormatCode(text, style_config=dict(based_on_style="pep8"))[0] == text or "lr = 2e-05" in text
print("ok")
'''))
