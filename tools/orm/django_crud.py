"""Django against iasql, as a user would set it up (internal/ormtest runs it).

python3 django_crud.py DIR PHASE, with the database in PGHOST, PGPORT,
PGUSER and PGDATABASE (libpq's variables):
  inspect  writes a project in DIR whose models come from `inspectdb` of the
           module tables, with the edits the README names
  check    runs `manage.py check` on it (a process of its own, as the models
           must be imported after they are written)
  create   creates a bucket, a security group (no VPC given; its instance is
           saved again) with a rule, and an instance in the group, then
           CALL iasql_commit()
  update   turns versioning on and changes the group's tags, then commits
  delete   deletes the instance, the rule, the group and the bucket, then
           commits
Each phase prints one line; a failure raises (exit 1).
"""

import os
import re
import sys

TABLES = ["aws_regions", "vpc", "subnet", "security_group", "security_group_rule", "instance", "bucket", "bucket_object"]
NAME = "orm-django"

SETTINGS = """
import os
SECRET_KEY = "ormtest"
INSTALLED_APPS = ["ormapp"]
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
DATABASES = {"default": {
    "ENGINE": "django.db.backends.postgresql",
    "NAME": os.environ["PGDATABASE"], "USER": os.environ["PGUSER"],
    "HOST": os.environ["PGHOST"], "PORT": os.environ["PGPORT"],
}}
"""


def setup(root):
    sys.path.insert(0, root)
    os.environ["DJANGO_SETTINGS_MODULE"] = "ormsettings"
    import django
    django.setup()


def readme_edits(models):
    """The edits the README asks for after inspectdb (Django 3.2)."""
    # Two foreign keys of security_group_rule name security_group: both
    # would get the reverse accessor securitygroup_set (fields.E304).
    models, n = re.subn(r"(source_security_group = models\.ForeignKey\([^,]+, models\.DO_NOTHING)",
                        r"\1, related_name='+'", models)
    if n != 1:
        raise SystemExit("inspectdb wrote no source_security_group ForeignKey:\n" + models)
    # Arrays come out as TextField ("This field type is a guess").
    models, n = re.subn(r"security_group_ids = models\.TextField\((.*?)\).*",
                        r"security_group_ids = ArrayField(models.BigIntegerField(), \1)", models)
    if n != 1:
        raise SystemExit("inspectdb wrote no security_group_ids TextField:\n" + models)
    models = models.replace("from django.db import models\n",
                            "from django.contrib.postgres.fields import ArrayField\nfrom django.db import models\n", 1)
    return models


def inspect(root):
    os.makedirs(os.path.join(root, "ormapp"), exist_ok=True)
    with open(os.path.join(root, "ormsettings.py"), "w") as f:
        f.write(SETTINGS)
    open(os.path.join(root, "ormapp", "__init__.py"), "w").close()
    open(os.path.join(root, "ormapp", "models.py"), "w").close()
    setup(root)
    import io
    from django.core.management import call_command
    out = io.StringIO()
    call_command("inspectdb", *TABLES, stdout=out)
    models = readme_edits(out.getvalue())
    with open(os.path.join(root, "ormapp", "models.py"), "w") as f:
        f.write(models)
    with open(os.path.join(root, "ormapp", "models.py.inspectdb"), "w") as f:
        f.write(out.getvalue())
    print("inspectdb: models written")


def check():
    from django.core.management import call_command
    call_command("check", fail_level="ERROR")  # raises SystemCheckError
    from ormapp import models
    if not hasattr(models, "SecurityGroupRule"):
        raise SystemExit("check ran without the generated models")
    print("check: passed")


def commit():
    from django.db import connection
    with connection.cursor() as c:
        c.execute("CALL iasql_commit()")


def create():
    from ormapp.models import Bucket, Instance, SecurityGroup, SecurityGroupRule
    Bucket.objects.create(name=NAME)
    sg = SecurityGroup.objects.create(group_name=NAME, description="made by django")
    # The same instance saved again: it still holds None for vpc_id and the
    # region, which the database filled in.
    sg.tags = {"made-by": "django"}
    sg.save()
    SecurityGroupRule.objects.create(security_group=sg, ip_protocol="tcp", from_port=443, to_port=443, cidr_ipv4="0.0.0.0/0")
    # An instance in AWS's default subnet, in the group.
    Instance.objects.create(ami="ami-0123456789abcdef0", instance_type="t3.micro", security_group_ids=[sg.id], tags={"Name": NAME})
    commit()
    print("create: committed")


def update():
    from ormapp.models import Bucket, SecurityGroup
    b = Bucket.objects.get(name=NAME)
    b.versioning = True
    b.save()
    sg = SecurityGroup.objects.get(group_name=NAME)
    sg.tags = {"made-by": "django", "team": "web"}
    sg.save()
    commit()
    print("update: committed")


def delete():
    from ormapp.models import Bucket, Instance, SecurityGroup, SecurityGroupRule
    Instance.objects.filter(tags__Name=NAME).delete()
    SecurityGroupRule.objects.filter(security_group__group_name=NAME).delete()
    SecurityGroup.objects.filter(group_name=NAME).delete()
    Bucket.objects.filter(name=NAME).delete()
    commit()
    print("delete: committed")


def main():
    root, phase = sys.argv[1], sys.argv[2]
    if phase == "inspect":
        inspect(root)
        return
    setup(root)
    {"check": check, "create": create, "update": update, "delete": delete}[phase]()


if __name__ == "__main__":
    main()
