package ccmapper

// Partial exposes partial to the tests.
func (m *Mapper) Partial(model map[string]any) bool { return m.partial(model) }
