# The two commands a newcomer needs are `make lab` and `make test`; everything else is a step of them.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
export PATH := $(CURDIR)/$(BIN):$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
LAB_INVENTORY := inventories/lab
# The lab's second site (MirrorMaker 2's target), its own inventory; none for another LAB_INVENTORY unless named.
LAB_DR_INVENTORY := $(if $(filter inventories/lab,$(LAB_INVENTORY)),inventories/lab-dr)
# The Debian release of the lab's and molecule's hosts (images/releases.yml, whose first entry is the
# default): bookworm (Debian 12) or trixie (Debian 13), e.g. `make lab LAB_RELEASE=trixie`. Each release
# has its own image.
LAB_RELEASE ?= $(or $(KAFKALAB_RELEASE),$(shell sed -n 's/^\([a-z][a-z]*\):.*/\1/p' images/releases.yml | head -n 1))
export KAFKALAB_RELEASE := $(LAB_RELEASE)
# The Kafka release is pinned once, in the lab inventory; the artifact step reads it from there.
KAFKA_VERSION := $(shell sed -n 's/^kafka_version: *"\(.*\)"/\1/p' $(LAB_INVENTORY)/group_vars/all/kafka.yml)
KAFKA_SCALA := $(shell sed -n 's/^kafka_scala_version: *"\(.*\)"/\1/p' $(LAB_INVENTORY)/group_vars/all/kafka.yml)
# The 4.x release the default scenario builds first and upgrades from (playbooks/upgrade.yml), pinned once in
# that scenario's converge playbook.
KAFKA_PREVIOUS_VERSION := $(shell sed -n 's/^ *kafka_version: *"\(.*\)"/\1/p' molecule/default/converge.yml)
# Spark (and so its Kafka connector jars and the pyspark wheel) is pinned once, in the lab inventory.
SPARK_VERSION := $(shell sed -n 's/^spark_version: *"\(.*\)"/\1/p' $(LAB_INVENTORY)/group_vars/all/spark.yml)
# The Prometheus JMX exporter agent, pinned once in the prometheus role's defaults.
JMX_EXPORTER_VERSION := $(shell sed -n 's/^prometheus_jmx_exporter_version: *"\(.*\)"/\1/p' roles/prometheus/defaults/main.yml)
# The Schema Registry (Apicurio Registry) release, pinned once in the schema_registry role's defaults.
SCHEMA_REGISTRY_VERSION := $(shell sed -n 's/^schema_registry_version: *"\(.*\)"/\1/p' roles/schema_registry/defaults/main.yml)
# The Kafka release Connect workers run (its extra jars are locked for it), pinned once in the kafka_connect role's defaults.
KAFKA_CONNECT_VERSION := $(shell sed -n 's/^kafka_connect_version: *"\(.*\)"/\1/p' roles/kafka_connect/defaults/main.yml)
# Connector plugins the repository offers the workers (kafka_connect_plugins names them): jar locks in artifacts/locks.
CONNECT_PLUGIN_LOCKS := debezium-postgres-3.6.1
# The collection's version (galaxy.yml) names its tarball.
COLLECTION_VERSION := $(shell sed -n 's/^version: *\(.*\)/\1/p' galaxy.yml)
# The ZooKeeper-mode release (3.9.x) is pinned once, in the zookeeper scenario's group_vars.
KAFKA_ZK_VERSION := $(shell sed -n 's/^kafka_version: *"\(.*\)"/\1/p' molecule/zookeeper/inventory/group_vars/all/zookeeper.yml)
# make bench: BENCH_COLD=1 destroys and recreates the lab's hosts to time a cold converge; BENCH_COLD=0 times only
# the no-op re-run (the only choice for an inventory of real hosts, LAB_INVENTORY=...).
BENCH_COLD ?= 1
BENCH_NEEDS := $(if $(filter 0,$(BENCH_COLD)),$(if $(filter inventories/lab,$(LAB_INVENTORY)),lab-up),image)

.PHONY: help venv artifacts engine image images lab lab-up lab-converge verify verify-spark journeys failover restart rotate-certificates upgrade migrate rollback journey journey-default journey-spark topics report bench bench-mirror bench-transactions lab-status lab-destroy \
        lint unit unit-playbooks unit-rest sanity collection molecule test clean

