package bridge_test

import (
	"testing"
)

// TestCommitReadsWhatItActsOn: a commit reads fresh the resources it acts
// on and reuses recent reads of the rest. Beside ten unchanged buckets, a
// commit that creates one bucket reads the details (versioning, objects)
// of that bucket only; iasql_refresh reads them all.
func TestCommitReadsWhatItActsOn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Exec(`INSERT INTO bucket (name) SELECT 'scoped-' || g FROM generate_series(1, 10) g`)
	e.Commit()
	e.Emu.Reset()
	e.Exec(`INSERT INTO bucket (name) VALUES ('scoped-new')`)
	e.Commit()
	calls := e.Emu.Calls()
	if n := calls["s3:GetBucketVersioning"]; n == 0 || n > 3 {
		t.Errorf("the commit read versioning %d times; want the new bucket's only (1 to 3 reads)", n)
	}
	if n := calls["s3:ListObjectsV2"]; n > 3 {
		t.Errorf("the commit listed objects %d times; want the new bucket's only (at most 3)", n)
	}
	if !e.cloudBuckets()["scoped-new"] {
		t.Fatal("the new bucket was not created")
	}
	e.Emu.Reset()
	e.Refresh()
	if n := e.Emu.Calls()["s3:GetBucketVersioning"]; n < 11 {
		t.Errorf("iasql_refresh read versioning %d times; want every bucket's (11)", n)
	}
}
