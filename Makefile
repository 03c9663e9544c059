# Everything a fresh machine needs is set up by these targets: they create .venv, install the
# project with its compiled scanner, then run.  `make test` is the one test command (CI too);
# `make run` starts the service (SQLite by default; see README), `make run ARGS="--port 9000"`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: test run hooks demo bench bench-service clean

# The real clients of the end-to-end matrix (tests/e2e/) are installed first, at their pins,
# into ~/.cache/fastsse-e2e (once per machine; see tests/e2e/install.py).
test: $(VENV)/.installed
	$(BIN)/python -m tests.e2e.install
	$(BIN)/python -m pytest

run: $(VENV)/.installed
	$(BIN)/fastsse-service serve $(ARGS)

# The pre-commit hooks (.pre-commit-config.yaml): lint, types and the fast lane before a
# commit, the whole suite before a push.
hooks: $(VENV)/.installed
	$(BIN)/pre-commit install

# The service on SQLite with a week of generated traffic, then a trickle (Ctrl-C stops).
demo: $(VENV)/.installed
	$(BIN)/python -m loadtests.demo $(ARGS)

bench: $(VENV)/.installed-bench
	$(BIN)/python bench/bench_scanner.py

# The service against its bare HTTP stack, side by side (needs wrk, and PostgreSQL on 5432).
bench-service: $(VENV)/.installed-bench
	$(BIN)/python bench/bench_service.py --rounds 3 $(ARGS)

$(VENV)/.created:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	touch $@

# Reinstalled whenever the packaging or the compiled scanner changes.
$(VENV)/.installed: $(VENV)/.created pyproject.toml setup.py fastsse/_scanner.pyx $(wildcard fastsse/*.pxd) fastsse/_simd.h
	$(BIN)/python -m pip install --quiet -e '.[test,service]'
	touch $@

$(VENV)/.installed-bench: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[test,service,bench]'
	touch $@

clean:
	rm -rf $(VENV) build *.egg-info fastsse/_scanner.c fastsse/*.so
