"""yaml_load on the installed PyYAML: a call without a Loader reads plain YAML exactly as yaml.safe_load and as PyYAML
5's default (FullLoader) read it; a document asking for Python objects is refused and nothing in it runs; a call that
names its Loader, or Loader=None as PyYAML 5 allowed, behaves as it did; uninstall gives PyYAML 6's error back."""

from conftest import assert_ok, clean_environment, requires, run_python

pytestmark = requires("yaml")

PLAIN = [  # the shapes legacy configs take: anchors and merges, flow collections, scalars of every resolver
    "model: &m {ch: 64, mult: [1, 2, 4], dropout: 0.0}\nfirst_stage:\n  <<: *m\n  ch: 128\n",
    "lr: 1.0e-4\nsteps: 0x10\non: yes\noff: off\nnone: ~\nwhen: 2023-01-02\nstamp: 2023-01-02 03:04:05\n",
    "- a\n- [b, {c: d}]\n- !!str 12\n- !!float 3\n- !!binary aGk=\n- !!set {x}\n- !!omap [{k: 1}]\n",
    "multi: |\n  line one\n  line two\nfolded: >\n  joined\n  words\n",
]


def test_plain_yaml_reads_as_safe_load_and_as_pyyaml_5s_default():
    assert_ok(run_python(f'''
import io, yaml, zeropatch
zeropatch.install("yaml_load")
applied = zeropatch.status("yaml_load")[0].state
assert applied in ("applied", "not-needed"), applied
for text in {PLAIN!r}:
    expected = yaml.safe_load(text)
    assert expected == yaml.load(text, Loader=yaml.FullLoader)  # PyYAML 5.1-5.4's default reads it alike
    assert yaml.load(text) == expected and yaml.load(io.StringIO(text)) == expected, text
    assert yaml.load(text, None) == expected and yaml.load(stream=text, Loader=None) == expected
    assert list(yaml.load_all(text + "---\\n" + text)) == [expected, expected]
import pickle
assert pickle.loads(pickle.dumps(yaml.load)) is yaml.load  # by reference, as without the patch
print("ok", applied)
''', env=clean_environment(ZEROPATCH="pg_deepcopy")))


def test_python_tags_are_refused_and_nothing_in_the_document_runs(tmp_path):
    marker = tmp_path / "ran"
    assert_ok(run_python(f'''
import os, yaml, zeropatch
zeropatch.install("yaml_load")
if zeropatch.status("yaml_load")[0].state == "applied":
    attacks = ["!!python/object/apply:os.system ['touch {marker}']",
               "!!python/object/new:os.system ['touch {marker}']",
               "!!python/name:os.system", "!!python/tuple [1, 2]"]
    readers = [(yaml.load, text) for text in attacks] + [(lambda text: list(yaml.load_all(text)), "a: 1\\n--- " + text)
                                                         for text in attacks]
    for read, text in readers:
        try:
            read(text)
        except yaml.constructor.ConstructorError as refused:
            assert "zeropatch (yaml_load)" in "".join(getattr(refused, "__notes__", [])), refused
        else:
            raise AssertionError(f"read: {{text}}")
    assert not os.path.exists({str(marker)!r})
    assert yaml.load("!!python/tuple [1, 2]", Loader=yaml.FullLoader) == (1, 2)  # a Loader named: the caller's choice
    zeropatch.uninstall("yaml_load")
    try:
        yaml.load("a: 1")
    except TypeError as error:
        assert "missing 1 required positional argument: 'Loader'" in str(error), error
    else:
        raise AssertionError("uninstall left yaml.load reading without a Loader")
else:
    import inspect
    assert inspect.signature(yaml.load).parameters["Loader"].default is None  # PyYAML 5: its own default stays
print("ok")
''', env=clean_environment(ZEROPATCH="pg_deepcopy")))
