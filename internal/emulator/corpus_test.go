//go:build cfncorpus

package emulator_test

// The corpus check, outside make test (a fresh clone has no ../shared):
//
//	IASQL_CFN_SCHEMAS=../../../shared/cfn-schemas go test -tags cfncorpus -run TestCFNCorpus ./internal/emulator/
//
// serves every schema of the folder, describes each type, and creates one
// resource of each type with a create handler, from a desired state made
// of its required properties.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudcontrol"
	cctypes "github.com/aws/aws-sdk-go-v2/service/cloudcontrol/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/testkit"
)

func TestCFNCorpus(t *testing.T) {
	dir := os.Getenv("IASQL_CFN_SCHEMAS")
	if dir == "" {
		t.Fatal("set IASQL_CFN_SCHEMAS to a folder of resource schemas")
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: %v", dir, err)
	}
	cl := testkit.StartCloud(t, emulator.Options{SchemaDir: dir})
	c := testkit.Clients(cl.AWS, cloudcontrol.NewFromConfig)("us-east-1")
	cfn := cloudformation.NewFromConfig(cl.AWS)
	created, refused, nonProv := 0, 0, 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		name, _ := doc["typeName"].(string)
		dt, err := cfn.DescribeType(t.Context(), &cloudformation.DescribeTypeInput{Type: cfntypes.RegistryTypeResource, TypeName: aws.String(name)})
		if err != nil || aws.ToString(dt.Schema) != string(b) {
			t.Errorf("%s: DescribeType: %v", name, err)
			continue
		}
		if dt.ProvisioningType == cfntypes.ProvisioningTypeNonProvisionable {
			nonProv++
			continue
		}
		desired, _ := json.Marshal(sampleObject(doc, doc, 0))
		r := ccDo(t, c, "create", name, string(desired))
		switch {
		case r.err != nil:
			refused++
			t.Errorf("%s: create %s: %v", name, desired, r.err)
		case r.ev.OperationStatus != cctypes.OperationStatusSuccess:
			refused++
			t.Errorf("%s: create %s: %+v %s", name, desired, r.ev.ErrorCode, aws.ToString(r.ev.StatusMessage))
		default:
			created++
			id := aws.ToString(r.ev.Identifier)
			got, err := c.GetResource(t.Context(), &cloudcontrol.GetResourceInput{TypeName: aws.String(name), Identifier: aws.String(id)})
			if err != nil {
				t.Errorf("%s: GetResource %s: %v", name, id, err)
				continue
			}
			checkList(t, c, doc, name, id, got.ResourceDescription.Properties)
			if d := ccDo(t, c, "delete", name, id); d.err != nil || d.ev.OperationStatus != cctypes.OperationStatusSuccess {
				t.Errorf("%s: delete %s: %v %+v", name, id, d.err, d.ev)
			}
		}
	}
	t.Logf("%d schemas: %d created, %d refused, %d non-provisionable", len(files), created, refused, nonProv)
}

// resolve follows local $refs.
func resolve(root, p map[string]any) map[string]any {
	for i := 0; p != nil && i < 32; i++ {
		ref, _ := p["$ref"].(string)
		if ref == "" {
			return p
		}
		parts := strings.Split(strings.TrimPrefix(ref, "#/"), "/")
		if len(parts) != 2 {
			return nil
		}
		group, _ := root[parts[0]].(map[string]any)
		p, _ = group[parts[1]].(map[string]any)
	}
	return p
}

// sampleObject is an object with the required properties of schema p (and
// those of its first oneOf/anyOf alternative), read-only ones left out at
// the top.
func sampleObject(root, p map[string]any, depth int) map[string]any {
	out := map[string]any{}
	props := map[string]any{}
	if m, ok := p["properties"].(map[string]any); ok {
		for k, v := range m {
			props[k] = v
		}
	}
	var required []any
	required, _ = p["required"].([]any)
	for _, k := range []string{"oneOf", "anyOf"} {
		if alts, ok := p[k].([]any); ok && len(alts) > 0 {
			if alt, ok := alts[0].(map[string]any); ok {
				r, _ := alt["required"].([]any)
				required = append(required, r...)
				if m, ok := alt["properties"].(map[string]any); ok {
					for k, v := range m {
						props[k] = v
					}
				}
			}
		}
	}
	var readOnly []any
	if depth == 0 {
		readOnly, _ = p["readOnlyProperties"].([]any)
	}
	for _, r := range required {
		name, _ := r.(string)
		if slices.Contains(readOnly, any("/properties/"+name)) {
			continue
		}
		sub, _ := props[name].(map[string]any)
		out[name] = sample(root, sub, depth+1)
	}
	return out
}

// sample is a value schema p accepts.
func sample(root, p map[string]any, depth int) any {
	p = resolve(root, p)
	if p == nil {
		return "x"
	}
	if e, ok := p["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		if alts, ok := p[k].([]any); ok && len(alts) > 0 && p["type"] == nil && p["properties"] == nil {
			alt, _ := alts[0].(map[string]any)
			return sample(root, alt, depth)
		}
	}
	typ := p["type"]
	if list, ok := typ.([]any); ok && len(list) > 0 {
		typ = list[0]
	}
	switch typ {
	case "object":
		if depth > 8 {
			return map[string]any{}
		}
		return sampleObject(root, p, depth)
	case "array":
		item, _ := p["items"].(map[string]any)
		if depth > 8 {
			return []any{}
		}
		return []any{sample(root, item, depth+1)}
	case "integer", "number":
		return 1
	case "boolean":
		return true
	}
	if p["properties"] != nil {
		return sampleObject(root, p, depth)
	}
	return "x"
}

// checkList lists the type (under the created resource's parent when its
// list handler needs one): the resource is listed; a type without a list
// handler answers UnsupportedActionException.
func checkList(t *testing.T, c *cloudcontrol.Client, doc map[string]any, name, id string, props *string) {
	t.Helper()
	handlers, _ := doc["handlers"].(map[string]any)
	listH, ok := handlers["list"].(map[string]any)
	in := &cloudcontrol.ListResourcesInput{TypeName: aws.String(name)}
	if !ok {
		if _, err := c.ListResources(t.Context(), in); errCode(err) != "UnsupportedActionException" {
			t.Errorf("%s: ListResources without a list handler: %v", name, err)
		}
		return
	}
	var m map[string]any
	_ = json.Unmarshal([]byte(aws.ToString(props)), &m)
	if hs, ok := listH["handlerSchema"].(map[string]any); ok {
		model := map[string]any{}
		req, _ := hs["required"].([]any)
		if alts, ok := hs["oneOf"].([]any); ok && len(alts) > 0 {
			alt, _ := alts[0].(map[string]any)
			r, _ := alt["required"].([]any)
			req = append(req, r...)
		}
		for _, r := range req {
			k, _ := r.(string)
			model[k] = m[k]
		}
		b, _ := json.Marshal(model)
		in.ResourceModel = aws.String(string(b))
	}
	out, err := c.ListResources(t.Context(), in)
	if err != nil {
		t.Errorf("%s: ListResources %s: %v", name, aws.ToString(in.ResourceModel), err)
		return
	}
	if !slices.ContainsFunc(out.ResourceDescriptions, func(d cctypes.ResourceDescription) bool { return aws.ToString(d.Identifier) == id }) {
		t.Errorf("%s: ListResources %s does not list %s", name, aws.ToString(in.ResourceModel), id)
	}
}
