"""Play a GitHub runner for a composite action's steps, so CI can run ci/action.yml for real.

No GitHub runner is reachable from CI, so this does what one does with a composite action:

- evaluates the `${{ }}` expressions the action uses (`inputs.*`, `github.action_path`,
  `runner.temp`, `steps.<id>.outputs.*`, `==`, `!=`, `&&`, `||`, `!`, `always()`,
  `success()`, `failure()`);
- runs each `run:` step with `bash --noprofile --norc -eo pipefail`, in its working directory,
  with its env, `GITHUB_OUTPUT`, `GITHUB_STEP_SUMMARY` and `GITHUB_ACTION_PATH`, and skips a
  step whose `if:` is false (after a failure, only `always()` and `failure()` steps run);
- stands in for the two third-party actions the action uses: `actions/setup-python` (hands
  over a given Python, and insists on `update-environment: false`, so the job's own Python is
  left alone) and `actions/upload-artifact` (copies the files to `artifacts/<name>/`).

Anything else, an unknown expression or another `uses:`, is an error: the action cannot grow a
step that this runner would silently skip.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

PINNED = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40}$")
_TOKEN = re.compile(r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<op>==|!=|&&|\|\||!|\(|\))|"
                    r"(?P<name>[A-Za-z_][\w.-]*))")


@dataclass
class StepResult:
    """What one step did."""

    name: str
    ran: bool
    ok: bool = True
    outputs: dict[str, str] = field(default_factory=dict)
    stdout: str = ""
    stderr: str = ""


@dataclass
class ActionRun:
    """The outcome of a whole run of the action."""

    ok: bool
    steps: list[StepResult]
    outputs: dict[str, str]
    artifacts: dict[str, Path]


class _Expr:
    """A recursive-descent evaluator for the expression subset GitHub actions commonly use."""

    def __init__(self, text: str, context: Mapping[str, Any], failed: bool) -> None:
        self.tokens = self._tokenize(text)
        self.pos = 0
        self.context = context
        self.failed = failed

    @staticmethod
    def _tokenize(text: str) -> list[tuple[str, str]]:
        tokens, pos = [], 0
        while pos < len(text.rstrip()):
            match = _TOKEN.match(text, pos)
            if match is None:
                raise ValueError(f"cannot parse expression {text!r} at {pos}")
            kind = match.lastgroup or ""
            tokens.append((kind, match.group(kind)))
            pos = match.end()
        return tokens

    def value(self) -> Any:
        result = self._or()
        if self.pos != len(self.tokens):
            raise ValueError(f"trailing tokens in expression: {self.tokens[self.pos:]}")
        return result

    def _peek(self) -> str | None:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) else None

    def _or(self) -> Any:
        left = self._and()
        while self._peek() == "||":
            self.pos += 1
            right = self._and()
            left = left or right
        return left

    def _and(self) -> Any:
        left = self._compare()
        while self._peek() == "&&":
            self.pos += 1
            right = self._compare()
            left = left and right
        return left

    def _compare(self) -> Any:
        left = self._unary()
        while self._peek() in ("==", "!="):
            op = self.tokens[self.pos][1]
            self.pos += 1
            right = self._unary()
            left = (str(left) == str(right)) if op == "==" else (str(left) != str(right))
        return left

    def _unary(self) -> Any:
        if self._peek() == "!":
            self.pos += 1
            return not self._unary()
        if self._peek() == "(":
            self.pos += 1
            inner = self._or()
            if self._peek() != ")":
                raise ValueError("missing )")
            self.pos += 1
            return inner
        kind, text = self.tokens[self.pos]
        self.pos += 1
        if kind == "str":
            return text[1:-1].replace("''", "'")
        if self._peek() == "(":
            if self.tokens[self.pos + 1][1] != ")":
                raise ValueError(f"{text}() takes no arguments here")
            self.pos += 2
            calls = {"always": True, "success": not self.failed, "failure": self.failed}
            if text not in calls:
                raise ValueError(f"unknown function {text}()")
            return calls[text]
        if text in ("true", "false"):
            return text == "true"
        node: Any = self.context
        for part in text.split("."):
            if not isinstance(node, Mapping) or part not in node:
                raise ValueError(f"unknown context value {text!r}")
            node = node[part]
        return node


def evaluate(text: str, context: Mapping[str, Any], failed: bool = False) -> Any:
    """The value of a bare expression (the inside of `${{ }}`, or an `if:`)."""
    inner = text.strip()
    if inner.startswith("${{") and inner.endswith("}}"):
        inner = inner[3:-2]
    return _Expr(inner, context, failed).value()


def substitute(text: Any, context: Mapping[str, Any]) -> str:
    """`text` with every `${{ expr }}` replaced by its value (YAML booleans as GitHub writes
    them: `true`, `false`)."""
    if isinstance(text, bool):
        return "true" if text else "false"

    def one(match: re.Match[str]) -> str:
        value = evaluate(match.group(1), context)
        return "" if value is None else str(value)

    return re.sub(r"\$\{\{(.*?)\}\}", one, str(text))


def _read_outputs(path: Path) -> dict[str, str]:
    outputs: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if "<<" in line and "=" not in line.split("<<", 1)[0]:
            name, marker = line.split("<<", 1)
            body = []
            while lines[index] != marker:
                body.append(lines[index])
                index += 1
            index += 1
            outputs[name] = "\n".join(body)
        elif "=" in line:
            name, value = line.split("=", 1)
            outputs[name] = value
    return outputs


def run_action(action_dir: Path, inputs: Mapping[str, str], *, workspace: Path,
               runner_temp: Path, base_python: str,
               env: Mapping[str, str] | None = None, timeout: float = 900) -> ActionRun:
    """Run the composite action in `action_dir` (its action.yml) as a job step would."""
    action = yaml.safe_load((action_dir / "action.yml").read_text(encoding="utf-8"))
    runner_temp.mkdir(parents=True, exist_ok=True)
    if action["runs"]["using"] != "composite":
        raise ValueError("only composite actions")
    unknown = set(inputs) - set(action.get("inputs", {}))
    if unknown:
        raise ValueError(f"the action has no input(s) {sorted(unknown)}")
    given = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    given.update(inputs)
    steps_ctx: dict[str, dict[str, dict[str, str]]] = {}
    context = {"inputs": given, "github": {"action_path": str(action_dir),
                                           "workspace": str(workspace)},
               "runner": {"temp": str(runner_temp)}, "steps": steps_ctx}
    summary = runner_temp / "step-summary.md"
    artifacts: dict[str, Path] = {}
    results: list[StepResult] = []
    failed = False
    for number, step in enumerate(action["runs"]["steps"]):
        name = step.get("name") or step.get("uses") or f"step {number}"
        condition = step.get("if", "success()")
        if not evaluate(str(condition), context, failed):
            results.append(StepResult(name, ran=False))
            continue
        if "uses" in step:
            result = _uses(step, name, context, base_python, runner_temp, artifacts)
        else:
            result = _run(step, name, context, action_dir, workspace, runner_temp, summary,
                          env or os.environ, timeout)
        results.append(result)
        if "id" in step:
            steps_ctx[step["id"]] = {"outputs": result.outputs}
        failed = failed or not result.ok
    outputs = {key: substitute(spec["value"], context)
               for key, spec in action.get("outputs", {}).items()}
    return ActionRun(not failed, results, outputs, artifacts)


def _uses(step: Mapping[str, Any], name: str, context: Mapping[str, Any], base_python: str,
          runner_temp: Path, artifacts: dict[str, Path]) -> StepResult:
    ref = step["uses"]
    if not PINNED.match(ref):
        raise ValueError(f"{ref}: third-party actions must be pinned by commit SHA")
    with_ = {key: substitute(value, context) for key, value in step.get("with", {}).items()}
    action = ref.split("@", 1)[0]
    if action == "actions/setup-python":
        if with_.get("update-environment") != "false":
            raise ValueError("setup-python must not change the job's Python (update-environment)")
        return StepResult(name, ran=True, outputs={"python-path": base_python})
    if action == "actions/upload-artifact":
        target = runner_temp / "artifacts" / with_["name"]
        if target.exists():
            raise ValueError(f"artifact {with_['name']!r} uploaded twice in one run")
        target.mkdir(parents=True)
        found = False
        for line in with_["path"].splitlines():
            source = Path(line.strip())
            if source.is_dir():
                shutil.copytree(source, target, dirs_exist_ok=True)
                found = found or any(source.iterdir())
            elif source.is_file():
                shutil.copy2(source, target / source.name)
                found = True
        policy = with_.get("if-no-files-found", "warn")
        if not found and policy == "error":
            return StepResult(name, ran=True, ok=False, stderr="no files found")
        artifacts[with_["name"]] = target
        return StepResult(name, ran=True)
    raise ValueError(f"{ref}: this runner does not know that action")


def _run(step: Mapping[str, Any], name: str, context: Mapping[str, Any], action_dir: Path,
         workspace: Path, runner_temp: Path, summary: Path, base_env: Mapping[str, str],
         timeout: float) -> StepResult:
    if step.get("shell") != "bash":
        raise ValueError(f"step {name!r}: composite run steps must say shell: bash")
    script = runner_temp / "step.sh"
    script.write_text(substitute(step["run"], context), encoding="utf-8")
    output = runner_temp / "github-output"
    output.write_text("", encoding="utf-8")
    env = {**base_env,
           **{key: substitute(value, context) for key, value in step.get("env", {}).items()},
           "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(summary),
           "GITHUB_ACTION_PATH": str(action_dir), "GITHUB_WORKSPACE": str(workspace),
           "RUNNER_TEMP": str(runner_temp)}
    cwd = workspace / substitute(step.get("working-directory", "."), context)
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)
    return StepResult(name, ran=True, ok=proc.returncode == 0, outputs=_read_outputs(output),
                      stdout=proc.stdout, stderr=proc.stderr)
