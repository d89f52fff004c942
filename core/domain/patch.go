package domain

// Field is one field of a merge patch (RFC 7396): absent leaves the stored
// value alone, Null clears a nullable field (and is a validation error for a
// required one), otherwise Value replaces it.
type Field[T any] struct {
	Present bool
	Null    bool
	Value   T
}

// Set returns a present, non-null field.
func Set[T any](v T) Field[T] { return Field[T]{Present: true, Value: v} }

// Null returns a present field whose value is null.
func Null[T any]() Field[T] { return Field[T]{Present: true, Null: true} }

// required returns the value of a patch field that may not be null.
func required[T any](param string, f Field[T]) (T, error) {
	if f.Null {
		var zero T
		return zero, Invalid(param, "%s must not be null", param)
	}
	return f.Value, nil
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
