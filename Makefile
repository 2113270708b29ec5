# The README's two commands: `make demo` (main job on a bundled sample) and `make test` (the whole suite).
# Both work on a fresh machine with only python3 (>= 3.11) and Java 17: they create .venv and install into it.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
PIP     = $(PY) -m pip --disable-pip-version-check -q
SAMPLE  = demo/cmdlog
AS_OF   = 2026-11-22T00:00:00Z

.PHONY: demo test test-quick install install-test bench bench-kestrel bench-pack bench-repair bench-fleet bench-orth bench-serve bench-fastjournal fixtures man clean

$(VENV)/.installed: pyproject.toml setup.py wqtool/engine/workq/_kernel.c
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -e .
	@touch $@

$(VENV)/.installed-test: $(VENV)/.installed pyproject.toml
	$(PIP) install -e '.[test,spark]'
	@touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

demo: $(VENV)/.installed
	rm -rf $(SAMPLE)
	$(PY) scripts/make_sample.py $(SAMPLE)
	$(VENV)/bin/wqtool dump --limit 12 $(SAMPLE)
	$(VENV)/bin/wqtool dump --stats $(SAMPLE)
	$(VENV)/bin/wqtool verify --as-of $(AS_OF) $(SAMPLE)
	$(VENV)/bin/wqtool replay --as-of $(AS_OF) $(SAMPLE) | tail -n 16

test: $(VENV)/.installed-test
	$(PY) -m pytest

# The inner loop (~1 min): no Spark, no exhaustive sweeps, a tenth of the property-test examples.
test-quick: $(VENV)/.installed-test
	WQTOOL_TESTS=quick $(PY) -m pytest -q -m "not spark and not slow"

bench: $(VENV)/.installed
	$(PY) bench/bench_workq.py

bench-kestrel: $(VENV)/.installed
	$(PY) bench/bench_kestrel.py

bench-pack: $(VENV)/.installed
	$(PY) bench/bench_pack_workq.py

bench-repair: $(VENV)/.installed
	$(PY) bench/bench_repair.py

bench-fleet: $(VENV)/.installed-test
	$(PY) bench/bench_fleet.py

bench-orth: $(VENV)/.installed-test
	$(PY) bench/bench_orth.py

bench-serve: $(VENV)/.installed
	$(PY) bench/bench_serve.py
bench-fastjournal: $(VENV)/.installed
	$(PY) bench/bench_fastjournal.py

fixtures: $(VENV)/.installed
	$(PY) scripts/make_fixtures.py
	$(PY) scripts/make_orth_joblog_fixtures.py
	$(PY) scripts/make_orth_fixtures.py
	$(PY) scripts/make_snap_fixtures.py

man: $(VENV)/.installed
	$(PY) scripts/gen_man.py

clean:
	rm -rf $(VENV) demo .pytest_cache .hypothesis