help:  ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | column -t -s $$'\t'

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	# The repository is the collection kafkalab.kafka (collections/ansible_collections/kafkalab/kafka links to
	# it): its plugins' Python is shared by the controller tools and the tests, so put it on the venv's path.
	echo "$(CURDIR)/collections" > $$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/kafkalab-collections.pth
	touch $@

venv: $(VENV)/.installed  ## the pinned Python toolchain in .venv

artifacts: venv  ## everything hosts get from the controller, verified against artifacts/locks: Kafka 4.x (and the previous 4.x) and 3.9.x, Spark jars and wheels, the JMX exporter agent, the lag exporter's wheel, Apicurio Registry, the Connect jars and connector plugins
	@# Every Kafka release a host may run: the default, the one the default scenario upgrades from, ZooKeeper mode's and
	@# the Connect workers' (each once). The releases' own topic-config lists (and broker update modes) need java on the
	@# controller; without it (exit 4) the broker checks the names.
	for version in $(sort $(KAFKA_VERSION) $(KAFKA_PREVIOUS_VERSION) $(KAFKA_ZK_VERSION) $(KAFKA_CONNECT_VERSION)); do \
	  $(BIN)/python -m kafkalab.artifacts assemble-kafka --version $$version --scala $(KAFKA_SCALA) --out .cache/artifacts || exit 1; \
	  $(BIN)/python -m kafkalab.artifacts topic-configs --archive .cache/artifacts/kafka_$(KAFKA_SCALA)-$$version.tgz || [ $$? -eq 4 ] || exit 1; \
	done
	$(BIN)/python -m kafkalab.artifacts fetch-jars --lock artifacts/locks/spark-kafka-$(SPARK_VERSION).json --out .cache/artifacts
	$(BIN)/python -m kafkalab.artifacts build-wheels --requirements artifacts/locks/pyspark-$(SPARK_VERSION).txt --project spark --out .cache/artifacts/spark-wheels
	@# Metrics: the JMX exporter agent for every Kafka and ZooKeeper JVM, kafka-python for the consumer-lag exporter.
	$(BIN)/python -m kafkalab.artifacts fetch-jars --lock artifacts/locks/jmx-exporter-$(JMX_EXPORTER_VERSION).json --out .cache/artifacts
	$(BIN)/python -m kafkalab.artifacts build-wheels --requirements artifacts/locks/lag-exporter.txt --out .cache/artifacts/lag-exporter-wheels
	@# The Schema Registry: Apicurio Registry's runnable distribution (a tar.gz from Maven Central).
	$(BIN)/python -m kafkalab.artifacts fetch-jars --lock artifacts/locks/apicurio-registry-$(SCHEMA_REGISTRY_VERSION).json --out .cache/artifacts
	@# Kafka Connect: MirrorMaker 2, the file connectors and the REST basic-auth extension, which Kafka's own jars lack.
	$(BIN)/python -m kafkalab.artifacts fetch-jars --lock artifacts/locks/kafka-connect-$(KAFKA_CONNECT_VERSION).json --out .cache/artifacts
	@# Connector plugins (Debezium's PostgreSQL connector): each plugin's archive, unpacked on the workers.
	for lock in $(CONNECT_PLUGIN_LOCKS); do $(BIN)/python -m kafkalab.artifacts fetch-jars --lock artifacts/locks/$$lock.json --out .cache/artifacts || exit 1; done

collection: venv  ## the collection kafkalab.kafka: its tarball (ansible-galaxy collection build) in .cache/collection, installed into the empty collections path .cache/collection/installed
	$(BIN)/python -m kafkalab.collection build --out .cache/collection
	$(BIN)/python -m kafkalab.collection install --tarball .cache/collection/kafkalab-kafka-$(COLLECTION_VERSION).tar.gz --path .cache/collection/installed

sanity: collection  ## ansible-test sanity on the installed tarball (tests/sanity/ignore-2.19.txt says why each ignored check is)
	$(BIN)/python -m kafkalab.collection sanity --tarball .cache/collection/kafkalab-kafka-$(COLLECTION_VERSION).tar.gz

