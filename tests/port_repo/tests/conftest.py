"""The port's own conftest: it loads the conformance plugin by name, as its README shows."""

pytest_plugins = ["conformance.plugin"]
