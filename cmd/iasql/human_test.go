package main

import (
	"testing"
	"time"
)

func TestHuman(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{1234567 * time.Nanosecond, "1ms"},
		{850 * time.Millisecond, "850ms"},
		{12340 * time.Millisecond, "12.3s"},
		{4*time.Minute + 10*time.Second + 300*time.Millisecond, "4m10s"},
		{5 * time.Minute, "5m"},
		{2*time.Hour + 5*time.Minute + 20*time.Second, "2h5m"},
		{3*24*time.Hour + 4*time.Hour + 30*time.Minute, "3d4h"},
	} {
		if got := human(tc.d); got != tc.want {
			t.Errorf("human(%s) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
