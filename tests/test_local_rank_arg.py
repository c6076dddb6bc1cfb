"""local_rank_arg on the real argparse: either spelling reaches the declared destination, and parsers that declared
neither or both (PixArt-alpha) see their arguments unchanged. The launcher itself runs in the repro."""

from conftest import assert_ok, run_python


def test_either_spelling_reaches_the_declared_destination_only():
    assert_ok(run_python('''
import argparse, contextlib, io, sys, zeropatch
def parser(*declared, **kwargs):
    made = argparse.ArgumentParser(prog="train.py")
    for spelling in declared:
        made.add_argument(spelling, type=int, default=-1, **kwargs)
    made.add_argument("--epochs", type=int, default=1)
    return made
def refused(made, arguments):
    with contextlib.redirect_stderr(io.StringIO()) as err:
        try:
            made.parse_args(arguments)
        except SystemExit:
            return err.getvalue()
    raise AssertionError(arguments)
assert parser("--local_rank").parse_args(["--local-rank=3"]).local_rank == 3
assert parser("--local_rank").parse_args(["--local-rank", "2", "--epochs", "4"]).local_rank == 2
assert parser("--local-rank").parse_args(["--local_rank=1"]).local_rank == 1
assert parser("--local_rank", dest="rank").parse_args(["--local-rank=5"]).rank == 5
both = parser("--local-rank", "--local_rank", dest="local_rank")
assert both.parse_args(["--local-rank=6"]).local_rank == 6   # PixArt-alpha declares both: untouched
assert "unrecognized arguments: --local-rank=0" in refused(parser(), ["--local-rank=0"])   # declared neither
known, extra = parser("--local_rank").parse_known_args(["--local-rank=7", "--", "--local-rank=8"])
assert known.local_rank == 7 and extra == ["--", "--local-rank=8"], (known, extra)   # nothing after -- is touched
sys.argv = ["train.py", "--local-rank=9"]
assert parser("--local_rank").parse_args().local_rank == 9
top = argparse.ArgumentParser()
top.add_argument("--local_rank", type=int)
sub = top.add_subparsers(dest="command").add_parser("fit")
sub.add_argument("--lr", type=float)
assert vars(top.parse_args(["--local-rank=1", "fit", "--lr", "0.1"])) == {"local_rank": 1, "command": "fit", "lr": 0.1}
zeropatch.uninstall("local_rank_arg")
assert "unrecognized arguments: --local-rank=3" in refused(parser("--local_rank"), ["--local-rank=3"])
print("ok")
'''))
