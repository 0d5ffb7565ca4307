package main_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/testkit"
)

// iasql emulator --schemas DIR serves DIR's schemas (IASQL_EMULATOR_SCHEMAS
// too); a folder it cannot serve stops it with a one-line error.
func TestEmulatorSchemas(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const schema = `{"typeName":"Example::Flag::Thing","properties":{"Name":{"type":"string"}},"additionalProperties":false,` +
		`"primaryIdentifier":["/properties/Name"],"handlers":{"create":{"permissions":[]},"read":{"permissions":[]},"delete":{"permissions":[]}}}`
	if err := os.WriteFile(filepath.Join(dir, "thing.json"), []byte(schema), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		env  []string
	}{
		{"flag", []string{"--schemas", dir}, nil},
		{"environment", nil, []string{"IASQL_EMULATOR_SCHEMAS=" + dir}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testkit.Start(t, "", tc.env, append([]string{"emulator", "--listen", "127.0.0.1:0"}, tc.args...)...)
			url := regexp.MustCompile(`AWS_ENDPOINT_URL=(\S+)`).FindStringSubmatch(p.WaitLog(10*time.Second, regexp.MustCompile(`AWS_ENDPOINT_URL=\S+`)))[1]
			out, err := cloudformation.NewFromConfig(emulator.ClientConfig(url)).DescribeType(t.Context(),
				&cloudformation.DescribeTypeInput{Type: cfntypes.RegistryTypeResource, TypeName: aws.String("Example::Flag::Thing")})
			if err != nil || aws.ToString(out.Schema) != schema || out.ProvisioningType != cfntypes.ProvisioningTypeImmutable {
				t.Errorf("DescribeType: %v %+v", err, out)
			}
		})
	}
	r := testkit.Run(t, 10*time.Second, "emulator", "--listen", "127.0.0.1:0", "--schemas", filepath.Join(dir, "missing"))
	if r.Code == 0 || !strings.Contains(r.Stderr, "--schemas") || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
		t.Errorf("a missing folder: exit %d, %q", r.Code, r.Stderr)
	}
}

// iasql emulator --identity KEY=ARN maps an access key to the ARN STS
// GetCallerIdentity answers (and CloudTrail's events carry); other keys
// are the IAM user named after them; a pair that is not KEY=ARN stops it
// with a one-line error.
func TestEmulatorIdentity(t *testing.T) {
	t.Parallel()
	const bob = "arn:aws:sts::123456789012:assumed-role/ops/bob"
	p := testkit.Start(t, "", []string{"IASQL_EMULATOR_IDENTITIES=CAROLKEY=arn:aws:iam::123456789012:user/carol"},
		"emulator", "--listen", "127.0.0.1:0", "--identity", "BOBKEY="+bob, "--event-delay", "0s")
	url := regexp.MustCompile(`AWS_ENDPOINT_URL=(\S+)`).FindStringSubmatch(p.WaitLog(10*time.Second, regexp.MustCompile(`AWS_ENDPOINT_URL=\S+`)))[1]
	for _, tc := range []struct{ key, want string }{
		{"BOBKEY", bob},
		{"other", "arn:aws:iam::123456789012:user/other"},
	} {
		cfg := emulator.ClientConfig(url)
		cfg.Credentials = credentials.NewStaticCredentialsProvider(tc.key, "secret", "")
		out, err := sts.NewFromConfig(cfg).GetCallerIdentity(t.Context(), &sts.GetCallerIdentityInput{})
		if err != nil || aws.ToString(out.Arn) != tc.want {
			t.Errorf("GetCallerIdentity as %s: %v, %v; want %s", tc.key, out, err, tc.want)
		}
	}
	r := testkit.Run(t, 10*time.Second, "emulator", "--listen", "127.0.0.1:0", "--identity", "BOBKEY")
	if r.Code == 0 || !strings.Contains(r.Stderr, "--identity") || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
		t.Errorf("--identity BOBKEY: exit %d, %q", r.Code, r.Stderr)
	}
}
