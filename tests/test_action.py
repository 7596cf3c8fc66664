"""The CI gate: the composite GitHub Action runs ci/gate.sh, which is tested here for real."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml

from conformance.paths import ROOT

ACTION = ROOT / "ci" / "action.yml"
GATE = ROOT / "ci" / "gate.sh"
EXAMPLE = ROOT / "ci" / "example-workflow.yml"
TEXTBOOK = ROOT / "examples" / "textbook"


def gate(tmp_path: Path, **inputs: str) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    reports, summary = tmp_path / "reports", tmp_path / "step-summary.md"
    tmp_path.mkdir(parents=True, exist_ok=True)
    summary.write_text("earlier step\n")
    env = {**os.environ, "BMQC_REPORT_DIR": str(reports), "GITHUB_STEP_SUMMARY": str(summary),
           **{f"BMQC_{k.upper()}": v for k, v in inputs.items()}}
    # The console script must be the one of this interpreter.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    proc = subprocess.run(["bash", str(GATE)], capture_output=True, text=True, env=env,
                          timeout=300, check=False, cwd=ROOT)
    return proc, reports, summary


def test_action_inputs_outputs_and_its_one_command() -> None:
    action = yaml.safe_load(ACTION.read_text())
    assert action["runs"]["using"] == "composite"
    assert set(action["inputs"]) == {"candidate", "profile", "redis", "expectations",
                                     "python-version"}
    assert set(action["outputs"]) == {"report-json", "junit-xml", "summary-md"}
    steps = action["runs"]["steps"]
    gate_step = next(s for s in steps if s.get("id") == "gate")
    assert 'bash "${{ github.action_path }}/gate.sh"' in gate_step["run"]
    # Every input reaches the gate script through its environment.
    env = gate_step["env"]
    for name, variable in (("candidate", "BMQC_CANDIDATE"), ("profile", "BMQC_PROFILE"),
                           ("redis", "BMQC_REDIS"), ("expectations", "BMQC_EXPECT")):
        assert env[variable] == f"${{{{ inputs.{name} }}}}"
    for output in action["outputs"].values():
        assert output["value"].startswith("${{ steps.gate.outputs.")


def test_example_workflow_adopts_the_action_in_a_few_lines() -> None:
    workflow = yaml.safe_load(EXAMPLE.read_text())
    steps = workflow["jobs"]["conformance"]["steps"]
    uses = [s for s in steps if "bullmq-conformance/ci" in s.get("uses", "")]
    assert len(uses) == 1 and set(uses[0]["with"]) <= {"candidate", "profile", "redis",
                                                        "expectations", "python-version"}
    lines = [line for line in EXAMPLE.read_text().splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    assert len(lines) <= 12


def test_gate_passes_the_reference_and_writes_every_report(tmp_path: Path,
                                                            redis_url: str) -> None:
    proc, reports, summary = gate(tmp_path, redis=redis_url)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    document = json.loads((reports / "report.json").read_text())
    assert document["totals"]["failed"] == document["totals"]["errored"] == 0
    cases = list(ET.parse(reports / "junit.xml").getroot().iter("testcase"))
    assert len(cases) == len(document["results"])
    text = summary.read_text()
    assert text.startswith("earlier step\n")  # appended, not overwritten
    assert (reports / "summary.md").read_text() in text


def test_gate_fails_a_failing_port_and_honours_expectations(tmp_path: Path,
                                                             redis_url: str) -> None:
    adapter = f"command:{sys.executable} {TEXTBOOK / 'adapter.py'}"
    failing, reports, _ = gate(tmp_path / "plain", redis=redis_url, candidate=adapter)
    assert failing.returncode == 1, failing.stdout[-2000:] + failing.stderr
    assert json.loads((reports / "report.json").read_text())["totals"]["failed"] > 100
    shutil.rmtree(reports)
    gated, reports, _ = gate(tmp_path / "expected", redis=redis_url, candidate=adapter,
                             expect=str(TEXTBOOK / "expectations.yaml"))
    assert gated.returncode == 0, gated.stdout[-2000:] + gated.stderr
    assert json.loads((reports / "report.json").read_text())["totals"]["xfailed"] > 100


def test_gate_passes_usage_errors_through(tmp_path: Path) -> None:
    proc, _, _ = gate(tmp_path, candidate="carrier-pigeon")
    assert proc.returncode == 2
    assert "carrier-pigeon" in proc.stderr and "Traceback" not in proc.stderr
