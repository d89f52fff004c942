// Package wiring is the composition root: it builds the core services over
// the storage adapters, and the HTTP edge with both APIs mounted on it.
// `worktrack serve` and the API test harness (cmd/worktrack/apitest) both
// build their servers here, so that a new port or a new API is wired once.
package wiring

import (
	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/rest"
	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/webhook"
	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/ports"
	"github.com/worktrack/worktrack/graph/server"
)

// Core configures the core services.
type Core struct {
	// Clock is the core's clock; nil is the system clock.
	Clock ports.Clock
	// AllowPrivateWebhooks is WORKTRACK_WEBHOOK_ALLOW_PRIVATE: webhook URLs
	// on loopback and private addresses are accepted.
	AllowPrivateWebhooks bool
	// Live tunes the live feed of subscriptions.
	Live app.LiveOptions
}

// App wires the core services over db: every port the core needs is named
// here, once.
func App(db *store.DB, c Core) *app.App {
	return app.New(app.Deps{
		Tx:         db,
		Clock:      c.Clock,
		Workspaces: db.Workspaces(),
		Users:      db.Users(),
		Keys:       db.APIKeys(),
		Projects:   db.Projects(),
		Tasks:      db.Tasks(),
		Webhooks:   db.Webhooks(),
		EventLog:   db.Events(),
		Deliveries: db.Deliveries(),
		Payloads:   wire.Payloads{},
		Addresses:  webhook.AddressChecker{AllowPrivate: c.AllowPrivateWebhooks},
		EventWatch: db,
		Answers:    db.Idempotency(),
		Audit:      db.Audit(),
	}, app.Options{Live: c.Live})
}

// HTTP is the HTTP edge with both APIs mounted on it: REST under /v1 (with
// idempotent POSTs kept in db) and GraphQL at /graphql. It returns the
// GraphQL WebSockets, for the server to close on shutdown.
func HTTP(a *app.App, db *store.DB, edge httpedge.Options, graphql server.Options) (*httpedge.Edge, *server.Sockets) {
	e := httpedge.New(a.Auth, edge)
	rest.Mount(e, a, rest.Options{Idempotency: db.Idempotency()})
	sockets := server.Mount(e, a, graphql)
	return e, sockets
}
