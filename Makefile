# metalserve.sglang: `make demo` and `make test` are the two commands a new machine needs.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export METALSERVE_CACHE ?= $(HOME)/.cache/metalserve-sglang
LINK := .build/collections/ansible_collections/metalserve/sglang
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export ANSIBLE_COLLECTIONS_PATH := $(CURDIR)/.build/collections
export PATH := $(CURDIR)/$(BIN):$(PATH)
PLAYBOOKS := $(wildcard playbooks/*.yml)
# every target that starts lab containers runs under the lab's lock: two never share the Docker daemon at once
LOCKED := bash tests/lab/docker-lock.sh

# molecule/default only answers molecule's lookup of a default scenario (its molecule.yml says why)
ALL_SCENARIOS := $(filter-out default,$(notdir $(patsubst %/,%,$(wildcard molecule/*/))))
# What `make test` (CI) runs: the roles site.yml converges on every site, the SSH transport (a vault sudo
# password in model_weights, the operations playbooks in operate), node acceptance and ROCm's driver. CI stops at
# 90 minutes on a 2-core machine; the longer scenarios run with `make molecule-all` (before a release, and for
# changes to their roles): nvidia_driver (five platforms, fresh node, reboot, upgrade: ~16 min), monitoring,
# preflight's refusal matrix, sglang_install_uv, sglang_install_docker and sglang_router_docker (the lab's site in
# `make integration` installs uv and docker nodes and writes a docker-mode router as well).
CI_SCENARIOS := rdma container_runtime rocm_driver model_weights sglang_server sglang_router operate node_acceptance
SCENARIOS ?= $(CI_SCENARIOS)
# Scenarios stay in molecule/ at the top level; naming the glob tells molecule so (no "should migrate to
# extensions/molecule" warning)
export MOLECULE_GLOB := molecule/*/molecule.yml

.PHONY: demo test venv link release ee sites sanity units-ansible-test docs-lint lint yamllint ansible-lint changelog-lint docs docs-check unit promtool validators integration slow syntax lab lab-infra lab-destroy bench molecule molecule-all clean

demo: venv link ## render inventories/example and print the plan
	$(BIN)/ansible-playbook playbooks/render.yml -i inventories/example
	@echo; cat rendered/PLAN.md

test: lint docs-check docs-lint unit units-ansible-test sanity syntax integration slow molecule ## everything CI runs
	@echo "make test: all green"

venv: $(VENV)/.stamp
$(VENV)/.stamp: requirements/test.txt
	$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "Python 3.10+ is needed")'
	$(PYTHON) -m venv $(VENV) || { echo "python3 -m venv failed: install python3-venv (apt-get install python3-venv)"; exit 1; }
	mkdir -p .cache
	{ $(BIN)/pip install -q --upgrade pip && $(BIN)/pip install -q -r requirements/test.txt; } >.cache/pip.log 2>&1 \
	  || { tail -30 .cache/pip.log; exit 1; }
	touch $@

link: $(LINK)
$(LINK):
	mkdir -p $(dir $(LINK))
	ln -sfn $(CURDIR) $(LINK)

release: venv ## VERSION=x.y.z: galaxy.yml and execution-environment.yml to that version, the fragments into changelog.yaml and CHANGELOG.rst
	@test -n "$(VERSION)" || { echo "usage: make release VERSION=x.y.z (galaxy.yml has $$(awk '/^version:/ {print $$2}' galaxy.yml))"; exit 1; }
	sed -i -E 's/^version: .*/version: $(VERSION)/' galaxy.yml
	sed -i -E 's/metalserve-sglang-[0-9][^ ]*[.]tar[.]gz/metalserve-sglang-$(VERSION).tar.gz/' execution-environment.yml
	$(BIN)/antsibull-changelog release --version $(VERSION)
	@echo "released $(VERSION): commit galaxy.yml, execution-environment.yml, changelogs/ and CHANGELOG.rst"

ee: venv link ## the execution environment of execution-environment.yml, built for real (local stand-in base image; tests/ee/build.py)
	$(LOCKED) $(BIN)/python tests/ee/build.py

lint: yamllint ansible-lint changelog-lint
changelog-lint: venv
	$(BIN)/antsibull-changelog lint
yamllint: venv
	$(BIN)/yamllint -s .
ansible-lint: venv link
	$(BIN)/ansible-lint

docs: venv link ## regenerate the generated README blocks
	$(BIN)/python tools/gen_docs.py
docs-check: venv link
	$(BIN)/python tools/gen_docs.py --check
docs-lint: venv link ## antsibull-docs: every plugin's and role's documentation (the docsite's source) is valid
	cd $(LINK) && $(BIN)/antsibull-docs lint-collection-docs --plugin-docs .

unit: venv link promtool validators
	$(BIN)/python -m pytest -q tests/unit

sites: venv link ## the generative site test at scale: 300 random coherent sites, 1000 one-mistake mutations
	METALSERVE_SITES=$${METALSERVE_SITES:-300} METALSERVE_MUTATIONS=$${METALSERVE_MUTATIONS:-1000} \
	  $(BIN)/python -m pytest -q tests/unit/test_generated_sites.py

