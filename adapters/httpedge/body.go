package httpedge

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/domain"
)

// errTooLarge is the answer to a body past MaxBodyBytes.
func errTooLarge() *domain.Error {
	return domain.Errorf(wire.CodeRequestTooLarge, "The request body must be at most %d bytes.", MaxBodyBytes)
}

// ReadBody reads the whole request body. Behind an API's chain the body is
// limited to MaxBodyBytes: reading past it is request_too_large. A body that
// cannot be read although the client is still there (malformed chunked
// encoding, a chunked body cut short) is the client's fault: invalid_json,
// like any body that is not one JSON value, never a 500. A client that has
// gone altogether gets the same answer, which it will not read; what the
// edge logs for it is decided from the request's context, not from here.
func ReadBody(c *gin.Context) ([]byte, error) {
	raw, err := io.ReadAll(c.Request.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errTooLarge()
		}
		if ClientGone(c) || bodyStalled(err) {
			// The client went away, or stopped sending, before its body
			// ended: it is no server fault, and nobody may be left to answer.
			c.Set(clientClosedKey, true)
			return nil, errClientClosed
		}
		return nil, domain.Errorf(wire.CodeInvalidJSON, "The request body could not be read: it is not well-formed HTTP (e.g. a malformed chunked encoding).")
	}
	return raw, nil
}

// Object is a decoded JSON object body, field by field, so that absent, null
// and present values can be told apart (merge patch) and each field's type
// checked with its own name as param.
type Object map[string]json.RawMessage

// ParseObject decodes raw as exactly one JSON object. Not JSON (invalid UTF-8
// included), or JSON that is not an object (null and arrays included), is
// invalid_json.
func ParseObject(raw []byte) (Object, error) {
	var obj Object
	if err := DecodeObject(raw, &obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// DecodeObject decodes raw, which must be exactly one JSON object, into v, a
// pointer to a struct or a map, in one pass; numbers in untyped places
// (any) become json.Number, so that integers keep their precision. Not JSON
// (invalid UTF-8 included), JSON that is not an object (null and arrays
// included) or more than one value is invalid_json. A member whose JSON type
// does not fit v's field (a number for a string, say) is validation_failed,
// with the member's name as param.
func DecodeObject(raw []byte, v any) error {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return domain.Errorf(wire.CodeInvalidJSON, "The request body must be a JSON object.")
	}
	// JSON text is UTF-8 (RFC 8259); Go's decoder would quietly turn invalid
	// bytes into U+FFFD and store something the client never sent.
	if !utf8.Valid(trimmed) {
		return domain.Errorf(wire.CodeInvalidJSON, "The request body is not valid JSON: it is not UTF-8.")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return domain.Invalid(te.Field, "Must be %s.", jsonKind(te.Type))
		}
		return domain.Errorf(wire.CodeInvalidJSON, "The request body is not valid JSON: %s.", jsonProblem(err))
	}
	if dec.More() || dec.InputOffset() != int64(len(trimmed)) {
		return domain.Errorf(wire.CodeInvalidJSON, "The request body must hold exactly one JSON object.")
	}
	return nil
}

// jsonKind names the JSON type that decodes into t, for messages. The
// bodies decoded with DecodeObject have string and object members.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "of another JSON type"
}

// ReadObject reads the body as one JSON object with only the allowed fields
// (ReadBody, then ParseObject); an unknown field is validation_failed with
// that field as param.
func ReadObject(c *gin.Context, allowed ...string) (Object, error) {
	raw, err := ReadBody(c)
	if err != nil {
		return nil, err
	}
	return ParseAllowed(raw, allowed)
}

// ReadOptionalObject is ReadObject for a route whose body may be left out:
// an empty (or all-whitespace) body is an empty object.
func ReadOptionalObject(c *gin.Context, allowed ...string) (Object, error) {
	raw, err := ReadBody(c)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return Object{}, nil
	}
	return ParseAllowed(raw, allowed)
}

// ParseAllowed is ParseObject with only the allowed fields: an unknown
// field is validation_failed with that field as param. (ReadObject reads a
// body with it; a bulk request parses each of its items with it.)
func ParseAllowed(raw []byte, allowed []string) (Object, error) {
	obj, err := ParseObject(raw)
	if err != nil {
		return nil, err
	}
	var unknown []string
	for k := range obj {
		if !contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, domain.Invalid(unknown[0], "Unknown field '%s'. Allowed fields: %s.", unknown[0], strings.Join(allowed, ", "))
	}
	return obj, nil
}

func jsonProblem(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return se.Error() + " at offset " + strconv.FormatInt(se.Offset, 10)
	}
	return "unexpected end of input"
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// Has reports whether the body holds the field, null included.
func (o Object) Has(name string) bool {
	_, ok := o[name]
	return ok
}

// Field reads an optional field of type T as a merge-patch field: absent,
// null, or set. A value that is not a T is validation_failed with the field
// as param, and a message saying the value must be want ("a string"); the
// message does not name the field, so each API names its param its own way.
func Field[T any](o Object, name, want string) (domain.Field[T], error) {
	raw, ok := o[name]
	if !ok {
		return domain.Field[T]{}, nil
	}
	if isNull(raw) {
		return domain.Null[T](), nil
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return domain.Field[T]{}, domain.Invalid(name, "Must be %s.", want)
	}
	return domain.Set(v), nil
}

// Str reads an optional string field.
func (o Object) Str(name string) (domain.Field[string], error) {
	return Field[string](o, name, "a string")
}

// Bool reads an optional boolean field.
func (o Object) Bool(name string) (domain.Field[bool], error) {
	return Field[bool](o, name, "a boolean")
}

// Strings reads an optional array-of-strings field.
func (o Object) Strings(name string) (domain.Field[[]string], error) {
	return Field[[]string](o, name, "an array of strings")
}

// Int reads an optional integer field (a JSON number with no fraction or
// exponent that fits in 64 bits).
func (o Object) Int(name string) (domain.Field[int64], error) {
	return Field[int64](o, name, "an integer")
}

// Time reads an optional RFC 3339 date-time field.
func (o Object) Time(name string) (domain.Field[time.Time], error) {
	s, err := o.Str(name)
	if err != nil || !s.Present || s.Null {
		return domain.Field[time.Time]{Present: s.Present, Null: s.Null}, err
	}
	t, perr := time.Parse(time.RFC3339Nano, s.Value)
	if perr != nil {
		return domain.Field[time.Time]{}, domain.Invalid(name, "Must be an RFC 3339 date-time, e.g. 2026-01-02T15:04:05Z.")
	}
	return domain.Set(t), nil
}

// bodyStalled reports a body that stopped arriving until the server's read
// deadline: the client stopped sending, which is a client gone (499), unlike
// a malformed or truncated body from a client still waiting for its answer
// (400). A client whose connection closed is seen by ClientGone.
func bodyStalled(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
