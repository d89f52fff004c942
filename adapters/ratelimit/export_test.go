package ratelimit

// KeysHeld returns how many keys m holds, ended windows not yet swept
// included, so tests can check that memory stays bounded.
func KeysHeld(m *Memory) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.windows)
}
