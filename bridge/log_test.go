package bridge_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/modules/aws_s3"
	"github.com/iasql/iasql/modules/module"
)

// TestDebugLogSaysWhatACycleDid: at debug level the sidecar logs what
// each pass read (whole or by record), each action it planned, and what it
// executed.
func TestDebugLogSaysWhatACycleDid(t *testing.T) {
	t.Parallel()
	var buf testkit.Log
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := enginetest.New(t, srv, enginetest.Options{Modules: []module.Module{aws_s3.Module()}, Install: []string{"aws_s3"}, Logger: log})
	e.Exec(`CALL iasql_begin()`, `INSERT INTO bucket (name) VALUES ('logged')`)
	e.Commit()
	out := buf.String()
	for _, want := range []string{
		`"msg":"cycle read","cycle":`,
		`bucket by record (1 rows, 0 resources)`,
		`"msg":"cycle plans"`,
		`"action":"create","direction":"cloud","table":"bucket"`,
		`"msg":"cycle executed"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the debug log lacks %s", want)
		}
	}
}
