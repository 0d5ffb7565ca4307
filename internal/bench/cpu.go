package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// cpuTimes is the machine's CPU time from /proc/stat, in clock ticks.
type cpuTimes struct{ busy, total uint64 }

// clockTicks is USER_HZ, which Linux fixes at 100 for /proc/stat.
const clockTicks = 100

// readCPU reads the aggregate CPU line of /proc/stat; ok is false where
// there is none (not Linux), and the CPU figures are then left out.
func readCPU() (cpuTimes, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return cpuTimes{}, false
	}
	var t cpuTimes
	for i, s := range f[1:] {
		if i >= 8 { // guest time is counted in user already
			break
		}
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return cpuTimes{}, false
		}
		t.total += v
		if i != 3 && i != 4 { // idle, iowait
			t.busy += v
		}
	}
	return t, true
}

// cpuUse returns the CPU used between a and b for n transactions: the
// machine's busy share and the CPU time per transaction in microseconds
// (all processes: pgbench, the server, the sidecar).
func cpuUse(a, b cpuTimes, n int64) (busyShare, perTx float64) {
	busy, total := b.busy-a.busy, b.total-a.total
	if total == 0 || n == 0 {
		return 0, 0
	}
	return float64(busy) / float64(total), float64(busy) * 1e6 / clockTicks / float64(n)
}

// procTicks returns the CPU time (user + system, in clock ticks) process
// pid has used, from /proc/PID/stat.
func procTicks(pid int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name, in parentheses, may hold spaces: fields count from
	// after its closing parenthesis, where field 3 (state) comes first.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return utime + stime, true
}

// procSet is a named set of processes whose CPU time is followed.
type procSet struct {
	names []string
	pids  []int
	start []uint64
}

func (p *procSet) add(name string, pid int) {
	t, ok := procTicks(pid)
	if !ok {
		return
	}
	p.names, p.pids, p.start = append(p.names, name), append(p.pids, pid), append(p.start, t)
}

// used returns each process's CPU time since add, in clock ticks.
func (p *procSet) used() (names []string, ticks []uint64) {
	for i, pid := range p.pids {
		t, ok := procTicks(pid)
		if !ok {
			t = p.start[i]
		}
		names, ticks = append(names, p.names[i]), append(ticks, t-p.start[i])
	}
	return names, ticks
}

// perTx describes each process's CPU time since add, per transaction.
func (p *procSet) perTx(n int64) string {
	if len(p.pids) == 0 || n == 0 {
		return "n/a"
	}
	var parts []string
	for i, pid := range p.pids {
		t, ok := procTicks(pid)
		if !ok {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.0f µs", p.names[i], float64(t-p.start[i])*1e6/clockTicks/float64(n)))
	}
	return strings.Join(parts, ", ")
}
