# The two commands (see README): `make run` and `make test`.
.PHONY: run test check proptest watch invoke invoke-stop

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
