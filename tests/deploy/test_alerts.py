"""Issue 45: the alert rules, their unit tests, the runbook and the dashboard, shipped together
and checked against what the app really exports."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.support.servers import need_binary
from ttt.web import create_app

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
TOKEN = "alerts-metrics-token"
# PromQL words that are not metric names.
WORDS = {"sum", "rate", "increase", "histogram_quantile", "count", "max", "min", "avg", "or",
         "and", "unless", "by", "on", "without", "ignoring", "offset", "bool"}
FROM_PROMETHEUS = {"up"}  # written by Prometheus itself for each target


def alerts() -> list[dict]:
    """Each alert of deploy/alerts.yml: its name, expression, severity and runbook (read by
    the file's own shape: no YAML library in the dependencies; promtool checks the YAML)."""
    found = []
    for block in re.split(r"^\s*- alert: ", (DEPLOY / "alerts.yml").read_text(), flags=re.M)[1:]:
        name, _, rest = block.partition("\n")
        expr = re.search(r"^\s*expr: (>-\n(?:\s{10,}.*\n)+|.*\n)", rest, re.M).group(1)
        found.append({"alert": name.strip(),
                      "expr": " ".join(expr.removeprefix(">-").split()),
                      "severity": re.search(r"severity: (\w+)", rest).group(1),
                      "runbook": re.search(r"runbook: (\S+)", rest).group(1)})
    return found


def metric_names(expr: str) -> set[str]:
    """The metric names an expression reads (label matchers, strings, grouping labels and
    ranges taken out first)."""
    expr = re.sub(r'"[^"]*"', "", expr)
    expr = re.sub(r"\{[^}]*\}", "", expr)
    expr = re.sub(r"\[[^\]]*\]", "", expr)
    expr = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", "", expr)
    return {word for word in re.findall(r"\b[a-zA-Z_:][a-zA-Z0-9_:]*\b", expr)} - WORDS


@pytest.fixture(scope="module")
def exported() -> set[str]:
    """Every sample name one scrape of an app with a local AI pool serves."""
    app = create_app({"TESTING": True, "SECRET_KEY": "a", "TTT_STORE": "memory://",
                      "TTT_METRICS_TOKEN": TOKEN, "TTT_AI_WORKERS": 1})
    try:
        text = app.test_client().get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}
                                     ).get_data(as_text=True)
    finally:
        app.extensions["ttt_table"].thinker.close()
        app.extensions["ttt_store"].close()
    # The families declared (a labelled family with no child yet has a TYPE line and no
    # sample) and the samples each type writes.
    suffixes = {"counter": ("", "_total"), "histogram": ("_bucket", "_sum", "_count"),
                "gauge": ("",)}
    declared = {f"{name}{suffix}"
                for name, kind in re.findall(r"^# TYPE (\S+) (\w+)$", text, re.M)
                for suffix in suffixes.get(kind, ("",))}
    return declared | {re.split(r"[{ ]", line)[0] for line in text.splitlines()
                       if line and not line.startswith("#")} | FROM_PROMETHEUS


def test_the_rules_pass_promtool_check():
    promtool = need_binary("promtool")
    done = subprocess.run([promtool, "check", "rules", str(DEPLOY / "alerts.yml")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_rules_pass_their_unit_tests():
    """deploy/alerts_test.yml: each alert fires on its trouble and not on health."""
    promtool = need_binary("promtool")
    done = subprocess.run([promtool, "test", "rules", "alerts_test.yml"], cwd=DEPLOY,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_alert_has_a_unit_test_that_fires_it():
    text = (DEPLOY / "alerts_test.yml").read_text()
    fired = set(re.findall(r"alertname: (\w+)\n\s*exp_alerts:\n", text))
    assert {rule["alert"] for rule in alerts()} <= fired


def test_every_alert_has_a_runbook_section_that_says_what_to_do():
    runbook = (ROOT / "docs" / "runbook.md").read_text()
    sections = dict(re.findall(r"^## (\w+)\n(.*?)(?=^## |\Z)", runbook, re.M | re.S))
    for rule in alerts():
        name = rule["alert"]
        assert name in sections, f"docs/runbook.md has no section {name}"
        for part in ("**Means:**", "**Confirm:**", "**Do:**"):
            assert part in sections[name], f"{name}: no {part}"
        assert rule["runbook"] == f"docs/runbook.md#{name.lower()}"
        assert rule["severity"] in ("page", "ticket")
    assert set(sections) == {rule["alert"] for rule in alerts()}  # no section left stale


def test_every_alert_reads_metrics_the_app_exports(exported):
    for rule in alerts():
        names = metric_names(rule["expr"])
        assert names and names <= exported, (rule["alert"], names - exported)


def test_the_dashboard_asks_about_metrics_the_app_exports(exported):
    dashboard = json.loads((DEPLOY / "dashboard.json").read_text())
    assert dashboard["panels"]
    read = set()
    for panel in dashboard["panels"]:
        assert panel["title"] and panel["targets"], panel
        for target in panel["targets"]:
            names = metric_names(target["expr"])
            assert names and names <= exported, (panel["title"], names - exported)
            read |= names
    # The dashboard asks what the alerts ask.
    asked = set().union(*(metric_names(rule["expr"]) for rule in alerts()))
    assert asked <= read, asked - read


def test_the_rule_reader_reads_every_rule_promtool_counts():
    promtool = need_binary("promtool")
    done = subprocess.run([promtool, "check", "rules", str(DEPLOY / "alerts.yml")],
                          capture_output=True, text=True, timeout=60)
    assert f"SUCCESS: {len(alerts())} rules found" in done.stdout
    assert all(rule["expr"] for rule in alerts())


def test_the_metric_name_reader_skips_labels_and_functions():
    assert metric_names('histogram_quantile(0.99, sum by (le, operation) (rate('
                        'ttt_store_seconds_bucket{operation=~"get|update"}[5m]))) > 0.1'
                        ) == {"ttt_store_seconds_bucket"}
    assert metric_names('a_x{job="ttt"} / on (job, instance) b_y > 0.8') == {"a_x", "b_y"}
