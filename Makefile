# The two commands (see README): `make run` and `make test`.
.PHONY: run test check proptest watch invoke invoke-stop deploy package sam smoke chaos bench

run:
	@scripts/run.sh

test:
	@scripts/test.sh

# The fast check before every commit: format, lints, every test that needs
# no server (make test runs it first).
check:
	@scripts/check.sh

# The property tests at length (make test runs them short): PROPTEST_CASES
# cases per property, a million unless given, optimised.
proptest:
	@PROPTEST_CASES=$${PROPTEST_CASES:-1000000} cargo test --locked --profile proptest \
		-p shared -p ingest --test properties

# Local iteration with cargo lambda watch (see README).
watch:
	@scripts/watch.sh

# One function, one event, under the real `sam local invoke` in Docker (see
# README): make invoke FUNCTION=IngestFunction EVENT=events/ingest-valid.json
invoke:
	@FUNCTION="$(FUNCTION)" EVENT="$(EVENT)" scripts/invoke.sh

invoke-stop:
	@scripts/invoke.sh stop

# A first deployment that asks only what it must (see README), then the
# smoke test. Non-interactive: make deploy ARGS="--stack-name ... --help".
deploy:
	@ARGS="$(ARGS)" RELEASE="$(RELEASE)" scripts/deploy.sh

# What a deploy without Rust needs (function zips, a template per
# architecture, checksums), as the release workflow builds it:
# make package [VERSION=0.2.0] [ARCHITECTURES="arm64 x86_64"]
package:
	@VERSION="$(VERSION)" ARCHITECTURES="$(ARCHITECTURES)" PACKAGE_DIR="$(PACKAGE_DIR)" scripts/package.sh

# The pinned SAM CLI that make deploy installed, for later deploys, logs
# and deletes: make sam ARGS="deploy --config-env <stack name>"
sam:
	@ARGS="$(ARGS)" scripts/sam.sh

# One marked test submission through a deployed stack, followed to
# COMPLETED: make smoke STACK=<name> [REGION=<region>]
smoke:
	@test -n "$(STACK)" || { echo "make smoke STACK=<stack name> [REGION=<region>]" >&2; exit 2; }
	@cargo run --release --locked --quiet -p receipts -- --stack "$(STACK)" $(if $(REGION),--region "$(REGION)") smoke

# A load test of the local pipeline: accepted/s, answer and delivery times,
# CRM calls and DynamoDB write units per lead.
# make bench [N=200] [RATE=50] [CRM_DELAY_MS=50]   (RATE=0: as fast as accepted)
bench:
	@N="$(N)" RATE="$(RATE)" CRM_DELAY_MS="$(CRM_DELAY_MS)" scripts/bench.sh

# The promise, demonstrated: submissions while both functions are killed at
# random and the CRM fails at random; every one must end as one lead.
# make chaos [SUBMISSIONS=1000] [SEED=<number>]
chaos:
	@SUBMISSIONS="$(SUBMISSIONS)" SEED="$(SEED)" scripts/chaos.sh
