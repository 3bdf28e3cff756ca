# The README's two commands: `make run` (start Flywheel) and `make test` (the whole suite).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
REQ_HASH := $(shell cat requirements.txt | sha256sum | cut -c1-16)
DEV_HASH := $(shell cat requirements.txt requirements-dev.txt | sha256sum | cut -c1-16)
RUN_STAMP := $(VENV)/.installed-run-$(REQ_HASH)
DEV_STAMP := $(VENV)/.installed-dev-$(DEV_HASH)
# The test suite keeps its embedded servers apart from those of `make run`.
TEST_VAR_DIR ?= $(CURDIR)/var/test
PYTEST_ARGS ?=

.PHONY: run test install install-dev lint clean-var

run: $(RUN_STAMP)
	$(PY) manage.py up

test: $(DEV_STAMP)
	FLYWHEEL_VAR_DIR=$(TEST_VAR_DIR) $(PY) -m pytest $(PYTEST_ARGS)

lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check .

install: $(RUN_STAMP)
install-dev: $(DEV_STAMP)

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# Stamps are keyed on the requirements' hash: installing is a no-op until a requirements file changes.
$(RUN_STAMP): | $(PY)
	$(PY) -m pip install -q -r requirements.txt
	rm -f $(VENV)/.installed-run-*
	touch $@

$(DEV_STAMP): | $(PY)
	$(PY) -m pip install -q -r requirements.txt -r requirements-dev.txt
	rm -f $(VENV)/.installed-dev-* $(VENV)/.installed-run-*
	touch $@ $(RUN_STAMP)

clean-var:
	rm -rf var/test
