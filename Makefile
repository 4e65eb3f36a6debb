# The two commands (see README): `make run` and `make test`.
.PHONY: run test watch

run:
	@scripts/run.sh

test:
	@scripts/test.sh

# Local iteration with cargo lambda watch (see README).
watch:
	@scripts/watch.sh
