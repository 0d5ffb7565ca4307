package emulator

import (
	"slices"
	"testing"
)

func TestTouches(t *testing.T) {
	for _, tc := range []struct {
		patch, schema string
		want          bool
	}{
		{"/A", "/properties/A", true},
		{"/A/B", "/properties/A", true},    // inside a create-only object
		{"/A", "/properties/A/B", true},    // replaces a create-only member's parent
		{"/A/C", "/properties/A/B", false}, // a sibling of a create-only member
		{"/AB", "/properties/A", false},
		{"/A/0/K", "/properties/A/*/K", true},
		{"/A/0/V", "/properties/A/*/K", false},
	} {
		if got := touches(tc.patch, tc.schema); got != tc.want {
			t.Errorf("touches(%q, %q) = %v", tc.patch, tc.schema, got)
		}
	}
}

// Every embedded schema loads, names a primary identifier made of its
// properties, and its create-only, read-only and write-only paths name
// properties it has.
func TestCFNSchemas(t *testing.T) {
	schemas, err := loadCFNSchemas("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(schemas) < 11 {
		t.Fatalf("%d schemas", len(schemas))
	}
	for name, s := range schemas {
		if len(s.PrimaryIdentifier) == 0 {
			t.Errorf("%s: no primary identifier", name)
		}
		for _, list := range [][]string{s.PrimaryIdentifier, s.CreateOnly, s.ReadOnly, s.WriteOnly, s.Required} {
			for _, p := range list {
				prop := propName(p)
				if prop == "" {
					prop = p
				}
				if _, ok := s.Properties[prop]; !ok {
					t.Errorf("%s: %s names no property", name, p)
				}
			}
		}
		// As on AWS, AWS::IAM::RolePolicy has no list handler,
		// AWS::SQS::QueuePolicy no read or list handler.
		missing := map[string][]string{"AWS::IAM::RolePolicy": {"list"}, "AWS::SQS::QueuePolicy": {"read", "list"}}
		for _, h := range []string{"create", "read", "update", "delete", "list"} {
			if _, ok := s.Handlers[h]; !ok && !slices.Contains(missing[name], h) {
				t.Errorf("%s: no %s handler", name, h)
			}
		}
		if _, ok := ccHooks[name]; !ok {
			t.Errorf("%s: no handler hooks", name)
		}
	}
}
