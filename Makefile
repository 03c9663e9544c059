# Everything a fresh machine needs is set up by these targets: they create .venv, install the
# project with its compiled scanner, then run.  `make test` is the one test command (CI too);
# `make run` starts the service (SQLite by default; see README), `make run ARGS="--port 9000"`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: test test-fast test-loaded run hooks docs demo bench bench-service constraints clean

# The real clients of the end-to-end matrix (tests/e2e/) are installed first, at their pins,
# into ~/.cache/fastsse-e2e (once per machine; see tests/e2e/install.py).
test: $(VENV)/.installed
	$(BIN)/python -m tests.e2e.install
	$(BIN)/python -m pytest

# The fast lane: the library's tests (without the long property runs), the layers and lint,
# and the service's tests that need no server or database.  Under a minute.
FAST_TESTS := tests/fastsse tests/test_layers.py tests/test_lint.py tests/loadtests/test_wire.py \
	tests/service/test_verdict_fields.py tests/service/test_schemas.py tests/service/test_tap_identify.py \
	tests/service/test_relied_upon.py
test-fast: $(VENV)/.installed
	$(BIN)/python -m pytest -m "not slow" $(FAST_TESTS)

# The whole suite RUNS times in a row with every core kept busy (stress-ng, else busy loops):
# what finds a test that waits for a state with a sleep (tests/loaded_runs.py).
RUNS ?= 5
test-loaded: $(VENV)/.installed
	$(BIN)/python -m tests.e2e.install
	$(BIN)/python -m tests.loaded_runs --runs $(RUNS)

run: $(VENV)/.installed
	$(BIN)/fastsse-service serve $(ARGS)

# The pre-commit hooks (.pre-commit-config.yaml): lint, types and the fast lane before a
# commit, the whole suite before a push.
hooks: $(VENV)/.installed
	$(BIN)/pre-commit install

# The docs site (mkdocs.yml, docs/), served with live reload on 127.0.0.1:8001.
docs: $(VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --dev-addr 127.0.0.1:8001

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

# Reinstalled whenever the packaging, the pins or the compiled scanner change.  Every package
# at the version constraints.txt pins (PIP_CONSTRAINT reaches the build's own environment too).
$(VENV)/.installed: $(VENV)/.created pyproject.toml setup.py constraints.txt fastsse/_scanner.pyx $(wildcard fastsse/*.pxd) $(wildcard fastsse/*.h)
	PIP_CONSTRAINT=constraints.txt $(BIN)/python -m pip install --quiet -e '.[test,service,docs]'
	touch $@

$(VENV)/.installed-bench: $(VENV)/.installed
	PIP_CONSTRAINT=constraints.txt $(BIN)/python -m pip install --quiet -e '.[test,service,docs,bench]'
	touch $@

# constraints.txt from what is installed now: after raising a bound in pyproject.toml,
# `pip install --upgrade <package>` in .venv, the suite green, then this.
constraints: $(VENV)/.installed-bench
	{ echo "# Every package the suite runs with, at the version it was last run with (make constraints)."; \
	  echo "# The Makefile installs with it; pyproject.toml says what the project itself requires."; \
	  $(BIN)/python -m pip freeze --exclude-editable --all | grep -v '^\(pip\|setuptools\|wheel\)=='; } > constraints.txt

clean:
	rm -rf $(VENV) build *.egg-info fastsse/_scanner.c fastsse/*.so
