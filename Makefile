# The two commands (see README): `make run` and `make test`. A bare `make`
# prints the targets below (each one's `##` line) and builds nothing.
.PHONY: help run test check proptest watch invoke invoke-stop sign-event deploy package sam smoke chaos bench
.DEFAULT_GOAL := help

help: ## these targets, one line each
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  make %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

run: ## the pipeline on this machine: ingest, worker, a local table and a CRM stub
	@scripts/run.sh

test: ## every test, as CI runs it (installs what it needs; about 20 minutes on 2 cores)
	@scripts/test.sh

# The fast check before every commit: format, lints, every test that needs
# no server (make test runs it first).
check: ## format, lints and the tests that need no server
	@scripts/check.sh

# The property tests at length (make test runs them short): PROPTEST_CASES
# cases per property, a million unless given, optimised.
proptest: ## the property tests at length (PROPTEST_CASES)
	@PROPTEST_CASES=$${PROPTEST_CASES:-1000000} cargo test --locked --profile proptest \
		-p shared -p ingest --test properties

# Local iteration with cargo lambda watch (see README).
watch: ## cargo lambda watch, for iterating on one function
	@scripts/watch.sh

# One function, one event, under the real `sam local invoke` in Docker (see
# README): make invoke FUNCTION=IngestFunction EVENT=events/ingest-valid.json
invoke: ## one function, one event, under sam local invoke (FUNCTION=, EVENT=, SENDER=)
	@FUNCTION="$(FUNCTION)" EVENT="$(EVENT)" SENDER="$(SENDER)" scripts/invoke.sh

invoke-stop: ## stop what make invoke started
	@scripts/invoke.sh stop

# A sender that signs its sending time (formspree, webflow) refuses its
# shipped sample as a replay: this writes it signed now, with the local
# signing secret, into .tools/events/, and says how to send it.
sign-event: ## a sample signed now, for a sender that signs its time (SENDER=formspree)
	@test -n "$(SENDER)" || { echo "make sign-event SENDER=<sender> (formspree, webflow...)" >&2; exit 2; }
	@mkdir -p .tools/events
	@cargo run --quiet --locked -p devtools --bin sign-event -- events/ingest-$(SENDER).json >.tools/events/ingest-$(SENDER).json
	@echo "wrote .tools/events/ingest-$(SENDER).json, signed now (valid for minutes); send it with:"
	@echo "  make invoke FUNCTION=IngestFunction SENDER=$(SENDER) EVENT=.tools/events/ingest-$(SENDER).json"

# A first deployment that asks only what it must (see README), then the
# smoke test. Non-interactive: make deploy ARGS="--stack-name ... --help".
deploy: ## a first deployment, then the smoke test (RELEASE=<folder> deploys without Rust)
	@ARGS="$(ARGS)" RELEASE="$(RELEASE)" scripts/deploy.sh

# What a deploy without Rust needs (function zips, a template per
# architecture, checksums), as the release workflow builds it:
# make package [VERSION=0.2.0] [ARCHITECTURES="arm64 x86_64"]
package: ## function zips, templates and checksums for a deploy without Rust
	@VERSION="$(VERSION)" ARCHITECTURES="$(ARCHITECTURES)" PACKAGE_DIR="$(PACKAGE_DIR)" scripts/package.sh

# The pinned SAM CLI that make deploy installed, for later deploys, logs
# and deletes: make sam ARGS="deploy --config-env <stack name>"
sam: ## the pinned SAM CLI (ARGS=)
	@ARGS="$(ARGS)" scripts/sam.sh

# One marked test submission through a deployed stack, followed to
# COMPLETED: make smoke STACK=<name> [REGION=<region>]
smoke: ## one marked submission through a deployed stack (STACK=)
	@test -n "$(STACK)" || { echo "make smoke STACK=<stack name> [REGION=<region>]" >&2; exit 2; }
	@cargo run --release --locked --quiet -p receipts -- --stack "$(STACK)" $(if $(REGION),--region "$(REGION)") smoke

# A load test of the local pipeline: accepted/s, answer and delivery times,
# CRM calls and DynamoDB write units per lead.
# make bench [N=200] [RATE=50] [CRM_DELAY_MS=50]   (RATE=0: as fast as accepted)
bench: ## a load test of the local pipeline (N=, RATE=)
	@N="$(N)" RATE="$(RATE)" CRM_DELAY_MS="$(CRM_DELAY_MS)" scripts/bench.sh

# The promise, demonstrated: submissions while both functions are killed at
# random and the CRM fails at random; every one must end as one lead.
# make chaos [SUBMISSIONS=1000] [SEED=<number>]
chaos: ## submissions while the functions are killed at random (SUBMISSIONS=, SEED=)
	@SUBMISSIONS="$(SUBMISSIONS)" SEED="$(SEED)" scripts/chaos.sh
