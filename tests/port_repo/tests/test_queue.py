"""The port's own unit tests."""

import os


def test_add_returns_an_id() -> None:
    assert "1".isdigit()


def test_known_regression() -> None:
    assert os.environ.get("PORT_BUG") != "1", "the port's own bug, switched on by the test"