# ansible-core releases (newest patch of each minor) and their venvs' Python: tests/sanity/releases.txt, oldest first.
# CI (`make sanity`, part of `make test`) runs the oldest and the newest to keep `make test` under 45 minutes (every
# test on the newest, pylint skipped on the oldest); `make sanity-<minor>` runs one release with every test, and
# `make sanity-all` all of them. Measured on the 2-core machine: docs/performance.md.
SANITY_RELEASES := $(shell awk '!/^\#/ && NF {print $$1}' tests/sanity/releases.txt)
SANITY_MINORS := $(foreach r,$(SANITY_RELEASES),$(word 1,$(subst ., ,$(r))).$(word 2,$(subst ., ,$(r))))
SANITY_EDGES := $(firstword $(SANITY_RELEASES)) $(lastword $(SANITY_RELEASES))
.PHONY: sanity-all $(addprefix sanity-,$(SANITY_MINORS))

sanity: link ## ansible-test sanity on the oldest and newest ansible-core releases we support (venvs cached in $(METALSERVE_CACHE))
	SANITY_CORES="$(SANITY_EDGES)" bash tests/sanity/run.sh sanity

sanity-all: link ## ansible-test sanity on every release of tests/sanity/releases.txt (pylint on the newest only)
	SANITY_CORES="$(SANITY_RELEASES)" bash tests/sanity/run.sh sanity

$(addprefix sanity-,$(SANITY_MINORS)): sanity-%: link ## ansible-test sanity, every test, on one release (sanity-2.16 ... sanity-2.21)
	SANITY_CORES="$(filter $*.%,$(SANITY_RELEASES))" SANITY_FULL=all bash tests/sanity/run.sh sanity

units-ansible-test: link ## the unit tests under `ansible-test units` (newest ansible-core), as collections are tested
	SANITY_CORES="$(lastword $(SANITY_RELEASES))" bash tests/sanity/run.sh units

promtool: ## promtool for the alert-rule tests (Debian's prometheus package, installed when missing)
	bash tests/unit/promtool.sh

validators: ## systemd-analyze and nft for tests/unit/test_real_validators.py (Debian's packages, installed when missing)
	bash tests/unit/validators.sh

integration: venv link lab-infra
	$(LOCKED) $(BIN)/python -m pytest -q tests/integration --ignore=tests/integration/test_upgrade_lab.py

upgrade-lab: venv link lab-infra ## upgrade.yml's lab scenarios: uv (canary, rollbacks, resume, a late wave, replicas, PD) and docker (each node its own daemon); ~60 min here, so outside `make test`
	$(LOCKED) $(BIN)/python -m pytest -q tests/integration/test_upgrade_lab.py

syntax: venv link
	for p in $(PLAYBOOKS); do $(BIN)/ansible-playbook --syntax-check -i inventories/example $$p; done

slow: venv link ## the parser of the SGLang release that runs it over every rendered command (0.5.23; 0.5.13.post1 and 0.5.18 for the ROCm images; venvs cached in $(METALSERVE_CACHE))
	SGLANG_PARSER_PYTHON=$$(bash tests/slow/sglang_parser_venv.sh) \
	SGLANG_PARSER_PYTHON_0_5_13_POST1=$$(SGLANG_VERSION=0.5.13.post1 bash tests/slow/sglang_parser_venv.sh) \
	SGLANG_PARSER_PYTHON_0_5_18=$$(SGLANG_VERSION=0.5.18 bash tests/slow/sglang_parser_venv.sh) \
	  $(BIN)/python -m pytest -q -s tests/slow

lab-infra: ## docker engine, the debootstrap systemd image and the stand-in apt repo the scenarios use (cached)
	$(LOCKED) bash tests/lab/setup.sh
	$(LOCKED) bash tests/lab/build-apt-repo.sh

lab: venv link lab-infra ## a lab site (2 GPU-less nodes as a PD pair + a router) and site.yml run against it
	$(LOCKED) $(BIN)/python tests/lab/lab.py up --name lab
	$(LOCKED) $(BIN)/python tests/lab/lab.py converge --name lab

lab-destroy: venv ## remove everything `make lab` made (keeps the shared caches)
	$(LOCKED) $(BIN)/python tests/lab/lab.py destroy --name lab

molecule: venv link lab-infra ## CI's scenarios (CI_SCENARIOS; SCENARIOS=... picks others), full test sequence
	@mkdir -p .cache/molecule-logs; for s in $(SCENARIOS); do echo "== molecule test -s $$s"; \
	  PY_COLORS=0 ANSIBLE_FORCE_COLOR=0 NO_COLOR=1 $(LOCKED) $(BIN)/molecule test -s $$s 2>&1 | tee .cache/molecule-logs/$$s.log \
	  || { bash tests/lab/failure_summary.sh .cache/molecule-logs/$$s.log; exit 1; }; done

molecule-all: ## every scenario under molecule/, one after the other
	$(MAKE) molecule SCENARIOS="$(ALL_SCENARIOS)"

bench: venv link lab-infra ## converge cost of site.yml on lab nodes, N = 1, 4, 8, 16, 32 (writes bench/)
	$(LOCKED) $(BIN)/python bench/bench.py --sizes $${BENCH_SIZES:-1,4,8,16,32} --profiles $${BENCH_PROFILES:-tuned,docker@8} \
	  --render $${BENCH_RENDER:-512,2048}

clean:
	rm -rf .build rendered .pytest_cache