engine: venv  ## a running Docker engine (installs docker.io if needed)
	$(BIN)/python -m kafkalab.lab engine

image: engine  ## the systemd base image of LAB_RELEASE (Debian 12 by default), built once with debootstrap
	$(BIN)/python -m kafkalab.lab image

images: engine  ## the base image of every release the molecule scenarios run (and LAB_RELEASE's)
	for release in $(MOLECULE_RELEASES); do KAFKALAB_RELEASE=$$release $(BIN)/python -m kafkalab.lab image || exit; done

lab-up: image  ## start the lab hosts (systemd containers) named in the lab inventory
	$(BIN)/python -m kafkalab.lab up --inventory $(LAB_INVENTORY)
	$(if $(LAB_DR_INVENTORY),$(BIN)/python -m kafkalab.lab up --inventory $(LAB_DR_INVENTORY))

lab-converge: venv artifacts  ## run playbooks/site.yml against the lab, then against its DR site
	$(BIN)/ansible-playbook -i $(LAB_INVENTORY) playbooks/site.yml
	$(if $(LAB_DR_INVENTORY),$(BIN)/ansible-playbook -i $(LAB_DR_INVENTORY) playbooks/site.yml)

verify: venv  ## the verification suite against the lab (or KAFKALAB_INVENTORY=...), failover cases aside
	$(BIN)/python -m kafkalab.lab tools
	KAFKALAB_INVENTORY=$${KAFKALAB_INVENTORY:-$(LAB_INVENTORY)} $(if $(KAFKALAB_INVENTORY),,KAFKALAB_DR_INVENTORY=$(LAB_DR_INVENTORY)) \
	  $(BIN)/pytest -p no:cacheprovider tests/cluster -v -m "not failover"

journeys: venv  ## the day-2 journeys (tests/journeys) against the lab (or KAFKALAB_INVENTORY=...): the lifecycle under load, refused runs, a firewall edited by hand; molecule default runs them in make test
	KAFKALAB_INVENTORY=$${KAFKALAB_INVENTORY:-$(LAB_INVENTORY)} $(BIN)/pytest -p no:cacheprovider tests/journeys -v

failover: venv  ## failover cases against the lab: kill/stop/pause/isolate brokers, count lost and duplicated
	KAFKALAB_INVENTORY=$${KAFKALAB_INVENTORY:-$(LAB_INVENTORY)} $(BIN)/pytest -p no:cacheprovider tests/cluster -v -s -m failover

lab: lab-up lab-converge verify  ## bring up the lab (3 Kafka nodes, 2 Spark hosts with PostgreSQL and Connect, Prometheus, a DR site), provision, verify, show the Spark job consuming
	@$(BIN)/ansible-playbook -i $(LAB_INVENTORY) playbooks/summary.yml > .cache/lab/summary.log \
	  || { cat .cache/lab/summary.log; exit 1; }
	@cat .cache/lab/summary.txt
	@$(BIN)/ansible-playbook -i $(LAB_INVENTORY) playbooks/spark_demo.yml > .cache/lab/spark-demo.log \
	  || { cat .cache/lab/spark-demo.log; exit 1; }
	@cat .cache/lab/spark-demo.txt

verify-spark: venv  ## the Spark pipeline checks against the lab (kills the job and a worker, upgrades the job and puts it back; about 12 min)
	KAFKALAB_INVENTORY=$${KAFKALAB_INVENTORY:-$(LAB_INVENTORY)} $(BIN)/pytest -p no:cacheprovider tests/spark_cluster -v

restart: venv  ## rolling restart of every ZooKeeper server and Kafka node, one at a time through the gates (LIMIT=host,... for a subset)
	$(BIN)/ansible-playbook -i $(LAB_INVENTORY) playbooks/rolling_restart.yml $(if $(LIMIT),--limit $(LIMIT))

rotate-certificates: venv  ## sign again the nodes' certificates due within kafka_tls_rotate_within_days (ALL=1: every one), then restart them through the gates (LIMIT=host,... for a subset); CA=1 replaces the project CA (three rolls)
	$(BIN)/ansible-playbook -i $(LAB_INVENTORY) playbooks/rotate_certificates.yml $(if $(ALL),-e kafka_tls_rotate_all=true) $(if $(CA),-e kafka_tls_rotate_ca=true) $(if $(LIMIT),--limit $(LIMIT))

