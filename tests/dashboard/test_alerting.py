"""The alert and recording rules under promtool, and the Grafana dashboard's PromQL evaluated
by promtool against series of known rates.

promtool comes with Debian's ``prometheus`` package.  Where it is missing these tests skip
with the reason, unless FASTSSE_REQUIRE_PROMTOOL=1 (set by .ci/run), where they fail.
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from prometheus_client import Counter, Gauge, Histogram

from fastsse_service import metrics
from tests import dependencies
from tests.service.conftest import REPO

RULES = REPO / "dashboard" / "prometheus" / "rules.yml"
RULES_TEST = REPO / "dashboard" / "prometheus" / "rules_test.yml"
GRAFANA = REPO / "dashboard" / "grafana" / "fastsse.json"


@pytest.fixture(scope="module")
def promtool() -> str:
    return dependencies.promtool()


def run(*command) -> str:
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_the_rules_are_valid(promtool):
    assert "SUCCESS" in run(promtool, "check", "rules", str(RULES))


def test_every_alert_fires_and_stays_quiet_when_it_should(promtool):
    assert "SUCCESS" in run(promtool, "test", "rules", str(RULES_TEST))
    text = RULES_TEST.read_text()
    alerts = re.findall(r"^\s+- alert: (\w+)$", RULES.read_text(), re.MULTILINE)
    for alert in alerts:
        # a case where it fires (exp_alerts with labels) and one where it does not
        cases = re.findall(rf"alertname: {alert}\n\s+exp_alerts:(.*?)(?=\n\s+- eval_time|\n  - |\Z)", text, re.DOTALL)
        assert any("exp_labels" in case for case in cases), f"{alert} never fires in a test"
        assert any(case.strip().startswith("[]") for case in cases), f"{alert} always fires"


def exported_names() -> set[str]:
    names = set()
    for value in vars(metrics).values():
        if isinstance(value, Counter):
            names.add(value._name + "_total")
        elif isinstance(value, Histogram):
            names |= {value._name + suffix for suffix in ("", "_bucket", "_sum", "_count")}
        elif isinstance(value, Gauge):
            names.add(value._name)
    return names


def expressions(text: str) -> set[str]:
    return set(re.findall(r"\b(fastsse_[a-z_]+)\b", text))


def test_rules_and_grafana_read_only_metrics_the_service_exports():
    known = exported_names()
    for source in (RULES.read_text(), GRAFANA.read_text()):
        unknown = expressions(source) - known
        assert not unknown, unknown


# The Grafana panels' expressions, evaluated at 20m over a 10m range on these series.
SERIES = {
    'fastsse_streams_total{tool="codex",protocol="chat"}': "0+60x30",
    'fastsse_streams_total{tool="claude-code",protocol="anthropic"}': "0+30x30",
    'fastsse_silent_streams_total{tool="codex",protocol="chat"}': "0+6x30",
    'fastsse_silent_streams_total{tool="claude-code",protocol="anthropic"}': "0+6x30",
    'fastsse_stream_verdicts_total{tool="codex",protocol="chat",category="complete",silent="false"}': "0+54x30",
    'fastsse_stream_verdicts_total{tool="codex",protocol="chat",category="no_end_marker",silent="true"}': "0+6x30",
    'fastsse_stream_verdicts_total{tool="claude-code",protocol="anthropic",category="complete",silent="false"}': "0+24x30",
    'fastsse_stream_verdicts_total{tool="claude-code",protocol="anthropic",category="truncated_length",silent="true"}': "0+6x30",
    'fastsse_stream_model_fallbacks_total{tool="codex",protocol="chat"}': "0+3x30",
    'fastsse_stream_model_fallbacks_total{tool="claude-code",protocol="anthropic"}': "0x30",
    'fastsse_requests_total{tool="codex",protocol="chat"}': "0+10x30",
    'fastsse_first_attempt_failures_total{tool="codex",protocol="chat"}': "0+2x30",
    'fastsse_retry_recoveries_total{tool="codex",protocol="chat"}': "0+1x30",
    'fastsse_retries_of_final_total{tool="codex",protocol="chat"}': "0+1x30",
    'fastsse_ingest_requests_total{status="201"}': "0+90x30",
    'fastsse_ingest_requests_total{status="503"}': "0x30",
    "fastsse_db_write_queue_depth": "10x30",
    "fastsse_db_write_queue_capacity": "1000x30",
}
# panel title -> its expressions' results, as we expect them: {labels: value}
EXPECTED = {
    "Silent-failure rate, tool × protocol (over the time range)": [
        {'tool="codex",protocol="chat"': 0.1, 'tool="claude-code",protocol="anthropic"': 0.2}
    ],
    "Streams, tool × protocol (over the time range)": [
        {'tool="codex",protocol="chat"': 600, 'tool="claude-code",protocol="anthropic"': 300}
    ],
    "Silent-failure rate over time (5 min)": [
        {'tool="codex",protocol="chat"': 0.1, 'tool="claude-code",protocol="anthropic"': 0.2}
    ],
    "Streams per second": [{'tool="codex",protocol="chat"': 1, 'tool="claude-code",protocol="anthropic"': 0.5}],
    "How they failed (over the time range)": [{'category="no_end_marker"': 60, 'category="truncated_length"': 60}],
    "Retries by tool (over the time range)": [
        {'tool="codex"': 100},
        {'tool="codex"': 20},
        {'tool="codex"': 10},
        {'tool="codex"': 10},
    ],
    "Model fallback rate by tool (5 min)": [{'tool="codex"': 0.05, 'tool="claude-code"': 0}],
    "Ingest answers per second, by status": [{'status="201"': 1.5, 'status="503"': 0}],
    "Write queue saturation": [{"": 0.01}],
}


def grafana_queries(dashboard: dict):
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            yield panel["title"], target["expr"]


def test_the_grafana_dashboard_is_provisionable():
    dashboard = json.loads(GRAFANA.read_text())
    assert dashboard["uid"] == "fastsse-silent-failures"
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert {"datasource", "tool", "protocol"} <= set(variables)
    assert all(p["datasource"]["uid"] == "${datasource}" for p in dashboard["panels"])
    assert [title for title in EXPECTED] == [p["title"] for p in dashboard["panels"]]
    for name in ("dashboards.yml", "datasources.yml"):
        assert "apiVersion: 1" in (GRAFANA.parent / "provisioning" / name).read_text()


def test_the_grafana_expressions_give_the_right_numbers(promtool, tmp_path):
    dashboard = json.loads(GRAFANA.read_text())
    by_panel: dict[str, list[str]] = {}
    for title, expr in grafana_queries(dashboard):
        by_panel.setdefault(title, []).append(expr)
    cases = []
    for title, exprs in by_panel.items():
        for expr, expected in zip(exprs, EXPECTED[title], strict=True):
            concrete = (
                expr.replace("$tool", ".*")
                .replace("$protocol", ".*")
                .replace("$__range", "10m")
                .replace("$__rate_interval", "5m")
            )
            # a bare selector keeps the series' name; an aggregation or a division does not
            bare = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?$", concrete)
            name = bare.group(1) if bare else ""
            samples = [{"labels": name + "{" + labels + "}", "value": value} for labels, value in expected.items()]
            cases.append({"expr": concrete, "eval_time": "20m", "exp_samples": samples})
    test = {
        "rule_files": [str(RULES)],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": name, "values": values} for name, values in SERIES.items()],
                "promql_expr_test": cases,
            }
        ],
    }
    path = tmp_path / "grafana_test.yml"
    path.write_text(json.dumps(test))  # JSON is YAML
    assert "SUCCESS" in run(promtool, "test", "rules", str(path))
