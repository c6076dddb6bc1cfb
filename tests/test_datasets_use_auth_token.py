"""datasets_use_auth_token on the installed datasets: load_dataset / load_dataset_builder take use_auth_token as
token (its value reaches the builder; None is no token; a different token given too is refused), through both
datasets.load_dataset and datasets.load.load_dataset; zeropatch explain tells the builder configuration's error
from transformers' own use_auth_token error. The not-needed side (datasets 2.21 takes the keyword itself) is the
repro's and test_orderings'."""

import sys

import pytest

from conftest import assert_ok, clean_environment, distribution_version, requires, run_command, run_python

@requires("datasets")
@pytest.mark.skipif((distribution_version("datasets") or (3,)) < (3,),
                    reason="datasets < 3.0 takes use_auth_token itself (not-needed: the repro runs there)")
def test_use_auth_token_reaches_the_builder_as_token(tmp_path):
    (tmp_path / "train.csv").write_text("text,label\na,0\nb,1\n")
    assert_ok(run_python(f'''
import zeropatch, datasets, datasets.load
assert zeropatch.status("datasets_use_auth_token")[0].state == "applied"
files = {{"train": {str(tmp_path / "train.csv")!r}}}
for load_dataset_builder in (datasets.load_dataset_builder, datasets.load.load_dataset_builder):
    assert load_dataset_builder("csv", data_files=files, use_auth_token="hf_legacy").token == "hf_legacy"
    assert load_dataset_builder("csv", data_files=files, use_auth_token=None).token is None
    assert load_dataset_builder("csv", data_files=files, token="hf_new", use_auth_token=None).token == "hf_new"
    try:
        load_dataset_builder("csv", data_files=files, token="hf_new", use_auth_token="hf_legacy")
    except ValueError as error:
        assert "`token` and `use_auth_token` are both specified" in str(error), error
    else:
        raise AssertionError("two different credentials were accepted")
for load_dataset in (datasets.load_dataset, datasets.load.load_dataset):
    rows = load_dataset("csv", data_files=files, use_auth_token=None, cache_dir={str(tmp_path / "cache")!r})
    assert rows["train"]["label"] == [0, 1], rows
print("ok")
''', env=clean_environment(HF_HOME=str(tmp_path / "hf"), HF_DATASETS_OFFLINE="1")))


@pytest.mark.parametrize("error, patch", [
    ("TypeError: CsvConfig.__init__() got an unexpected keyword argument 'use_auth_token'", "datasets_use_auth_token"),
    ("TypeError: BertModel.__init__() got an unexpected keyword argument 'use_auth_token'",
     "transformers_use_auth_token"),
])
def test_explain_names_the_library_whose_keyword_it_was(error, patch):
    result = run_command([sys.executable, "-m", "zeropatch", "explain", error], env=clean_environment())
    assert result.returncode == 0 and result.stdout.startswith(f"{patch}: "), result.stdout
