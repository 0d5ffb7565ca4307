# iasql: `make run` (the demo) and `make test` (every test) on a fresh Debian machine with Go.
GO       ?= go
PG_MAJOR ?= 15
# Debian's layout; overridable for other installs.
PG_BINDIR ?= $(firstword $(wildcard /usr/lib/postgresql/$(PG_MAJOR)/bin) $(shell pg_config --bindir 2>/dev/null))
PG_CONFIG ?= $(PG_BINDIR)/pg_config
TEST_TIMEOUT ?= 20m

.PHONY: all build deps orm-deps extension extension-install test run bench clean

all: build

build: bin/iasql

bin/iasql: $(shell find . -name '*.go' -not -path './.bench/*' -not -name registry_gen.go) $(wildcard sql/*.sql sql/upgrades/*.sql modules/*/*.sql) go.mod go.sum
	$(GO) generate ./modules
	$(GO) build -o bin/iasql ./cmd/iasql

# The PostgreSQL server binaries, pg_regress, pgbench, pg_recvlogical and pg_cron.
# Installed with apt-get when missing and running as root; otherwise we say what to install.
deps:
	@if [ -x /usr/lib/postgresql/$(PG_MAJOR)/bin/postgres ] && [ -x /usr/lib/postgresql/$(PG_MAJOR)/bin/pgbench ] \
	   && [ -x /usr/lib/postgresql/$(PG_MAJOR)/lib/pgxs/src/test/regress/pg_regress ] \
	   && [ -f /usr/lib/postgresql/$(PG_MAJOR)/lib/pg_cron.so ]; then \
	  exit 0; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing PostgreSQL $(PG_MAJOR) server binaries (apt-get)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	    postgresql-$(PG_MAJOR) postgresql-client-$(PG_MAJOR) postgresql-$(PG_MAJOR)-cron make >/dev/null; \
	else \
	  echo "PostgreSQL $(PG_MAJOR) server binaries (and pg_cron) are missing: run 'sudo apt-get install postgresql-$(PG_MAJOR) postgresql-client-$(PG_MAJOR) postgresql-$(PG_MAJOR)-cron' (or set PG_BINDIR)"; \
	  exit 1; \
	fi

# The ORM tools internal/ormtest runs: Debian's python3-django,
# python3-sqlalchemy and python3-psycopg2 (for /usr/bin/python3; apt-get when
# missing and running as root, like deps), and drizzle-kit, drizzle-orm, pg and tsx at the versions
# tools/orm/package-lock.json pins (npm ci, again when the lock changes).
orm-deps: tools/orm/node_modules/.package-lock.json
	@if /usr/bin/python3 -c 'import django, sqlalchemy, psycopg2' 2>/dev/null; then \
	  exit 0; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing Django, SQLAlchemy and psycopg2 (apt-get python3-django python3-sqlalchemy python3-psycopg2)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	    python3-django python3-sqlalchemy python3-psycopg2 >/dev/null; \
	else \
	  echo "Django or SQLAlchemy is missing for /usr/bin/python3: run 'sudo apt-get install python3-django python3-sqlalchemy python3-psycopg2'"; \
	  exit 1; \
	fi

tools/orm/node_modules/.package-lock.json: tools/orm/package.json tools/orm/package-lock.json
	@if command -v npm >/dev/null; then \
	  exit 0; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing Node.js and npm (apt-get nodejs npm)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null; \
	else \
	  echo "npm is missing: run 'sudo apt-get install nodejs npm'"; \
	  exit 1; \
	fi
	cd tools/orm && npm ci --no-audit --no-fund --loglevel=error

# Regenerate extension/ scripts from sql/ (a test checks they are current).
extension:
	$(GO) run ./sql/gen extension

# Install the extension files into the server's share directory (needs write access there).
extension-install: deps
	$(MAKE) -C extension install PG_CONFIG=$(PG_CONFIG) >/dev/null

test: deps orm-deps build extension-install
	$(GO) vet ./...
	PATH="$(PG_BINDIR):$$PATH" IASQL_BIN="$(CURDIR)/bin/iasql" $(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...

run: deps build
	PATH="$(PG_BINDIR):$$PATH" ./bin/iasql demo

bench: deps build
	PATH="$(PG_BINDIR):$$PATH" IASQL_BIN="$(CURDIR)/bin/iasql" $(GO) run ./internal/bench

clean:
	rm -rf bin regress/results regress/regression.*
