package bridge

import (
	"testing"

	"github.com/iasql/iasql/bridge/snapshot"
)

// TestSnapshotVisibility: which 32-bit transaction ids a pg_snapshot sees,
// across an epoch boundary too.
func TestSnapshotVisibility(t *testing.T) {
	tests := []struct {
		snap string
		xid  uint32
		want bool
	}{
		{"100:105:", 99, true},          // before xmin: committed before the snapshot
		{"100:105:", 104, true},         // between, not in progress
		{"100:105:101,103", 101, false}, // in progress when the snapshot was taken
		{"100:105:101,103", 102, true},
		{"100:105:", 105, false}, // at xmax: started after
		{"100:105:", 200, false},
		{"4294967390:4294967400:4294967395", 4294967290 & 0xFFFFFFFF, true}, // epoch 0 id below an epoch-1 snapshot
		{"4294967390:4294967400:4294967395", 100, true},                     // 2^32+100 < xmin
		{"4294967390:4294967400:4294967395", 99, false},                     // 2^32+99 is in progress
		{"4294967390:4294967400:", 110, false},                              // 2^32+110 >= xmax
	}
	for _, tc := range tests {
		v, err := snapshot.ParseVisibility(tc.snap)
		if err != nil {
			t.Fatal(err)
		}
		if got := v.Sees(tc.xid); got != tc.want {
			t.Errorf("snapshot %s sees %d: %v, want %v", tc.snap, tc.xid, got, tc.want)
		}
	}
}
