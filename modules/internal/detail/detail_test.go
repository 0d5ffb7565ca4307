package detail_test

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/iasql/iasql/modules/internal/detail"
)

func TestDue(t *testing.T) {
	now := time.Now()
	read := map[string]time.Time{
		"fresh": now, "old": now.Add(-time.Hour), "older": now.Add(-2 * time.Hour), "oldest": now.Add(-3 * time.Hour),
		"tie-b": now.Add(-time.Hour), "tie-a": now.Add(-time.Hour),
	}
	cases := []struct {
		name   string
		budget int
		want   []string
	}{
		{"no budget: every stale detail", 0, []string{"old", "older", "oldest", "tie-a", "tie-b"}},
		{"the oldest first", 2, []string{"older", "oldest"}},
		{"ties by name", 4, []string{"old", "older", "oldest", "tie-a"}},
		{"a budget above the stale count", 100, []string{"old", "older", "oldest", "tie-a", "tie-b"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := slices.Sorted(maps.Keys(detail.Due(read, 30*time.Minute, c.budget)))
			if !slices.Equal(got, c.want) {
				t.Errorf("due %v, want %v", got, c.want)
			}
		})
	}
}
