package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/worktrack/worktrack/core/ports"
)

var (
	_ ports.DeliveryWatcher = (*DB)(nil)
	_ ports.EventWatcher    = (*DB)(nil)
)

// EventPollInterval is how often WatchEvents wakes the live feed on SQLite,
// which has no notifications: events other processes log reach subscribers
// within it.
const EventPollInterval = 250 * time.Millisecond

// WatchEvents wakes the live feed when a process positions new events. On
// PostgreSQL it LISTENs on the channel the sequencer notifies; on SQLite it
// ticks every EventPollInterval.
func (db *DB) WatchEvents(ctx context.Context) (<-chan struct{}, error) {
	if db.dialect != DialectPostgres {
		out := make(chan struct{}, 1)
		go func() {
			defer close(out)
			t := time.NewTicker(EventPollInterval)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					wake(out)
				}
			}
		}()
		return out, nil
	}
	return db.watch(ctx, eventChannelExpr, "")
}

// WatchDeliveries wakes a dispatcher when another process commits new or
// rescheduled deliveries. On PostgreSQL it LISTENs on the channel that
// CreateDeliveries and RescheduleDelivery notify, over a connection of its
// own (a pooled one could not wait), reconnecting after a failure and
// waking the dispatcher then, since notifications sent while it was away are
// lost. It passes over the notifications of its own process's commits
// (their payload is db.origin, shared by the process's handles through
// WithOrigin): the core wakes its dispatcher in process after each of
// them. SQLite has no notifications: the channel only closes, and the
// dispatcher's polling finds other processes' work.
func (db *DB) WatchDeliveries(ctx context.Context) (<-chan struct{}, error) {
	out := make(chan struct{}, 1)
	if db.dialect != DialectPostgres {
		go func() {
			<-ctx.Done()
			close(out)
		}()
		return out, nil
	}
	return db.watch(ctx, channelExpr, db.origin)
}

// watch LISTENs on the channel that channel (an SQL expression) names, over
// a connection of its own, reconnecting after a failure and waking the
// watcher then, since notifications sent while it was away are lost. A
// notification whose payload is own (when not empty) wakes nobody.
func (db *DB) watch(ctx context.Context, channel, own string) (<-chan struct{}, error) {
	out := make(chan struct{}, 1)
	conn, err := db.listen(ctx, channel)
	if err != nil {
		return nil, err
	}
	go func() {
		defer close(out)
		for {
			n, err := conn.WaitForNotification(ctx)
			if err == nil {
				if own == "" || n.Payload != own {
					wake(out)
				}
				continue
			}
			closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = conn.Close(closeCtx)
			cancel()
			if conn = db.relisten(ctx, channel); conn == nil {
				return
			}
			wake(out)
		}
	}()
	return out, nil
}

// relisten reconnects every second until it succeeds or ctx ends (nil).
func (db *DB) relisten(ctx context.Context, channel string) *pgx.Conn {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if conn, err := db.listen(ctx, channel); err == nil {
			return conn
		}
	}
}

// listen opens a connection with the pool's settings (search_path included)
// and LISTENs on the channel that channelSQL names.
func (db *DB) listen(ctx context.Context, channelSQL string) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, db.url)
	if err != nil {
		return nil, unavailable(fmt.Errorf("store: listen: %w", err))
	}
	var channel string
	if err := conn.QueryRow(ctx, "SELECT "+channelSQL).Scan(&channel); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("store: listen: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("store: listen on %s: %w", channel, err)
	}
	return conn, nil
}

func wake(c chan<- struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
