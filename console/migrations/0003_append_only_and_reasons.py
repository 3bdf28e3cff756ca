"""Make the decision log and dataset versions append-only in the database itself, and seed the
default reject reasons of both queues (managers edit them in the admin).

Updates are always refused. Deletes and truncation are refused unless the session has set
``flywheel.allow_purge = 'on'``: only the test suite does, to empty its database between tests.
"""

from django.db import migrations

APPEND_ONLY_TABLES = ("console_review", "console_datasetversion")

FUNCTION = """
CREATE OR REPLACE FUNCTION flywheel_append_only() RETURNS trigger AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'TRUNCATE') AND coalesce(current_setting('flywheel.allow_purge', true), '') = 'on' THEN
        IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
        RETURN NULL;
    END IF;
    RAISE EXCEPTION '% rows are append-only: % is not allowed', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
"""

REASONS = {
    "task": [
        ("infeasible", "Infeasible: cannot be done with the offered tools"),
        ("ambiguous", "Ambiguous instruction"),
        ("unrealistic", "Unrealistic request"),
        ("wrong_check", "Completion check is wrong"),
        ("duplicate", "Duplicate of another task"),
        ("unsafe", "Unsafe or inappropriate"),
    ],
    "trajectory": [
        ("wrong_outcome", "Verifier verdict is wrong"),
        ("false_claim", "Claims something the tools did not confirm"),
        ("unsafe_action", "Unsafe or unrequested action"),
        ("inefficient", "Needlessly long or redundant"),
        ("bad_reasoning", "Reasoning does not support the actions"),
        ("env_error", "Environment or tool malfunction"),
    ],
}


def seed_reasons(apps, schema_editor):
    ReasonCode = apps.get_model("console", "ReasonCode")
    for queue, rows in REASONS.items():
        for position, (code, label) in enumerate(rows):
            ReasonCode.objects.get_or_create(queue=queue, code=code, defaults={"label": label, "position": position})


def forward_sql():
    sql = [FUNCTION]
    for table in APPEND_ONLY_TABLES:
        sql.append(
            f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION flywheel_append_only();"
        )
        sql.append(
            f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION flywheel_append_only();"
        )
    return sql


def reverse_sql():
    sql = []
    for table in APPEND_ONLY_TABLES:
        sql.append(f"DROP TRIGGER IF EXISTS {table}_append_only ON {table};")
        sql.append(f"DROP TRIGGER IF EXISTS {table}_no_truncate ON {table};")
    sql.append("DROP FUNCTION IF EXISTS flywheel_append_only();")
    return sql


class Migration(migrations.Migration):
    dependencies = [("console", "0002_data_flywheel")]

    operations = [
        migrations.RunSQL(forward_sql(), reverse_sql()),
        migrations.RunPython(seed_reasons, migrations.RunPython.noop),
    ]
