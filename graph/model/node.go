package model

// Node is the Go side of the GraphQL Node interface. The implementors bind to
// core/domain types, which carry no GraphQL methods (the domain knows nothing
// of GraphQL), so the interface is open; Query.node returns only
// domain.User, domain.Project, domain.Task and domain.Webhook values (or
// pointers to them).
type Node any
