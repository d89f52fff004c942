package storetest

import (
	"sync"

	"gorm.io/gorm"

	"github.com/worktrack/worktrack/adapters/store"
)

// Counter records the SQL statements run on one store.DB, from any
// goroutine, transactions included.
type Counter struct {
	mu    sync.Mutex
	stmts []string
}

// Reset forgets what was counted so far.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stmts = nil
}

// N is the number of statements run since the last Reset.
func (c *Counter) N() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.stmts)
}

// Statements are the statements run since the last Reset, in order, with
// placeholders rather than values.
func (c *Counter) Statements() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.stmts...)
}

func (c *Counter) add(sql string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stmts = append(c.stmts, sql)
}

// hub fans the statements of one gorm.DB out to its counters. GORM callbacks
// belong to the gorm.DB (shared by all its sessions and transactions), so
// they are registered once per DB, as a plugin that lives as long as the DB,
// and see only that DB.
type hub struct {
	mu       sync.RWMutex
	counters []*Counter
}

const hubName = "storetest:count"

// Name implements gorm.Plugin.
func (h *hub) Name() string { return hubName }

// Initialize implements gorm.Plugin.
func (h *hub) Initialize(g *gorm.DB) error {
	cb := g.Callback()
	for _, err := range []error{
		cb.Create().After("gorm:create").Register(hubName, h.record),
		cb.Query().After("gorm:query").Register(hubName, h.record),
		cb.Update().After("gorm:update").Register(hubName, h.record),
		cb.Delete().After("gorm:delete").Register(hubName, h.record),
		cb.Row().After("gorm:row").Register(hubName, h.record),
		cb.Raw().After("gorm:raw").Register(hubName, h.record),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

func (h *hub) record(tx *gorm.DB) {
	if tx.DryRun || tx.Statement.SQL.Len() == 0 {
		return
	}
	h.recordSQL(tx.Statement.SQL.String())
}

// recordSQL counts a statement, also one the store ran without GORM.
func (h *hub) recordSQL(sql string) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, c := range h.counters {
		c.add(sql)
	}
}

// hubsMu guards looking up and installing the plugin.
var hubsMu sync.Mutex

// CountStatements starts counting the statements run through db (its
// repositories, its transactions, and db.Gorm()); migrations and other raw
// database/sql use are not seen, except the store's own reads that bypass
// GORM (store.DB.ObserveRawReads). Call it before db is used concurrently:
// registering GORM callbacks is not safe alongside running queries.
func CountStatements(db *store.DB) *Counter {
	g := db.Gorm()
	hubsMu.Lock()
	h, ok := g.Config.Plugins[hubName].(*hub)
	if !ok {
		h = &hub{}
		if err := g.Use(h); err != nil {
			hubsMu.Unlock()
			panic("storetest: register statement counter: " + err.Error())
		}
		db.ObserveRawReads(h.recordSQL)
	}
	hubsMu.Unlock()
	c := &Counter{}
	h.mu.Lock()
	h.counters = append(h.counters, c)
	h.mu.Unlock()
	return c
}
