"""SQLAlchemy's automap against iasql, as the README says to use it
(internal/ormtest runs it).

python3 sqlalchemy_crud.py PHASE, with the database in PGHOST, PGPORT,
PGUSER and PGDATABASE (libpq's variables):
  create  maps the tables (relationships named after their foreign keys),
          creates a bucket, a security group and a rule through the rule's
          relationship to its group, then CALL iasql_commit()
  update  in one iasql transaction on one connection: iasql_begin,
          versioning on, the group's tags, iasql_commit
  delete  deletes the group (and its rule) and the bucket, then commits
Each phase prints one line; a failure raises (exit 1).
"""

import sys

from sqlalchemy import create_engine
from sqlalchemy.ext.automap import automap_base
from sqlalchemy.orm import Session

NAME = "orm-sqlalchemy"

engine = create_engine("postgresql+psycopg2://")
Base = automap_base()
# The README's naming: a relationship after its foreign key's name.
Base.prepare(autoload_with=engine,
             name_for_scalar_relationship=lambda base, local, referred, c: c.name.removesuffix("_fk"),
             name_for_collection_relationship=lambda base, local, referred, c: c.name.removesuffix("_fk") + "_collection")
Bucket = Base.classes.bucket
Group = Base.classes.security_group
Rule = Base.classes.security_group_rule

# The rule's relationship to its group is on security_group_id, the other on
# source_security_group_id.
for rel, col in (("security_group_rule_group", "security_group_id"), ("security_group_rule_source", "source_security_group_id")):
    local = {c.name for c in getattr(Rule, rel).property.local_columns}
    if local != {col}:
        raise SystemExit(f"security_group_rule.{rel} is on {local}, want {col}")


def commit(conn=None):
    if conn is None:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
            c.exec_driver_sql("CALL iasql_commit()")
    else:
        conn.exec_driver_sql("CALL iasql_commit()")


def create():
    with Session(engine) as s:
        s.add(Bucket(name=NAME))
        g = Group(group_name=NAME, description="made by sqlalchemy")
        s.add(Rule(security_group_rule_group=g, ip_protocol="tcp", from_port=8080, to_port=8080, cidr_ipv4="0.0.0.0/0"))
        s.commit()
    commit()
    print("create: committed")


def update():
    # An iasql transaction belongs to the session that began it: one
    # connection, in autocommit mode, for all of it.
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql("CALL iasql_begin()")
        with Session(bind=conn) as s:
            s.query(Bucket).filter_by(name=NAME).one().versioning = True
            s.query(Group).filter_by(group_name=NAME).one().tags = {"made-by": "sqlalchemy", "team": "web"}
            s.commit()
        commit(conn)
    print("update: committed")


def delete():
    with Session(engine) as s:
        s.query(Rule).filter(Rule.security_group_id.in_(s.query(Group.id).filter_by(group_name=NAME))).delete(synchronize_session=False)
        s.query(Group).filter_by(group_name=NAME).delete()
        s.query(Bucket).filter_by(name=NAME).delete()
        s.commit()
    commit()
    print("delete: committed")


if __name__ == "__main__":
    {"create": create, "update": update, "delete": delete}[sys.argv[1]]()
