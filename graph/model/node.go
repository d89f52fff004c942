package model

// Node is the Go side of the GraphQL Node interface. The implementors bind to
// core/domain types (and Task to this package's wrapper of one), which carry
// no GraphQL methods (the domain knows nothing of GraphQL), so the interface
// is open; Query.node returns only *domain.User, *domain.Project, *Task,
// *domain.Webhook, *domain.LoggedEvent and *domain.APIKey values.
type Node any
