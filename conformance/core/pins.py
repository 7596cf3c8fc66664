"""The official release the suite pins: the one home of its version.

It is read by the Python code, the tests and the CI scripts (ci/lib.sh's `pinned_bullmq`);
pyproject.toml's dev extra spells it too, for pip (tests/test_odd_candidates.py holds the two
equal), and tests/test_one_home.py fails on any other spelling. A module of its own, importing
nothing, so the command line's `--version` can name it at no cost.
"""

#: The official PyPI `bullmq` release of the dev extra, the `bullmq-py` candidate's reference.
PINNED_VERSION = "3.4.4"
#: The npm bullmq release whose Lua scripts the pinned PyPI release ships: its protocol, at which
#: `mutants --scripts official` judges them (`identify` names the range; ci/releases.toml judges
#: the release there too).
PINNED_PROTOCOL = "6.4.0"
