package emulator

import "strings"

// IsRead reports whether an operation, named as Calls names it
// ("service:Operation"), only reads: Describe*, List*, Get*, Head*.
func IsRead(op string) bool {
	_, name, _ := strings.Cut(op, ":")
	return IsPage(op) || strings.HasPrefix(name, "Get") || strings.HasPrefix(name, "Head")
}

// IsPage reports whether an operation lists resources a page at a time:
// Describe* and List*.
func IsPage(op string) bool {
	_, name, _ := strings.Cut(op, ":")
	return strings.HasPrefix(name, "Describe") || strings.HasPrefix(name, "List")
}
