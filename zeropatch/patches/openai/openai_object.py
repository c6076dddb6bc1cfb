"""openai_object: ``from openai import openai_object`` works again, with openai < 1.0's ``OpenAIObject`` data type.

Breaks: openai 1.0 (November 2023) rewrote the package and deleted ``openai/openai_object.py``. tatsu-lab/
stanford_alpaca's ``utils.py`` (imported by its ``train.py``, which never calls OpenAI) and the many instruction-tuning
repositories that copied it stop at import: "cannot import name 'openai_object' from 'openai'".

Changes: when ``openai.openai_object`` is imported and the installed openai has none, zeropatch provides the module
with ``OpenAIObject`` as openai 0.28 had it as a data type: a dict whose keys read and write as attributes
(``completion.choices[0].text``; ``del`` refused, as it was), nested dicts and lists of dicts converted on
``construct_from`` / ``refresh_from``, ``to_dict`` / ``to_dict_recursive``, its JSON ``str``, copying and pickling. Not restored: the 0.x API calls
(``openai.Completion.create``, an object's ``request``), which openai >= 1.0 refuses with its own ``APIRemovedInV1``
message (``openai migrate`` rewrites such code). On openai 0.x the real module is imported and left alone.
"""

import json

from zeropatch._core import NotNeeded, Patch, is_provided

KEYWORDS = ("api_key", "api_version", "api_type", "organization", "engine")


def _converted(value):
    if isinstance(value, list):
        return [_converted(item) for item in value]
    if isinstance(value, dict) and not isinstance(value, OpenAIObject):
        return OpenAIObject.construct_from(value)
    return value


def _plain(value):
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


class OpenAIObject(dict):
    """openai 0.x's response object: a dict whose keys are also its attributes; names starting with ``_`` and the
    client settings (``api_key``, ``api_version``, ``api_type``, ``organization``, ``engine``) are plain attributes."""

    def __init__(self, id=None, api_key=None, api_version=None, api_type=None, organization=None, response_ms=None,
                 api_base=None, engine=None, **params):
        super().__init__()
        if response_ms is not None and not isinstance(response_ms, int):
            raise TypeError(f"response_ms is a {type(response_ms).__name__}.")
        self._response_ms = response_ms
        for name, value in zip(KEYWORDS, (api_key, api_version, api_type, organization, engine)):
            object.__setattr__(self, name, value)
        if id:
            self["id"] = id

    def __setattr__(self, name, value):
        if name.startswith("_") or name in self.__dict__:
            object.__setattr__(self, name, value)
        else:
            self[name] = value

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError as missing:
            raise AttributeError(*missing.args) from None

    def __delattr__(self, name):
        if name.startswith("_") or name in self.__dict__:
            object.__delattr__(self, name)
        else:
            del self[name]

    def __delitem__(self, key):
        raise NotImplementedError("del is not supported")

    def __setitem__(self, key, value):
        if value == "":
            raise ValueError(f"You cannot set {key} to an empty string. We interpret empty strings as None in requests. "
                             f"You may set {self}.{key} = None to delete the property")
        super().__setitem__(key, value)

    @classmethod
    def construct_from(cls, values, api_key=None, api_version=None, organization=None, engine=None, response_ms=None):
        made = cls(values.get("id"), api_key=api_key, api_version=api_version, organization=organization, engine=engine,
                   response_ms=response_ms)
        made.refresh_from(values, api_key=api_key, api_version=api_version, organization=organization,
                          response_ms=response_ms)
        return made

    def refresh_from(self, values, api_key=None, api_version=None, api_type=None, organization=None,
                     response_ms=None):
        """The object's keys become ``values``'s (nested dicts as OpenAIObjects); the settings given replace its own."""
        for name, value in zip(KEYWORDS, (api_key, api_version, api_type, organization)):
            object.__setattr__(self, name, value or getattr(self, name, None))
        self._response_ms = response_ms
        self.clear()
        for key, value in values.items():
            super().__setitem__(key, _converted(value))

    @property
    def response_ms(self):
        return self._response_ms

    @property
    def openai_id(self):
        return self.id

    def to_dict(self):
        return dict(self)

    def to_dict_recursive(self):
        return _plain(self)

    def __repr__(self):
        kind = f" {self['object']}" if isinstance(self.get("object"), str) else ""
        identity = f" id={self['id']}" if isinstance(self.get("id"), str) else ""
        return f"<{type(self).__name__}{kind}{identity} at {hex(id(self))}> JSON: {str(self)}"

    def __str__(self):
        return json.dumps(self.to_dict_recursive(), sort_keys=True, indent=2)

    def __reduce__(self):
        """Pickling and copying, as 0.28: built again from its id and first four settings (not ``engine``), then its
        keys as they are."""
        return type(self), (self.get("id"), *(getattr(self, name) for name in KEYWORDS[:4])), dict(self)

    def __setstate__(self, state):
        dict.update(self, state)


def apply(patcher, module):
    if not is_provided(module):
        raise NotNeeded("openai still has openai.openai_object (openai < 1.0)")
    patcher.fill(module, {"OpenAIObject": OpenAIObject}, "openai < 1.0's openai.openai_object: its data type "
                 "(provided by zeropatch)")
    return "openai.openai_object provided: OpenAIObject (the 0.x data type; not the 0.x API)"


PATCH = Patch(
    "openai_object",
    since="0.4.0",
    summary="from openai import openai_object (stanford_alpaca's utils.py) works on openai >= 1.0: OpenAIObject as "
    "0.28's data type, not the 0.x API",
    package="openai",
    affected="1.0.0-3.57.0 (swept; 0.28.1 still has it)",
    targets=("openai.openai_object",),
    provides=True,
    apply=apply,
    errors=(r"cannot import name 'openai_object' from 'openai'", r"No module named 'openai\.openai_object'"),
    looks_for=("import openai.openai_object",),
)
