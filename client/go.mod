// The Go client is a module of its own, so that a program that uses it
// requires the client's few modules and not the server's
// (docs/client.md#installing). Its go line is what its code needs.
module github.com/worktrack/worktrack/client

go 1.23

require (
	github.com/oapi-codegen/nullable v1.2.0
	github.com/standard-webhooks/standard-webhooks/libraries v0.0.1
)
