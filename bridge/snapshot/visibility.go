package snapshot

import (
	"fmt"
	"strings"
)

// Visibility is a pg_snapshot: which transactions a read saw.
type Visibility struct {
	xmin, xmax uint64
	inProgress map[uint64]bool
}

func ParseVisibility(s string) (Visibility, error) {
	v := Visibility{inProgress: map[uint64]bool{}}
	parts := strings.SplitN(s, ":", 3)
	if len(parts) != 3 {
		return v, fmt.Errorf("unexpected snapshot %q", s)
	}
	if _, err := fmt.Sscan(parts[0], &v.xmin); err != nil {
		return v, fmt.Errorf("snapshot %q: %w", s, err)
	}
	if _, err := fmt.Sscan(parts[1], &v.xmax); err != nil {
		return v, fmt.Errorf("snapshot %q: %w", s, err)
	}
	for _, x := range strings.Split(parts[2], ",") {
		if x == "" {
			continue
		}
		var id uint64
		if _, err := fmt.Sscan(x, &id); err != nil {
			return v, fmt.Errorf("snapshot %q: %w", s, err)
		}
		v.inProgress[id] = true
	}
	return v, nil
}

// Sees reports whether a committed transaction, by its 32-bit id (as
// logical decoding gives it), is visible to the snapshot.
func (v Visibility) Sees(xid32 uint32) bool {
	// Widen to 64 bits as the id nearest xmax (transaction ids compare
	// modulo 2^32 within half the space, as PostgreSQL's own do).
	full := uint64(int64(v.xmax) + int64(int32(xid32-uint32(v.xmax))))
	if full >= v.xmax {
		return false
	}
	return full < v.xmin || !v.inProgress[full]
}
