package aws_iam_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/iam"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_iam"
	"github.com/iasql/iasql/modules/module"
)

const missingPolicy = "arn:aws:iam::aws:policy/NoSuchPolicyAnywhere"

// TestCreateWithMissingPolicyIsNeverEnacted: a role whose managed policy does
// not exist is created by CreateRole, and AttachRolePolicy then fails with
// NoSuchEntity. The commit fails naming the role and the policy; the row
// keeps what the user wrote (the cloud's empty set is never pulled over it),
// its intent stays pending, and every later commit says so again instead of
// reporting success.
func TestCreateWithMissingPolicyIsNeverEnacted(t *testing.T) {
	t.Parallel()
	e := enginetest.New(t, srv, enginetest.Options{
		Modules: []module.Module{aws_account.Module(), aws_iam.Module()},
		Install: []string{"aws_iam"},
	})
	e.Exec(`INSERT INTO iam_role (role_name, assume_role_policy_document, attached_policy_arns, inline_policies)
		VALUES ('half', '` + ec2Trust + `', '{` + readOnly + `,` + missingPolicy + `}',
		        '{"logs": {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "logs:PutLogEvents", "Resource": "*"}]}}')`)
	for attempt := 1; attempt <= 2; attempt++ {
		_, err := e.DB.Exec(context.Background(), `CALL iasql_commit()`)
		if err == nil || !strings.Contains(err.Error(), "iam_role") || !strings.Contains(err.Error(), "half") ||
			!strings.Contains(err.Error(), missingPolicy) {
			t.Fatalf("commit %d of a role with a missing policy: %v, want an error naming the role and the policy", attempt, err)
		}
		if got := e.String(`SELECT attached_policy_arns::text FROM iam_role WHERE role_name = 'half'`); got != "{"+readOnly+","+missingPolicy+"}" {
			t.Errorf("after commit %d the row's attached_policy_arns is %s: the user's value was overwritten", attempt, got)
		}
		if n := e.Count(`SELECT count(*) FROM iam_role WHERE role_name = 'half' AND inline_policies ? 'logs'`); n != 1 {
			t.Errorf("after commit %d the row's inline_policies lost the user's policy", attempt)
		}
		if n := e.Count(`SELECT count(*) FROM iasql_pending_intent(pg_current_wal_insert_lsn()) WHERE table_name = 'iam_role'`); n != 1 {
			t.Errorf("after commit %d the role's intent is not pending (%d pending records)", attempt, n)
		}
		// Waiting for everything raises at once with the failure (the same
		// source as iasql_status), rather than waiting for the next retry.
		if _, err := e.DB.Exec(context.Background(), `SELECT iasql_wait_for_all(60)`); err == nil ||
			!strings.Contains(err.Error(), "changes failed") || !strings.Contains(err.Error(), missingPolicy) {
			t.Errorf("after commit %d iasql_wait_for_all: %v; want the role's failure", attempt, err)
		}
		// Preview says so too.
		if n := e.Count(`SELECT count(*) FROM iasql_preview() WHERE table_name = 'iam_role' AND description LIKE '%failed % time(s), last: %' || $1 || '%'`, missingPolicy); n != 1 {
			t.Errorf("after commit %d the preview does not show the role's failure", attempt)
		}
		// The status view says what failed, and when an automatic cycle tries again.
		if n := e.Count(`SELECT count(*) FROM iasql_status WHERE table_name = 'iam_role' AND record_id = '1' AND state = 'failed'
			AND attempts >= 1 AND last_error LIKE '%' || $1 || '%' AND next_retry > now() AND since <= now()`, missingPolicy); n != 1 {
			t.Errorf("after commit %d iasql_status does not show the role failed with its error and next retry", attempt)
		}
	}
}

// TestCreateFinishedAfterFailedStep: a 5xx on AttachRolePolicy that outlasts
// the SDK's retries fails the first attempt after CreateRole made the role.
// The engine's retry meets EntityAlreadyExists, finds the half-made role and
// finishes it (attach, put inline policy) instead of adopting it as it is;
// the commit succeeds and IAM has what the row says.
func TestCreateFinishedAfterFailedStep(t *testing.T) {
	t.Parallel()
	e := enginetest.New(t, srv, enginetest.Options{
		Modules: []module.Module{aws_account.Module(), aws_iam.Module()},
		Install: []string{"aws_iam"},
	})
	e.Emu.Inject(emulator.Fault{Op: "iam:AttachRolePolicy", Kind: emulator.ServerError, Times: 3}) // every attempt of the SDK's first call
	e.Exec(`INSERT INTO iam_role (role_name, assume_role_policy_document, attached_policy_arns)
		VALUES ('steps', '` + ec2Trust + `', '{` + readOnly + `,` + s3Read + `}')`)
	e.Commit()
	arns, _, ok := cloudPolicies(t, iam.NewFromConfig(e.AWS), "steps")
	want := []string{readOnly, s3Read}
	slices.Sort(want)
	if !ok || !slices.Equal(arns, want) {
		t.Fatalf("role steps in IAM: exists %v, attached %v; want %v", ok, arns, want)
	}
	if got := e.String(`SELECT attached_policy_arns::text FROM iam_role WHERE role_name = 'steps'`); got != "{"+readOnly+","+s3Read+"}" {
		t.Errorf("the row's attached_policy_arns is %s", got)
	}
	if n := e.Count(`SELECT count(*) FROM iasql_pending_intent(pg_current_wal_insert_lsn()) WHERE table_name = 'iam_role'`); n != 0 {
		t.Errorf("%d iam_role records still pending after a successful commit", n)
	}
}
