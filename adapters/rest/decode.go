package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/core/domain"
)

// object is a decoded JSON object body, field by field, so that absent, null
// and present values can be told apart (merge patch) and each field's type
// checked with its own name as param.
type object map[string]json.RawMessage

// readObject reads the body as one JSON object with only the allowed fields.
// Not JSON, or JSON that is not an object (null and arrays included), is
// invalid_json; an unknown field is validation_failed with that field as param.
func readObject(c *gin.Context, allowed ...string) (object, error) {
	raw, err := io.ReadAll(c.Request.Body)
	if err != nil {
		if tooLarge(err) {
			return nil, domain.Errorf(domain.CodeRequestTooLarge, "The request body must be at most %d bytes.", MaxBodyBytes)
		}
		return nil, err
	}
	notObject := domain.Errorf(domain.CodeInvalidJSON, "The request body must be a JSON object.")
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, notObject
	}
	var obj object
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if err := dec.Decode(&obj); err != nil {
		return nil, domain.Errorf(domain.CodeInvalidJSON, "The request body is not valid JSON: %s.", jsonProblem(err))
	}
	if dec.More() || dec.InputOffset() != int64(len(trimmed)) {
		return nil, domain.Errorf(domain.CodeInvalidJSON, "The request body must hold exactly one JSON object.")
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

// str reads an optional string field as a merge-patch field.
func (o object) str(name string) (domain.Field[string], error) {
	raw, ok := o[name]
	if !ok {
		return domain.Field[string]{}, nil
	}
	if isNull(raw) {
		return domain.Null[string](), nil
	}
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return domain.Field[string]{}, domain.Invalid(name, "Must be a string.")
	}
	return domain.Set(v), nil
}

// time reads an optional RFC 3339 date-time field.
func (o object) time(name string) (domain.Field[time.Time], error) {
	s, err := o.str(name)
	if err != nil || !s.Present || s.Null {
		return domain.Field[time.Time]{Present: s.Present, Null: s.Null}, err
	}
	t, perr := time.Parse(time.RFC3339Nano, s.Value)
	if perr != nil {
		return domain.Field[time.Time]{}, domain.Invalid(name, "Must be an RFC 3339 date-time, e.g. 2026-01-02T15:04:05Z.")
	}
	return domain.Set(t), nil
}

// bool reads an optional boolean field.
func (o object) bool(name string) (domain.Field[bool], error) {
	raw, ok := o[name]
	if !ok {
		return domain.Field[bool]{}, nil
	}
	if isNull(raw) {
		return domain.Null[bool](), nil
	}
	var v bool
	if err := json.Unmarshal(raw, &v); err != nil {
		return domain.Field[bool]{}, domain.Invalid(name, "Must be a boolean.")
	}
	return domain.Set(v), nil
}

// strings reads an optional array-of-strings field.
func (o object) strings(name string) (domain.Field[[]string], error) {
	raw, ok := o[name]
	if !ok {
		return domain.Field[[]string]{}, nil
	}
	if isNull(raw) {
		return domain.Null[[]string](), nil
	}
	var v []string
	if err := json.Unmarshal(raw, &v); err != nil {
		return domain.Field[[]string]{}, domain.Invalid(name, "Must be an array of strings.")
	}
	return domain.Set(v), nil
}

// pageRequest reads limit and cursor from the query string. It only turns
// the limit's text into an int; its range and default are the domain's.
func pageRequest(c *gin.Context) (domain.PageRequest, error) {
	req := domain.PageRequest{Cursor: c.Query("cursor")}
	if v, ok := c.GetQuery("limit"); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			return req, domain.InvalidLimit()
		}
		req.Limit = domain.Set(n)
	}
	return req, nil
}
