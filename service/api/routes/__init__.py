"""One module per resource: streams (ingest), verdicts and rates (reads), health (probes, metrics)."""
