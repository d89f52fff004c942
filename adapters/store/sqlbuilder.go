package store

import (
	"strings"
)

// sqlBuilder writes a statement with ? placeholders. Each fragment is
// written with its own arguments, so that the placeholders and the
// arguments cannot drift apart: the store writes out every statement it
// does not leave to GORM this way (the task lists and counts, the inserts of
// tasks, events and deliveries, the claims and outcomes of deliveries).
// Only what is ours is formatted into the text (column names, slot
// numbers); every value is an argument.
type sqlBuilder struct {
	dialect string
	sql     strings.Builder
	args    []any
}

// write appends s and its arguments, one for each ? in s.
func (q *sqlBuilder) write(s string, args ...any) {
	q.sql.WriteString(s)
	q.args = append(q.args, args...)
}

// writeIn writes "col = ?" for one value and "col IN (?, …)" for more.
func writeIn[T ~string](q *sqlBuilder, col string, vals []T) {
	switch len(vals) {
	case 0: // the services never ask; an empty IN () is a syntax error on PostgreSQL
		q.write("1 = 0")
	case 1:
		q.write(col+" = ?", string(vals[0]))
	default:
		writeList(q, col+" IN (", vals)
	}
}

// writeNotIn writes "col NOT IN (?, …)"; nothing is excluded by no value.
func writeNotIn[T ~string](q *sqlBuilder, col string, vals []T) {
	if len(vals) == 0 {
		q.write("TRUE")
		return
	}
	writeList(q, col+" NOT IN (", vals)
}

// writeList writes open, a placeholder for each of vals, and ")".
func writeList[T ~string](q *sqlBuilder, open string, vals []T) {
	q.write(open)
	for i, v := range vals {
		if i > 0 {
			q.write(", ")
		}
		q.write("?", string(v))
	}
	q.write(")")
}

// rows writes n rows of a VALUES list, one placeholder per column type
// given, and row(i)'s arguments for each. PostgreSQL types a VALUES
// list's columns by its first row, and would take an untyped parameter
// there as text, so the first row's placeholders carry casts; SQLite takes
// values as they are.
func (q *sqlBuilder) rows(n int, types []string, row func(i int) []any) {
	for i := range n {
		if i > 0 {
			q.write(", ")
		}
		q.write("(")
		for j, t := range types {
			if j > 0 {
				q.write(", ")
			}
			if i == 0 && q.dialect == DialectPostgres {
				q.write("CAST(? AS " + t + ")")
			} else {
				q.write("?")
			}
		}
		q.write(")", row(i)...)
	}
}

// values writes n rows of an INSERT's VALUES list, each the row template
// (its placeholders, in the columns' order) with args(i)'s arguments.
func (q *sqlBuilder) values(n int, row string, args func(i int) []any) {
	for i := range n {
		if i > 0 {
			q.write(", ")
		}
		q.write(row, args(i)...)
	}
}
