package schema_test

import (
	"fmt"
	"os"

	"github.com/iasql/iasql/modules/aws_cloudcontrol/schema"
	"github.com/iasql/iasql/modules/module"
)

// The table of AWS::Logs::LogGroup: its declaration, the DDL the
// declaration makes, and the SQL that follows it (the identity's
// constraint).
func ExampleType_ModuleTable() {
	doc, _ := os.ReadFile("../../../internal/emulator/cfnschemas/aws-logs-loggroup.json")
	t, err := schema.Parse(doc)
	if err != nil {
		fmt.Println(err)
		return
	}
	tbl := t.ModuleTable()
	kinds := map[module.Kind]string{module.Declarative: "declarative", module.Feedback: "feedback", module.Initial: "initial"}
	for _, c := range tbl.Columns {
		fmt.Printf("%s %s %s", c.Name, c.Type, kinds[c.Kind])
		for _, f := range []struct {
			on   bool
			what string
		}{{c.NotNull, "not null"}, {c.CloudID, "cloud id"}, {c.CreateOnly, "create-only"}} {
			if f.on {
				fmt.Print(", " + f.what)
			}
		}
		fmt.Println()
	}
	fmt.Println()
	fmt.Print(tbl.DDL())
	fmt.Print(t.SQL())
	fmt.Print(t.ChecksSQL())
	// Output:
	// log_group_name text declarative, cloud id, create-only
	// arn text feedback
	// data_protection_policy jsonb declarative
	// field_index_policies jsonb declarative
	// kms_key_id text declarative
	// log_group_class text declarative, create-only
	// retention_in_days bigint declarative
	// tags jsonb declarative
	// kms_key_id_ref integer declarative
	// region text declarative, not null, cloud id, create-only
	//
	// CREATE TABLE public.aws_logs_log_group (
	//   id serial PRIMARY KEY,
	//   log_group_name text,
	//   arn text,
	//   data_protection_policy jsonb,
	//   field_index_policies jsonb,
	//   kms_key_id text,
	//   log_group_class text,
	//   retention_in_days bigint,
	//   tags jsonb,
	//   kms_key_id_ref integer,
	//   region text
	// );
	// COMMENT ON TABLE public.aws_logs_log_group IS 'AWS::Logs::LogGroup resources (Cloud Control API). A CloudWatch Logs log group: a named container of log streams sharing retention, encryption and access settings. Insert a row to create one, update it to change it, delete it to delete it. Holds the resources of every enabled region of aws_regions where aws_account is installed, else of the sidecar''s region; a row''s region says where it is.';
	// COMMENT ON COLUMN public.aws_logs_log_group.id IS 'Database identifier of the row.';
	// COMMENT ON COLUMN public.aws_logs_log_group.log_group_name IS 'Name of the log group; generated when left out. (property LogGroupName; create-only: changing it replaces the resource)';
	// COMMENT ON COLUMN public.aws_logs_log_group.arn IS 'ARN of the group (ending in :*), set by AWS. (property Arn; read-only: set by the cloud, never written to it)';
	// COMMENT ON COLUMN public.aws_logs_log_group.data_protection_policy IS 'Data protection policy document of the group. (property DataProtectionPolicy)';
	// COMMENT ON COLUMN public.aws_logs_log_group.field_index_policies IS 'Field index policies of the group. (property FieldIndexPolicies; order does not matter)';
	// COMMENT ON COLUMN public.aws_logs_log_group.kms_key_id IS 'ARN of the KMS key that encrypts the group''s log data. (property KmsKeyId; or point at a row of aws_kms_key with kms_key_id_ref)';
	// COMMENT ON COLUMN public.aws_logs_log_group.log_group_class IS 'Storage class of the group. (property LogGroupClass; create-only: changing it replaces the resource; absent means STANDARD)';
	// COMMENT ON COLUMN public.aws_logs_log_group.retention_in_days IS 'Days log events are kept; absent keeps them forever. (property RetentionInDays)';
	// COMMENT ON COLUMN public.aws_logs_log_group.tags IS 'Tags of the group. (property Tags; tags as one JSON object {"key": "value"})';
	// COMMENT ON COLUMN public.aws_logs_log_group.kms_key_id_ref IS 'The row (aws_kms_key.id) of AWS::KMS::Key that KmsKeyId names (learnt from a well-known property name). Set it instead of kms_key_id to point at a row by id: the engine fills kms_key_id from that row''s arn once the cloud has it; found from kms_key_id for resources read from the cloud, NULL when no row of aws_kms_key has that arn.';
	// COMMENT ON COLUMN public.aws_logs_log_group.region IS 'AWS region of the resource, e.g. eu-west-1; defaults to the default region of aws_account (without aws_account, the sidecar''s region). Changing it replaces the resource.';
	// COMMENT ON SEQUENCE public.aws_logs_log_group_id_seq IS 'Generates aws_logs_log_group.id.';
	// ALTER TABLE public.aws_logs_log_group
	//   ADD CONSTRAINT aws_logs_log_group_region_not_null CHECK (region IS NOT NULL);
	// COMMENT ON CONSTRAINT aws_logs_log_group_region_not_null ON public.aws_logs_log_group IS 'region is never NULL: an INSERT that leaves it NULL gets public."aws_logs_log_group_region"(), an UPDATE that sets it NULL keeps its value (trigger aws_logs_log_group_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
	// CREATE OR REPLACE FUNCTION public.aws_logs_log_group_defaults() RETURNS trigger
	// LANGUAGE plpgsql AS $$
	// BEGIN
	//   -- OLD is NULL on INSERT: a NULL there gets the default, on UPDATE the old value.
	//   NEW.region := coalesce(NEW.region, OLD.region, public."aws_logs_log_group_region"());
	//   RETURN NEW;
	// END;
	// $$;
	// COMMENT ON FUNCTION public.aws_logs_log_group_defaults() IS 'Trigger function: fills in region when a write leaves them NULL, with their default on INSERT and their old value on UPDATE.';
	// CREATE TRIGGER aws_logs_log_group_0_defaults BEFORE INSERT OR UPDATE ON public.aws_logs_log_group
	//   FOR EACH ROW EXECUTE FUNCTION public.aws_logs_log_group_defaults();
	// COMMENT ON TRIGGER aws_logs_log_group_0_defaults ON public.aws_logs_log_group IS 'Fills in the columns a write leaves NULL that have a default (before the table''s other triggers, which fire in name order).';
	// ALTER TABLE public."aws_logs_log_group" ADD CONSTRAINT "aws_logs_log_group_identity" UNIQUE ("log_group_name", region);
	// COMMENT ON CONSTRAINT "aws_logs_log_group_identity" ON public."aws_logs_log_group" IS 'A resource appears once: its identity (log_group_name) is unique in its region.';
	// COMMENT ON COLUMN public."aws_logs_log_group"."id" IS 'Database identifier of the row; the cloud knows the resource by log_group_name in its region.';
	// CREATE OR REPLACE TRIGGER "aws_logs_log_group_kms_key_id_ref_check" BEFORE INSERT OR UPDATE OF "kms_key_id_ref" ON public."aws_logs_log_group" FOR EACH ROW EXECUTE FUNCTION public.iasql_reference_check('kms_key_id_ref', 'aws_kms_key', 'kms_key_id', 'false');
	// COMMENT ON TRIGGER "aws_logs_log_group_kms_key_id_ref_check" ON public."aws_logs_log_group" IS 'kms_key_id_ref lists rows of aws_kms_key, which must be installed (a foreign key once both are: aws_logs_log_group_kms_key_id_ref_fk).';
	// SELECT public.iasql_link_reference('aws_logs_log_group', 'kms_key_id_ref', 'aws_kms_key', false);
	// CREATE OR REPLACE TRIGGER "aws_logs_log_group_kms_key_id_named" BEFORE UPDATE OF "kms_key_id" ON public."aws_logs_log_group" FOR EACH ROW EXECUTE FUNCTION public.iasql_reference_named('kms_key_id_ref', 'kms_key_id');
	// COMMENT ON TRIGGER "aws_logs_log_group_kms_key_id_named" ON public."aws_logs_log_group" IS 'A user''s change of kms_key_id alone sets kms_key_id_ref NULL: the name given is the one sent to the cloud.';
}
