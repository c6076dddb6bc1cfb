"""hf_training_args on the real transformers: the options transformers removed take their 4.5x effect through every way
HfArgumentParser reads them (command line in both spellings, bare boolean flags, parse_dict / JSON) and through
TrainingArguments(...) itself; report_to=None is every installed integration again; a successor given explicitly is
kept where 4.x kept it (warmup_steps over the ratio) and merged where 4.x merged (fsdp_config); what cannot be
expressed is refused with what to do; unknown options still fail. The alpaca command line, trained two steps, is the
repro (its expected effects are what transformers 4.51.3, which still has every option but evaluation_strategy, gives
natively)."""

import pytest

from conftest import assert_ok, clean_environment, installed, requires, run_python

def lacks_every_option():
    """Whether the installed TrainingArguments lacks every option the patch translates (5.2x): these tests exercise
    the whole table. Releases that keep some natively (4.51-4.57, 5.0-5.8: warmup_ratio, group_by_length, ...) run
    the repro, whose expected effects are 4.51.3's native ones."""
    import dataclasses

    from zeropatch.patches.transformers.hf_training_args import RENAMED, SPECIAL, legacy_options
    from transformers import TrainingArguments

    return set(legacy_options({field.name for field in dataclasses.fields(TrainingArguments)})) == {*RENAMED, *SPECIAL}


pytestmark = [requires("torch", "transformers"),
              pytest.mark.skipif(not installed("transformers") or not lacks_every_option(),
                                 reason="a TrainingArguments that still has some of the options (the repro covers it)")]

PRELUDE = '''
import json, os, tempfile, zeropatch
from dataclasses import dataclass, field
import transformers
from transformers import HfArgumentParser, TrainingArguments

@dataclass
class Legacy(TrainingArguments):  # the fine-tuners' own subclass
    model_max_length: int = field(default=16)

folder = tempfile.mkdtemp()
def parse(*words):
    return HfArgumentParser((Legacy,)).parse_args_into_dataclasses(args=["--output_dir", folder, *words])[0]
'''


def test_every_way_the_parser_reads_options():
    assert_ok(run_python(PRELUDE + '''
spelled = parse("--evaluation-strategy=steps", "--warmup_ratio=0.1", "--group_by_length", "True", "--no_cuda")
assert (spelled.eval_strategy.value, spelled.get_warmup_steps(95), spelled.train_sampling_strategy, spelled.use_cpu) == \\
    ("steps", 10, "group_by_length", True), vars(spelled)
assert parse("--group_by_length", "False").train_sampling_strategy == "random"
assert parse("--per_gpu_eval_batch_size", "3").per_device_eval_batch_size == 3
assert parse("--overwrite_output_dir", "false").overwrite_output_dir is False
path = os.path.join(folder, "args.json")
json.dump({"output_dir": folder, "evaluation_strategy": "epoch", "warmup_ratio": 0.5, "logging_dir": folder + "/tb"}, open(path, "w"))
(from_json,) = HfArgumentParser((Legacy,)).parse_json_file(path)
assert (from_json.eval_strategy.value, from_json.get_warmup_steps(10), from_json.logging_dir) == ("epoch", 5, folder + "/tb")
assert os.environ["TENSORBOARD_LOGGING_DIR"] == folder + "/tb"  # where transformers 5's TensorBoard callback writes
namespace = HfArgumentParser((Legacy,)).parse_args(["--overwrite_output_dir", "--evaluation_strategy", "epoch"])
assert namespace.overwrite_output_dir is True and namespace.eval_strategy == "epoch", namespace  # argparse's own
print("ok")
'''))


def test_successors_given_explicitly_win_or_merge_as_in_4x():
    assert_ok(run_python(PRELUDE + '''
assert parse("--warmup_steps", "7", "--warmup_ratio", "0.5").get_warmup_steps(100) == 7   # 4.x: steps > 0 won
config = parse("--fsdp_config", '{"transformer_layer_cls_to_wrap": ["A"]}', "--fsdp_transformer_layer_cls_to_wrap", "B").fsdp_config
assert config["transformer_layer_cls_to_wrap"] == ["A", "B"], config                        # 4.x appended
path = os.path.join(folder, "fsdp.json")
json.dump({"min_num_params": 0, "transformer_layer_cls_to_wrap": "A"}, open(path, "w"))
config = parse("--fsdp_config", path, "--fsdp_transformer_layer_cls_to_wrap", "B").fsdp_config
assert config["transformer_layer_cls_to_wrap"] == ["A", "B"], config
print("ok")
'''))


def test_the_keyword_form_on_training_arguments_itself():
    assert_ok(run_python(PRELUDE + '''
args = TrainingArguments(output_dir=folder, evaluation_strategy="steps", warmup_ratio=0.2, group_by_length=True,
                         no_cuda=True, overwrite_output_dir=True, use_mps_device=False)
assert (args.eval_strategy.value, args.get_warmup_steps(10), args.train_sampling_strategy, args.use_cpu,
        args.overwrite_output_dir) == ("steps", 2, "group_by_length", True, True)
print("ok")
'''))


def test_report_to_none_reports_to_every_installed_integration_as_in_4x():
    assert_ok(run_python(PRELUDE + '''
from transformers.integrations import get_available_reporting_integrations
every = get_available_reporting_integrations()
assert TrainingArguments(output_dir=folder, report_to=None).report_to == every       # alpaca-lora without wandb
assert HfArgumentParser((Legacy,)).parse_dict({"output_dir": folder, "report_to": None})[0].report_to == every
assert TrainingArguments(output_dir=folder).report_to == []                           # 5.x's default stays
zeropatch.uninstall("hf_training_args")
assert TrainingArguments(output_dir=folder, report_to=None).report_to == [None]       # what the Trainer refuses
print("ok")
'''))


def test_what_cannot_be_expressed_is_refused_and_unknown_options_still_fail():
    assert_ok(run_python(PRELUDE + '''
for words, message in ((["--warmup_ratio", "1.0"], "give the number of warmup steps instead"),
                       (["--evaluation_stratgy", "no"], "Some specified arguments are not used")):
    try:
        parse(*words)
    except ValueError as error:
        assert message in str(error), error
    else:
        raise AssertionError(f"{words} must be refused")
print("ok")
'''))


def test_without_zeropatch_the_parser_refuses_them():
    result = run_python(PRELUDE.replace("import json, os, tempfile, zeropatch", "import json, os, tempfile")
                        + 'parse("--evaluation_strategy", "no")', env=clean_environment(ZEROPATCH="0"))
    assert result.returncode != 0 and "not used by the HfArgumentParser: ['--evaluation_strategy'" in result.stderr, \
        result.stderr[-2000:]
