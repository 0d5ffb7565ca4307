// Package ormtest runs the ORM tools people use against iasql, as they use
// them: Django (Debian's python3-django: inspectdb, then create, update and
// delete through the generated models), SQLAlchemy's automap (Debian's
// python3-sqlalchemy), drizzle (drizzle-kit pull, then drizzle-orm) and a
// pgx pool, each against a database with a sidecar and the emulator,
// checking that what they write reaches the cloud. The tools come from make (target orm-deps);
// the tests fail, saying how to get them, when they are missing. The scripts
// they run are in tools/orm.
package ormtest
