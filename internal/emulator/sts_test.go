package emulator_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/testkit"
)

// The emulator answers STS GetCallerIdentity with its account: the default
// one, or the one its options name.
func TestSTSGetCallerIdentity(t *testing.T) {
	for _, tc := range []struct{ opt, want string }{{"", emulator.DefaultAccountID}, {"210987654321", "210987654321"}} {
		out, err := testkit.Clients(testkit.StartCloud(t, emulator.Options{AccountID: tc.opt}).AWS, sts.NewFromConfig)("us-east-1").GetCallerIdentity(t.Context(), &sts.GetCallerIdentityInput{})
		if err != nil {
			t.Fatalf("GetCallerIdentity: %v", err)
		}
		if got := aws.ToString(out.Account); got != tc.want {
			t.Errorf("account %q, want %q", got, tc.want)
		}
		if arn := aws.ToString(out.Arn); arn != "arn:aws:iam::"+tc.want+":user/test" {
			t.Errorf("arn %q", arn)
		}
		if aws.ToString(out.UserId) == "" {
			t.Error("no UserId")
		}
	}
}
