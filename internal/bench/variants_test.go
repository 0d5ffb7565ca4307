package main

import (
	"math"
	"testing"
)

func TestPairedRatio(t *testing.T) {
	for _, tc := range []struct {
		name     string
		a, b     []float64
		mean, se float64
	}{
		{"empty", nil, nil, 0, 0},
		{"one round", []float64{90}, []float64{100}, 0.9, 0},
		{"same ratio every round, whatever the drift", []float64{90, 45, 180}, []float64{100, 50, 200}, 0.9, 0},
		{"spread", []float64{80, 100}, []float64{100, 100}, 0.9, 0.1},
		{"unequal lengths use the shorter", []float64{50, 60, 70}, []float64{100, 100}, 0.55, 0.05},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mean, se := pairedRatio(tc.a, tc.b)
			if math.Abs(mean-tc.mean) > 1e-9 || math.Abs(se-tc.se) > 1e-9 {
				t.Errorf("pairedRatio(%v, %v) = %v ± %v, want %v ± %v", tc.a, tc.b, mean, se, tc.mean, tc.se)
			}
		})
	}
}