upgrade: venv artifacts  ## move the cluster to the inventory's kafka_version (controllers first, then feature levels); CHECK=1 shows the plan only
	$(BIN)/ansible-playbook -i $(LAB_INVENTORY) playbooks/upgrade.yml $(if $(CHECK),--check --diff)

migrate: venv artifacts  ## ZooKeeper -> KRaft (Kafka 3.9): controllers, brokers in migration mode, brokers in KRaft; FINALIZE=1 finalizes (cannot be undone)
	$(BIN)/ansible-playbook -i $(LAB_INVENTORY) playbooks/migrate_to_kraft.yml $(if $(FINALIZE),-e kafka_migration_finalize=true)

rollback: venv  ## back to ZooKeeper mode from a migration that is not finalized
	$(BIN)/ansible-playbook -i $(LAB_INVENTORY) playbooks/rollback_to_zookeeper.yml

topics: venv  ## apply the declared topics (kafka_topics) to the lab; CHECK=1 shows the plan only
	$(BIN)/ansible-playbook -i $(LAB_INVENTORY) playbooks/topics.yml $(if $(CHECK),--check --diff)

report: venv  ## cluster report: brokers, controller, partitions (leader/ISR/offline), group lag
	@$(BIN)/ansible-playbook -i $(LAB_INVENTORY) playbooks/report.yml > .cache/report.log || { cat .cache/report.log; exit 1; }
	@cat .cache/report/report.txt
	@echo "(JSON: .cache/report/report.json)"

bench: venv artifacts $(BENCH_NEEDS)  ## measured numbers, ~10 min: converge (cold, no-op), Kafka, disk/net limits, Spark job; JSON + plots in .cache/bench
	$(BIN)/python -m kafkalab.bench --inventory $(LAB_INVENTORY) $(if $(filter 0,$(BENCH_COLD)),--no-cold,--cold)

bench-mirror: venv  ## MirrorMaker 2's copy rate to the lab's DR site (~2 min): a backlog written while the DR workers are stopped, copied after their start; JSON in .cache/bench/mirror.json
	$(BIN)/python -m kafkalab.bench.mirror --inventory $(LAB_INVENTORY) --dr-inventory $(or $(LAB_DR_INVENTORY),$(error no DR site: set LAB_DR_INVENTORY))

bench-transactions: venv  ## a transactional read-process-write pipeline's rate on the lab (Kafka's Java clients; ~1 min): transactions/s and records/s; JSON in .cache/bench/transactions.json
	$(BIN)/python -m kafkalab.bench.transactions --inventory $(LAB_INVENTORY) --kafka-version $(KAFKA_VERSION)

lab-status: venv  ## state of the lab hosts
	$(BIN)/python -m kafkalab.lab status --inventory $(LAB_INVENTORY)
	$(if $(LAB_DR_INVENTORY),$(BIN)/python -m kafkalab.lab status --inventory $(LAB_DR_INVENTORY))

lab-destroy: venv  ## remove the lab hosts (its DR site's included) and network (keeps the image and artifact caches)
	$(BIN)/python -m kafkalab.lab down --inventory $(LAB_INVENTORY)

lint: venv  ## yamllint, ansible-lint (production profile), ruff, mypy
	$(BIN)/yamllint -s .
	$(BIN)/ansible-lint
	$(BIN)/ruff check src tests roles spark plugins
	$(BIN)/ruff format --check src tests roles spark plugins
	$(BIN)/mypy

# The unit tests in two halves of about the same CPU time: the files whose tests run ansible-playbook against
# local inventories, and the rest. make test runs them side by side (with lint): one pytest used one of the two
# cores for the three minutes after lint ended (docs/measurements.md, 2026-11-29).
UNIT_PLAYBOOK_FILES := $(addprefix tests/unit/,test_preflight_playbook.py test_render.py test_render_zookeeper.py test_ansible_speedups.py)

