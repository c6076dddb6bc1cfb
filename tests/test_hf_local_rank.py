"""hf_training_args' silent part: transformers 4 set TrainingArguments.local_rank to the process's local index when
it set up the device (0 in one process); 5.x leaves -1, so FastChat's train_lora.py (`if training_args.local_rank ==
0:` save the adapter) trains and saves nothing. Code written for 4.x gets 4.x's value again; code declared for 5.x
keeps 5.x's; a 4.x release sets it itself."""

import sys

from conftest import assert_ok, clean_environment, distribution_version, requires, run_command

JOB = '''
import tempfile
from transformers import HfArgumentParser, TrainingArguments
arguments, = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses(
    ["--output_dir", tempfile.mkdtemp(), "--report_to", "none", "--evaluation_strategy", "no"])
arguments.device  # the device set-up, as Trainer(...) does it
print("LOCAL_RANK", arguments.local_rank)
'''


@requires("torch", "transformers")
def test_local_rank_is_the_process_index_again_for_code_written_for_4x(tmp_path):
    (tmp_path / "requirements.txt").write_text("transformers>=4.31.0\n")  # FastChat's pin
    (tmp_path / "train.py").write_text(JOB)
    ranks = {}
    for written_for, legacy in (("4.x", None), ("5.x", "-transformers")):
        env = clean_environment(**({"ZEROPATCH_LEGACY": legacy} if legacy else {}))
        result = run_command([sys.executable, "-m", "zeropatch", "run", "--", sys.executable, tmp_path / "train.py"],
                             env=env, cwd=tmp_path)
        assert_ok(result)
        ranks[written_for] = int(result.stdout.split("LOCAL_RANK ")[1].split()[0])
    expected_for_5x = -1 if distribution_version("transformers") >= (5,) else 0  # 4.x sets it itself
    assert ranks == {"4.x": 0, "5.x": expected_for_5x}, ranks
