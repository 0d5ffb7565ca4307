package module_test

import (
	"testing"

	"github.com/iasql/iasql/modules/module"
)

// TestReservedTag: AWS reserves tag keys starting with aws: in any case
// (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html#tag-restrictions).
func TestReservedTag(t *testing.T) {
	for key, want := range map[string]bool{
		"aws:cloudformation:stack-name": true, "AWS:x": true, "Aws:": true, "aWs:y": true,
		"aws": false, "awsome": false, "team:aws:x": false, "": false, module.TokenTag: false,
	} {
		if got := module.ReservedTag(key); got != want {
			t.Errorf("ReservedTag(%q) = %v, want %v", key, got, want)
		}
	}
}
