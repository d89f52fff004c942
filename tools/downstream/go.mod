// A program outside this repository's module, as a downstream team writes
// one: it requires github.com/worktrack/worktrack (here through a replace
// directive to the checkout) and uses only the client's public surface.
// client/worktracktest's TestDownstreamProgram runs it against a Worktrack
// it starts in containers.
module example.com/worktrack-downstream

go 1.26.8

require (
	github.com/oapi-codegen/nullable v1.2.0
	github.com/worktrack/worktrack v0.0.0
)

require (
	github.com/apapsch/go-jsonmerge/v2 v2.0.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/oapi-codegen/runtime v1.9.0 // indirect
	github.com/standard-webhooks/standard-webhooks/libraries v0.0.1 // indirect
)

replace github.com/worktrack/worktrack => ../..
