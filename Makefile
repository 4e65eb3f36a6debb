# The two commands (see README): `make run` and `make test`.
.PHONY: run test

run:
	@scripts/run.sh

test:
	@scripts/test.sh
