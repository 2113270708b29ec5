# The README's two commands: `make demo` (main job on a bundled sample) and `make test` (the whole suite).
# Both work on a fresh machine with only python3 (>= 3.11) and Java 17: they create .venv and install into it.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
PIP     = $(PY) -m pip --disable-pip-version-check -q
# a path entry, not setuptools' import-hook finder: the finder costs every `.venv/bin/wqtool` start 20-60 ms of
# imports (pathlib, re, ...) before wqtool's first line runs; `wqtool serve` must listen within 100 ms
EDITABLE ?= --config-settings editable_mode=compat
SAMPLE  = demo/cmdlog
AS_OF   = 2026-11-22T00:00:00Z

.PHONY: demo test test-quick test-clock install install-test bench bench-quick bench-before bench-damage bench-damage-before bench-startup bench-kestrel bench-pack bench-repair bench-report bench-fleet bench-orth bench-serve bench-fastjournal fixtures man docs clean

$(VENV)/.installed: pyproject.toml setup.py wqtool/engine/workq/_kernel.c $(wildcard wqtool/engine/workq/kernel/*.c wqtool/engine/workq/kernel/*.h) \
                     wqtool/engine/kestrel/_kernel.c wqtool/engine/kestrel/consts.h wqtool/engine/_cgrow.h wqtool/engine/_series.h \
                     wqtool/server/workq/_proto.c wqtool/server/launch.c bin/wqtool
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -e . $(EDITABLE)
	@touch $@

$(VENV)/.installed-test: $(VENV)/.installed pyproject.toml
	$(PIP) install -e '.[test,spark,serve]' $(EDITABLE)
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

# Two pytest workers (pytest-xdist); the Spark tests run on one of them, in one session (--dist loadgroup).
test: $(VENV)/.installed-test
	$(PY) -m pytest -n 2 --dist loadgroup

# The inner loop (2 min 19 s of CPU, so about 70 s on 2 free cores): no Spark, no slow end-to-end runs or whole-package
# audits, every fifth case of a `sweep`, a tenth of the property-test examples, two pytest workers (pytest-xdist).
test-quick: $(VENV)/.installed-test
	WQTOOL_TESTS=quick $(PY) -m pytest -q -m "not spark and not slow" -n 2

# The suite on a moved wall clock (tests/clock/sitecustomize.py): WHEN=<date -d spec>, default 03:30 UTC next year.
WHEN ?= $(shell date -u +%Y -d '+1 year')-03-01T03:30:00Z
test-clock: $(VENV)/.installed-test
	WQTOOL_FAKE_NOW=$$(date -u -d '$(WHEN)' +%s) PYTHONPATH=tests/clock $(PY) -m pytest -q -m "not spark" -n 2

# issue 14's log shape (148.6 MB, 1.24 M records), every command as a ratio to a floor measured in the same run;
# then the damaged path of issue 18 (a copy with 4 bytes flipped): verify, repair and pack against their goals
bench: $(VENV)/.installed
	$(PY) bench/bench_workq.py
	$(PY) bench/bench_damage.py
	$(PY) bench/bench_startup.py

# start-up (issue 20 item 9): --version and a small verify against `python -c pass`, median of 10, same run
bench-startup: $(VENV)/.installed
	$(PY) bench/bench_startup.py

bench-damage: $(VENV)/.installed
	$(PY) bench/bench_damage.py

# the damaged-path bench on the code before issue 18 (main 65c3d22), built into bench/out/before-18
BEFORE18 = 65c3d22
bench-damage-before: $(VENV)/.installed
	rm -rf bench/out/before-18 && mkdir -p bench/out/before-18
	git archive $(BEFORE18) | tar -x -C bench/out/before-18
	cd bench/out/before-18 && $(CURDIR)/$(PY) setup.py -q build_ext --inplace
	$(PY) bench/bench_damage.py --root bench/out/before-18

bench-quick: $(VENV)/.installed
	$(PY) bench/bench_workq.py --quick --repeat 1

# the same benchmarks on the code before issue 14 (commit $(BEFORE)), built into bench/out/before
BEFORE = 1c22d37
bench-before: $(VENV)/.installed
	rm -rf bench/out/before && mkdir -p bench/out/before
	git archive $(BEFORE) | tar -x -C bench/out/before
	cd bench/out/before && $(CURDIR)/$(PY) setup.py -q build_ext --inplace
	$(PY) bench/bench_workq.py --root bench/out/before
	cd bench/out/before && $(CURDIR)/$(PY) bench/bench_kestrel.py

bench-kestrel: $(VENV)/.installed
	$(PY) bench/bench_kestrel.py

bench-pack: $(VENV)/.installed
	$(PY) bench/bench_pack_workq.py

bench-repair: $(VENV)/.installed
	$(PY) bench/bench_repair.py

bench-report: $(VENV)/.installed
	$(PY) bench/bench_report.py --reference

bench-fleet: $(VENV)/.installed-test
	$(PY) bench/bench_fleet.py --damaged 8

bench-orth: $(VENV)/.installed-test
	$(PY) bench/bench_orth.py

bench-serve: $(VENV)/.installed
	$(PY) bench/bench_serve_peer.py --drop-in $(BENCH_SERVE_ARGS)
bench-fastjournal: $(VENV)/.installed
	$(PY) bench/bench_fastjournal.py

fixtures: $(VENV)/.installed
	$(PY) scripts/make_fixtures.py
	$(PY) scripts/make_orth_joblog_fixtures.py
	$(PY) scripts/make_orth_fixtures.py
	$(PY) scripts/make_snap_fixtures.py

man: $(VENV)/.installed
	$(PY) scripts/gen_man.py

# docs/json-output.md, the JSON-output reference, from the JSON Schemas `wqtool schema` prints (tests/test_json_reference.py checks it)
docs: $(VENV)/.installed man
	$(PY) scripts/gen_json_reference.py

clean:
	rm -rf $(VENV) demo .pytest_cache .hypothesis
