# The two commands a newcomer needs are `make lab` and `make test`; everything else is a step of them.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
export PATH := $(CURDIR)/$(BIN):$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
LAB_INVENTORY := inventories/lab
# The Kafka release is pinned once, in the lab inventory; the artifact step reads it from there.
KAFKA_VERSION := $(shell sed -n 's/^kafka_version: *"\(.*\)"/\1/p' $(LAB_INVENTORY)/group_vars/all/kafka.yml)
KAFKA_SCALA := $(shell sed -n 's/^kafka_scala_version: *"\(.*\)"/\1/p' $(LAB_INVENTORY)/group_vars/all/kafka.yml)

.PHONY: help venv artifacts engine image lab lab-up lab-converge verify lab-status lab-destroy \
        lint unit molecule test clean

help:  ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | column -t -s $$'\t'

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

venv: $(VENV)/.installed  ## the pinned Python toolchain in .venv

artifacts: venv  ## Kafka archive assembled from Maven Central, verified against artifacts/locks
	$(BIN)/python -m kafkalab.artifacts assemble-kafka --version $(KAFKA_VERSION) --scala $(KAFKA_SCALA) --out .cache/artifacts

engine: venv  ## a running Docker engine (installs docker.io if needed)
	$(BIN)/python -m kafkalab.lab engine

image: engine  ## the Debian 12 systemd base image, built once with debootstrap
	$(BIN)/python -m kafkalab.lab image

lab-up: image  ## start the lab hosts (systemd containers) named in the lab inventory
	$(BIN)/python -m kafkalab.lab up --inventory $(LAB_INVENTORY)

lab-converge: venv artifacts  ## run playbooks/site.yml against the lab
	$(BIN)/ansible-playbook -i $(LAB_INVENTORY) playbooks/site.yml

verify: venv  ## the verification suite against the lab (or KAFKALAB_INVENTORY=...)
	KAFKALAB_INVENTORY=$${KAFKALAB_INVENTORY:-$(LAB_INVENTORY)} $(BIN)/pytest -p no:cacheprovider tests/cluster -v

lab: lab-up lab-converge verify  ## bring up the 3-node lab cluster, provision it and verify it
	@$(BIN)/ansible-playbook -i $(LAB_INVENTORY) playbooks/summary.yml > .cache/lab/summary.log \
	  || { cat .cache/lab/summary.log; exit 1; }
	@cat .cache/lab/summary.txt

lab-status: venv  ## state of the lab hosts
	$(BIN)/python -m kafkalab.lab status --inventory $(LAB_INVENTORY)

lab-destroy: venv  ## remove the lab hosts and network (keeps the image and artifact caches)
	$(BIN)/python -m kafkalab.lab down --inventory $(LAB_INVENTORY)

lint: venv  ## yamllint, ansible-lint (production profile), ruff, mypy
	$(BIN)/yamllint -s .
	$(BIN)/ansible-lint
	$(BIN)/ruff check src tests roles
	$(BIN)/ruff format --check src tests roles
	$(BIN)/mypy

unit: venv  ## unit tests: no containers
	$(BIN)/pytest -p no:cacheprovider tests/unit -q

molecule: venv artifacts image  ## molecule default scenario: 3 nodes, converge, idempotence, verify
	$(BIN)/molecule test -s default

test: lint unit molecule  ## everything CI runs

clean: lab-destroy  ## the lab and the caches (artifacts, image tarball, facts)
	rm -rf .cache
