package ccmapper_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudcontrol"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/modules/aws_cloudcontrol/ccmapper"
	"github.com/iasql/iasql/modules/aws_cloudcontrol/ratelimit"
	"github.com/iasql/iasql/modules/aws_cloudcontrol/schema"
	"github.com/iasql/iasql/modules/module"
)

// synthetic starts an emulator that also serves the synthetic schemas
// named (modules/aws_cloudcontrol/testdata).
func synthetic(t *testing.T, files ...string) *env {
	t.Helper()
	var docs []string
	for _, f := range files {
		b, err := os.ReadFile("../testdata/" + f)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	cl := testkit.StartCloud(t, emulator.Options{CloudFormationSchemas: docs})
	return &env{em: cl.Emu, cc: cloudcontrol.NewFromConfig(cl.AWS), cfg: cl.AWS, cfn: cloudformation.NewFromConfig(cl.AWS), lim: ratelimit.New(1000, 100)}
}

// TestReadByID: a type without a list handler (Cloud Control answers its
// ListResources UnsupportedActionException) is read by GetResource, one
// call per identity the engine gives (its rows'), and nothing else: a
// resource made elsewhere is not read; one gone is absent.
func TestReadByID(t *testing.T) {
	const typ = "AWS::Test::Widget"
	e := synthetic(t, "by-id.json")
	if _, err := e.cc.ListResources(t.Context(), &cloudcontrol.ListResourcesInput{TypeName: aws.String(typ)}); !module.IsCode(err, "UnsupportedActionException") {
		t.Fatalf("ListResources of a type without a list handler: %v; want UnsupportedActionException, as AWS answers", err)
	}
	var given []module.Record
	m := e.mapper(t, typ, ccmapper.Options{Identities: func(module.Call) ([]module.Record, error) { return given, nil }})
	for _, name := range []string{"mine", "elsewhere"} {
		if _, err := settle(t, m)(m.Create(t.Context(), module.Call{Token: "tok-" + name}, module.Record{"widget_name": name, "size": json.Number("1")})); err != nil {
			t.Fatal(err)
		}
	}

	e.em.Reset()
	given = []module.Record{{"widget_name": "mine", "size": json.Number("1")}, {"widget_name": "mine"}, {"widget_name": "gone"}, {"size": json.Number("3")}}
	read, err := m.Read(t.Context(), module.Call{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range read {
		names = append(names, r.String("widget_name"))
	}
	if !slices.Equal(names, []string{"mine"}) {
		t.Errorf("read %v, want only the resource a row names (mine)", names)
	}
	if n, l := e.calls("GetResource"), e.calls("ListResources"); n != 2 || l != 0 {
		t.Errorf("%d GetResource and %d ListResources calls, want one GetResource per distinct identity (mine, gone) and no list", n, l)
	}
	if p := m.PageSize(); p != 0 {
		t.Errorf("page size %d: a read by identity has no pages, listing is never cheaper", p)
	}

	// Without identities, the read says so.
	bare := e.mapper(t, typ, ccmapper.Options{})
	if _, err := bare.Read(t.Context(), module.Call{}); err == nil || !strings.Contains(err.Error(), "no list handler") {
		t.Errorf("Read without identities: %v", err)
	}
}

// TestNestedIdentifierCalls: for a type whose identifier is below a
// property, a Get by the engine's identity (which holds the object, not
// the identifier alone) errs instead of calling the resource gone.
func TestNestedIdentifierCalls(t *testing.T) {
	e := synthetic(t, "nested-id.json")
	ty, err := schema.Describe(t.Context(), e.cfn, "AWS::Test::RefreshSchedule")
	if err != nil {
		t.Fatal(err)
	}
	m := ccmapper.New(ccmapper.NewClients(e.cfg), ty, e.lim, ccmapper.Options{})
	have := module.Record{"data_set_id": "ds", "schedule": map[string]any{"ScheduleId": "s1", "Frequency": "DAILY"}}
	if got := ty.IdentifierOf(have); got != "ds|s1" {
		t.Fatalf("identifier %q", got)
	}
	if _, err := m.Get(t.Context(), module.Call{}, []string{module.CloudIDOf(ty.ModuleTable(), have)}); err == nil {
		t.Error("Get by an identity holding an object answered; it cannot tell the resource")
	}
}