unit: unit-playbooks unit-rest  ## unit tests: no containers (roles, tools, the Spark job on a local SparkSession, the pinned releases' topic configs)

unit-playbooks: venv artifacts  ## the unit tests that run playbooks against local inventories (half of make unit)
	mkdir -p .cache/pytest && $(BIN)/pytest -p no:cacheprovider --basetemp=.cache/pytest/unit-playbooks $(UNIT_PLAYBOOK_FILES) -q

unit-rest: venv artifacts  ## the other unit tests, the Spark job's included (half of make unit)
	mkdir -p .cache/pytest && $(BIN)/pytest -p no:cacheprovider --basetemp=.cache/pytest/unit-rest tests/unit spark/tests $(addprefix --ignore=,$(UNIT_PLAYBOOK_FILES)) -q

MOLECULE_SCENARIOS := default zookeeper spark
# A scenario whose hosts run another Debian release than LAB_RELEASE says so in its molecule.yml
# (provisioner.env.KAFKALAB_RELEASE); each release's image is built once, by `images`.
scenario_release = $(or $(shell sed -n 's/^ *KAFKALAB_RELEASE: *\([a-z]*\).*/\1/p' molecule/$(1)/molecule.yml),$(LAB_RELEASE))
MOLECULE_RELEASES := $(sort $(LAB_RELEASE) $(foreach scenario,$(MOLECULE_SCENARIOS),$(call scenario_release,$(scenario))))

molecule: $(addprefix molecule-,$(MOLECULE_SCENARIOS))  ## molecule scenarios: default (KRaft), zookeeper (3.9 + ensemble), spark (job on a Spark node)

# make test prepares the artifacts and the images once, as steps of their own, then sets MOLECULE_PREPARED.
molecule-%: venv $(if $(MOLECULE_PREPARED),,artifacts images collection)  ## one molecule scenario, e.g. make molecule-zookeeper
	mkdir -p .cache/lifecycle && rm -f .cache/lifecycle/molecule-$*.ansible.log
	$(BIN)/molecule test -s $*

journey: venv $(if $(MOLECULE_PREPARED),,artifacts images collection)  ## molecule zookeeper with the whole journey under load (KAFKALAB_JOURNEY=full, about 35 min): a ZooKeeper roll, a killed migration, rollback, migration again, finalization with no-op repeats, upgrade to 4.3.1
	mkdir -p .cache/lifecycle && rm -f .cache/lifecycle/molecule-zookeeper.ansible.log
	export KAFKALAB_JOURNEY=full; m='$(BIN)/molecule'; \
	$$m destroy -s zookeeper && $$m syntax -s zookeeper && $$m create -s zookeeper && $$m converge -s zookeeper \
	  && $$m idempotence -s zookeeper && $$m verify -s zookeeper; \
	rc=$$?; $$m destroy -s zookeeper; exit $$rc

# The scenario's own target (molecule-%) with the journey's plays: the variable reaches its recipe.
journey-default journey-spark: export KAFKALAB_JOURNEY = full
journey-default: molecule-default  ## molecule default with upgrade.yml --check --diff, the controller-quorum changes, a run-time config and a certificate rotation (KAFKALAB_JOURNEY=full, ~40 min): the plan changes nothing; refused inventory edits, add_controller.yml 3 -> 4 voters and remove_controller.yml 4 -> 3, no restart for the config, the rotation refused at min ISR then finished, under load
journey-spark: molecule-spark  ## molecule spark with the brokers and the job under change (KAFKALAB_JOURNEY=full, ~50 min): the instances restarted one at a time, the failover cases on the one Kafka machine, a broker added, drained and removed and a replaced disk refilled under load, a lost worker host, a job upgrade, refused and new checkpoints

test: venv  ## everything CI runs (lint, unit, ansible-test sanity, each molecule scenario), ending with a table of each step's wall time
	MOLECULE_PREPARED=1 $(BIN)/python -m kafkalab.steps artifacts unit-playbooks+unit-rest+lint+images+sanity $(addprefix molecule-,$(MOLECULE_SCENARIOS))

clean: lab-destroy  ## the lab and the caches (artifacts, image tarball, facts)
	rm -rf .cache
