package module_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/iasql/iasql/modules/module"
)

// TestPartialError: Partial is nil without failures; the error names every
// region in order, unwraps to their errors (codes included) and is found
// through wrapping.
func TestPartialError(t *testing.T) {
	if err := module.Partial(nil); err != nil {
		t.Errorf("Partial(nil) = %v, want nil", err)
	}
	denied, down := apiError("AuthFailure"), errors.New("connection refused")
	err := fmt.Errorf("read vpc: %w", module.Partial(map[string]error{"us-west-2": down, "eu-central-1": denied}))
	failed, ok := module.FailedRegions(err)
	if !ok || len(failed) != 2 || failed["eu-central-1"] != denied {
		t.Fatalf("FailedRegions(%v) = %v, %v", err, failed, ok)
	}
	if msg := err.Error(); !strings.Contains(msg, "eu-central-1: ") || strings.Index(msg, "eu-central-1") > strings.Index(msg, "us-west-2") {
		t.Errorf("message %q: want both regions, in order", msg)
	}
	if !errors.Is(err, down) || !module.IsCode(err, "AuthFailure") {
		t.Errorf("%v does not unwrap to its regions' errors", err)
	}
	if _, ok := module.FailedRegions(denied); ok {
		t.Errorf("a plain error is not partial")
	}
}
