"""openai_object on the installed openai: OpenAIObject behaves as openai 0.28's (the sweep runs the same checks on
openai 0.28.1's own class, without zeropatch: the expectations below are that release's behaviour); the provided
module leaves with uninstall; the 0.x API stays refused with openai's own message."""

from conftest import assert_ok, clean_environment, requires, run_python

pytestmark = requires("openai")


def test_openai_object_is_0_28s_data_type():
    assert_ok(run_python('''
import copy, json, pickle, sys, zeropatch
zeropatch.install("openai_object")
import openai
from openai import openai_object
O = openai_object.OpenAIObject
state = zeropatch.status("openai_object")[0].state
assert state == ("not-needed" if openai.__version__.startswith("0.") else "applied"), (state, openai.__version__)
response = O.construct_from({"id": "cmpl-1", "object": "text_completion", "created": 3,
                             "choices": [{"text": "hi", "index": 0, "logprobs": None}], "usage": {"total_tokens": 5}},
                            api_key="sk-x")
choice = response.choices[0]
assert type(choice) is O and type(response.usage) is O and choice.text == "hi" and choice.logprobs is None
assert response.api_key == "sk-x" and "api_key" not in response and response.openai_id == "cmpl-1"
choice.finish_reason = "stop"
choice["total_tokens"] = response.usage.total_tokens
assert choice == {"text": "hi", "index": 0, "logprobs": None, "finish_reason": "stop", "total_tokens": 5}, choice
try:
    del choice.finish_reason
except NotImplementedError as error:
    assert str(error) == "del is not supported", error
else:
    raise AssertionError("del was allowed")
for missing in ("absent", "_private"):
    try:
        getattr(choice, missing)
    except AttributeError:
        pass
    else:
        raise AssertionError(missing)
try:
    choice.text = ""
except ValueError as error:
    assert "empty string" in str(error)
else:
    raise AssertionError("an empty string was set")
plain = response.to_dict_recursive()
assert type(plain["choices"][0]) is dict and type(response.to_dict()) is dict
assert json.loads(str(response)) == plain and repr(response).startswith("<OpenAIObject text_completion id=cmpl-1 at ")
for other in (pickle.loads(pickle.dumps(response)), copy.copy(response), copy.deepcopy(response)):
    assert type(other) is O and other == response and other.choices[0].text == "hi", other
assert O.__module__ == "openai.openai_object" and O.__qualname__ == "OpenAIObject"
if state == "applied":
    zeropatch.uninstall("openai_object")
    assert "openai.openai_object" not in sys.modules
    try:
        openai.Completion.create(model="m", prompt="p")
    except Exception as error:
        # the 0.x API: openai's own refusal, untouched (APIRemovedInV1; openai 1.0.0 had no such name at all)
        assert type(error).__name__ in ("APIRemovedInV1", "AttributeError"), error
print("ok", state)
''', env=clean_environment(ZEROPATCH="pg_deepcopy")))
