package ccmapper_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudcontrol"
	cctypes "github.com/aws/aws-sdk-go-v2/service/cloudcontrol/types"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/modules/aws_cloudcontrol/ccmapper"
	"github.com/iasql/iasql/modules/module"
)

// scope is a cycle's scope of two regions, us-east-1 the default.
var scope = module.Call{Scope: module.Scope{Regions: []string{"eu-west-1", "us-east-1"}, Default: "us-east-1"}}

// in is e's Cloud Control client of a region (another tool's).
func (e *env) in(region string) *cloudcontrol.Client {
	cfg := e.cfg.Copy()
	cfg.Region = region
	return cloudcontrol.NewFromConfig(cfg)
}

// regions of records, in order: "name@region".
func regions(recs []module.Record, col string) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.String(col)+"@"+r.String("region"))
	}
	slices.Sort(out)
	return out
}

// TestRegionsPerParent: a type listed per parent is listed in each region
// under that region's parents: a log group's subscription filters are
// found under the group of the same name in its own region only.
func TestRegionsPerParent(t *testing.T) {
	e := newEnv(t, 0)
	for _, c := range []struct{ region, group string }{{"us-east-1", "a"}, {"eu-west-1", "b"}, {"eu-west-1", "a"}} {
		cl := e.in(c.region)
		for _, r := range []struct{ typ, doc string }{
			{"AWS::Logs::LogGroup", `{"LogGroupName": "` + c.group + `"}`},
			{"AWS::Logs::SubscriptionFilter", `{"LogGroupName": "` + c.group + `", "FilterName": "f-` + c.group + `", "FilterPattern": "", "DestinationArn": "arn:aws:lambda:` + c.region + `:123456789012:function:f"}`},
		} {
			out, err := cl.CreateResource(t.Context(), &cloudcontrol.CreateResourceInput{TypeName: aws.String(r.typ), DesiredState: aws.String(r.doc)})
			if err != nil {
				t.Fatal(err)
			}
			if ev := testkit.WaitCloudControl(t, 10*time.Second, cl, out.ProgressEvent); ev.OperationStatus != cctypes.OperationStatusSuccess {
				t.Fatalf("create %s in %s: %s %s", r.typ, c.region, ev.ErrorCode, aws.ToString(ev.StatusMessage))
			}
		}
	}
	// The rows name a in us-east-1 and b in eu-west-1 (not a there).
	m := e.mapper(t, "AWS::Logs::SubscriptionFilter", ccmapper.Options{Parents: func(module.Call) ([]map[string]any, error) {
		return []map[string]any{{"LogGroupName": "a", "region": "us-east-1"}, {"LogGroupName": "b", "region": "eu-west-1"}}, nil
	}})
	read, err := m.Read(t.Context(), scope)
	if err != nil {
		t.Fatal(err)
	}
	if got := regions(read, "filter_name"); !slices.Equal(got, []string{"f-a@us-east-1", "f-b@eu-west-1"}) {
		t.Errorf("read %v, want f-a in us-east-1 and f-b in eu-west-1", got)
	}
}

// TestRegionsByID: a type without a list handler reads each identity in
// its region; a create goes to the row's region and its requests are
// polled there; a region whose reads fail is named by a PartialError and
// the other's resources come back.
func TestRegionsByID(t *testing.T) {
	const typ = "AWS::Test::Widget"
	e := synthetic(t, "by-id.json")
	var given []module.Record
	m := e.mapper(t, typ, ccmapper.Options{Identities: func(module.Call) ([]module.Record, error) { return given, nil }})
	for _, region := range []string{"eu-west-1", "us-east-1"} {
		got, err := settle(t, m)(m.Create(t.Context(), module.Call{Scope: scope.Scope, Token: "tok-" + region},
			module.Record{"widget_name": "w", "size": json.Number("1"), "region": region}))
		if err != nil || got.String("region") != region {
			t.Fatalf("create in %s: %v %v", region, got, err)
		}
	}
	for _, region := range []string{"eu-west-1", "us-east-1"} {
		if _, err := e.in(region).GetResource(t.Context(), &cloudcontrol.GetResourceInput{TypeName: aws.String(typ), Identifier: aws.String("w")}); err != nil {
			t.Errorf("w in %s: %v", region, err)
		}
	}
	given = []module.Record{{"widget_name": "w", "region": "eu-west-1"}, {"widget_name": "w", "region": "us-east-1"}}
	read, err := m.Read(t.Context(), scope)
	if got := regions(read, "widget_name"); err != nil || !slices.Equal(got, []string{"w@eu-west-1", "w@us-east-1"}) {
		t.Errorf("read %v, %v; want w in both regions", got, err)
	}

	e.em.Inject(emulator.Fault{Op: "cloudcontrolapi:*", Region: "eu-west-1", Kind: emulator.Denied})
	read, err = m.Read(t.Context(), scope)
	failed, ok := module.FailedRegions(err)
	var pe *module.PartialError
	if !ok || !errors.As(err, &pe) || len(failed) != 1 || failed["eu-west-1"] == nil {
		t.Errorf("read with eu-west-1 failing: %v; want a PartialError naming eu-west-1", err)
	}
	if got := regions(read, "widget_name"); !slices.Equal(got, []string{"w@us-east-1"}) {
		t.Errorf("read with eu-west-1 failing %v, want us-east-1's", got)
	}
}

// TestRegionsGeneratedIdentity: where the cloud generates the identity
// (a queue's URL), the region is not part of it: Get finds the resource
// in the region its identifier names, and the record says that region.
func TestRegionsGeneratedIdentity(t *testing.T) {
	e := newEnv(t, 0)
	m := e.mapper(t, "AWS::SQS::Queue", ccmapper.Options{})
	got, err := settle(t, m)(m.Create(t.Context(), module.Call{Scope: scope.Scope, Token: "tok-q"}, module.Record{"queue_name": "jobs", "region": "eu-west-1"}))
	if err != nil || got.String("region") != "eu-west-1" {
		t.Fatalf("create in eu-west-1: %v %v", got, err)
	}
	e.em.Reset()
	recs, err := m.Get(t.Context(), scope, []string{module.CloudIDOf(m.Type().ModuleTable(), got)})
	if err != nil || len(recs) != 1 || recs[0].String("region") != "eu-west-1" {
		t.Errorf("Get of %s: %v %v; want the queue in eu-west-1", got.String("queue_url"), recs, err)
	}
	if n := e.calls("GetResource"); n != 1 {
		t.Errorf("%d GetResource calls, want 1: the URL names the region", n)
	}
}
