package domain

// Field is one field of a request body, unvalidated, as either API carries
// it: absent, null, or a value. Creations and merge patches (RFC 7396) take
// the same fields, so that every rule about a field runs once, here, for
// both. In a patch, absent leaves the stored value alone, Null clears a
// nullable field (and is a validation error for a required one), otherwise
// Value replaces it.
type Field[T any] struct {
	Present bool
	Null    bool
	Value   T
}

// Set returns a present, non-null field.
func Set[T any](v T) Field[T] { return Field[T]{Present: true, Value: v} }

// Null returns a present field whose value is null.
func Null[T any]() Field[T] { return Field[T]{Present: true, Null: true} }

// Get returns the value of a present, non-null field.
func (f Field[T]) Get() (T, bool) { return f.Value, f.Present && !f.Null }

// Ptr is the value of a present, non-null field, or nil.
func (f Field[T]) Ptr() *T {
	if v, ok := f.Get(); ok {
		return &v
	}
	return nil
}

// required returns the value of a patch field that may not be null.
func required[T any](param string, f Field[T]) (T, error) {
	if f.Null {
		var zero T
		return zero, Invalid(param, "Must not be null.")
	}
	return f.Value, nil
}

// mandatory returns the value of a creation field that must be given.
func mandatory[T any](param string, f Field[T]) (T, error) {
	if !f.Present {
		var zero T
		return zero, Invalid(param, "Is required.")
	}
	return required(param, f)
}

// Change records one field an update changed, with its value before the
// change. Field is the attribute's public (snake_case) name; webhooks publish
// these as previous_attributes.
type Change struct {
	Field string
	Old   any
}

// Changes is the ordered list of what an update changed; empty means no-op.
type Changes []Change

// Previous returns the changes as a map from field to old value.
func (c Changes) Previous() map[string]any {
	m := make(map[string]any, len(c))
	for _, ch := range c {
		m[ch.Field] = ch.Old
	}
	return m
}
