"""Headless Chromium for the page tests, driven over the DevTools protocol: the `chromium`
fixture (under CI=true a missing browser fails instead of skipping), a minimal DevTools client,
and loading a page while recording what it fetched and any error it raised.

tests/conftest.py loads this module as a plugin, so every test module gets the fixture.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def needed(what: str, install: str) -> None:
    """Skip for want of `what`; fail instead under CI=true, where it must be installed."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} is required under CI=true: {install}")
    pytest.skip(f"{what} is not installed ({install})")


@pytest.fixture(scope="session")
def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        needed("chromium", "apt-get install chromium")
    assert found is not None
    return found


def base_args(binary: str, profile: Path) -> list[str]:
    """A headless browser's command line, with its own profile directory."""
    # A profile per browser: tests run in parallel; root needs --no-sandbox.
    return [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--no-default-browser-check", "--disable-extensions", "--hide-scrollbars",
            f"--user-data-dir={profile}", "--window-size=1200,900"]


class DevTools:
    """A minimal client of the DevTools protocol of one page (JSON over a WebSocket)."""

    def __init__(self, url: str) -> None:
        import websocket

        self.ws = websocket.create_connection(url, timeout=30, suppress_origin=True)
        self.events: list[dict[str, Any]] = []
        self._next = 0

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._next += 1
        self.ws.send(json.dumps({"id": self._next, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self._next:
                assert "error" not in message, (method, message["error"])
                return dict(message["result"])
            self.events.append(message)

    def wait_for(self, event: str, timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while not any(m.get("method") == event for m in self.events):
            assert time.monotonic() < deadline, f"no {event} within {timeout} s"
            self.events.append(json.loads(self.ws.recv()))
        return next(m for m in self.events if m.get("method") == event)

    def evaluate(self, expression: str) -> Any:
        reply = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        assert "exceptionDetails" not in reply, reply["exceptionDetails"]
        return reply["result"].get("value")

    def click(self, x: float, y: float) -> None:
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left",
                      clickCount=1)


@contextlib.contextmanager
def devtools(binary: str, tmp_path: Path) -> Iterator[DevTools]:
    """A headless Chromium on a blank page, driven through its DevTools port."""
    try:
        import websocket  # noqa: F401
    except ModuleNotFoundError:
        needed("the websocket-client package", "pip install -e '.[dev]'")
    profile = tmp_path / "profile"
    log = (tmp_path / "chromium.log").open("wb")
    proc = subprocess.Popen([*base_args(binary, profile), "--remote-debugging-port=0",
                             "about:blank"], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                            start_new_session=True)
    client = None
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        targets: list[dict[str, Any]] = []
        while not targets:
            assert proc.poll() is None, f"chromium exited {proc.returncode}: see {log.name}"
            assert time.monotonic() < deadline, f"no DevTools page within 60 s: see {log.name}"
            time.sleep(0.1)
            if not port_file.is_file() or not port_file.read_text().strip():
                continue
            port = port_file.read_text().split()[0]
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
                targets = [t for t in json.load(r) if t["type"] == "page"]
        client = DevTools(targets[0]["webSocketDebuggerUrl"])
        yield client
    finally:
        if client is not None:
            client.ws.close()
        # The browser's own process group: its renderer and helper processes, nothing else.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)
        log.close()


def load(client: DevTools, url: str) -> None:
    """Open `url` in a 1200x900 window, recording its requests, console and log."""
    for domain in ("Page", "Runtime", "Network", "Log"):
        client.call(f"{domain}.enable")
    client.call("Emulation.setDeviceMetricsOverride", width=1200, height=900,
                deviceScaleFactor=1, mobile=False)
    client.call("Page.navigate", url=url)
    client.wait_for("Page.loadEventFired")


def problems(client: DevTools) -> list[Any]:
    """Script exceptions and console or browser errors (a CSP violation is one)."""
    return [m for m in client.events
            if m.get("method") == "Runtime.exceptionThrown"
            or (m.get("method") == "Runtime.consoleAPICalled" and m["params"]["type"] == "error")
            or (m.get("method") == "Log.entryAdded" and m["params"]["entry"]["level"] == "error")]
