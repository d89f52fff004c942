// Package clienttest holds the tests of the Go client (module
// github.com/worktrack/worktrack/client) against the real server: the
// handler both APIs mount (package apitest) over SQLite and PostgreSQL, on
// a real listener. They live in the server's module so that the client's
// module requires nothing of the server's (docs/client.md).
package clienttest
