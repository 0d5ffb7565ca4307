package trail_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/iasql/iasql/modules/internal/trail"
)

// TestParse: a CloudTrail record as EventBridge's detail carries it
// becomes an Event: source, name, region, parameters, response and the
// resources' ARNs.
func TestParse(t *testing.T) {
	ev, err := trail.Parse([]byte(`{"eventVersion":"1.08","eventSource":"ec2.amazonaws.com","eventName":"StopInstances","awsRegion":"us-east-2",
		"requestParameters":{"instancesSet":{"items":[{"instanceId":"i-1"}]},"force":false},"responseElements":null,
		"resources":[{"ARN":"arn:aws:ec2:us-east-2:111122223333:instance/i-1","type":"AWS::EC2::Instance"},{"type":"AWS::EC2::Subnet"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Source != "ec2.amazonaws.com" || ev.Name != "StopInstances" || ev.Region != "us-east-2" || ev.Response != nil ||
		!slices.Equal(ev.Resources, []string{"arn:aws:ec2:us-east-2:111122223333:instance/i-1"}) ||
		trail.String(ev.Request, "instancesSet", "items", "instanceId") != "i-1" {
		t.Errorf("Parse = %+v", ev)
	}
	if _, err := trail.Parse([]byte(`{"eventSource":`)); err == nil {
		t.Error("Parse of a broken record: no error")
	}
}

// TestStrings: values by path regardless of case, lists crossed, numbers
// and booleans as text; Find anywhere below.
func TestStrings(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal([]byte(`{"QueueUrl":"q","set":{"items":[{"id":"a","n":22},{"id":"b","n":22.5},{"id":"a"}]},
		"list":[{"ok":true},{"ok":"false"}],"deep":{"x":[{"securityGroupRuleId":"sgr-1"}],"securityGroupRuleId":"sgr-2"}}`), &doc); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		got  []string
		want []string
	}{
		{"case", trail.Strings(doc, "queueUrl"), []string{"q"}},
		{"a set's items, without repeats", trail.Strings(doc, "set", "items", "id"), []string{"a", "b"}},
		{"numbers", trail.Strings(doc, "set", "items", "n"), []string{"22", "22.5"}},
		{"booleans", trail.Strings(doc, "list", "ok"), []string{"true", "false"}},
		{"missing", trail.Strings(doc, "set", "nothing"), nil},
		{"Find", trail.Find(doc, "securityGroupRuleId"), []string{"sgr-2", "sgr-1"}},
	}
	for _, c := range cases {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, c.got, c.want)
		}
	}
	if n, ok := trail.Int("8080"); !ok || n != 8080 {
		t.Errorf("Int(\"8080\") = %d, %v", n, ok)
	}
	if _, ok := trail.Int(json.Number("1.5")); ok {
		t.Error("Int(1.5): ok")
	}
}

// TestParseARN: an ARN's parts; what is no ARN is refused.
func TestParseARN(t *testing.T) {
	a, ok := trail.ParseARN("arn:aws:elasticloadbalancing:us-west-2:123456789012:listener/app/lb/1/2")
	if !ok || a.Service != "elasticloadbalancing" || a.Region != "us-west-2" || a.Account != "123456789012" || a.Resource != "listener/app/lb/1/2" {
		t.Errorf("ParseARN = %+v, %v", a, ok)
	}
	if b, ok := trail.ParseARN("arn:aws:s3:::bucket"); !ok || b.Resource != "bucket" || b.Region != "" {
		t.Errorf("ParseARN(bucket) = %+v, %v", b, ok)
	}
	for _, s := range []string{"", "https://sqs.us-east-1.amazonaws.com/1/q", "arn:aws::us-east-1:1:x"} {
		if _, ok := trail.ParseARN(s); ok {
			t.Errorf("ParseARN(%q): ok", s)
		}
	}
}
