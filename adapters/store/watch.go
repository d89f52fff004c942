package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/worktrack/worktrack/core/ports"
)

var _ ports.DeliveryWatcher = (*DB)(nil)

// WatchDeliveries wakes a dispatcher when another process commits new or
// rescheduled deliveries. On PostgreSQL it LISTENs on the channel that
// CreateDeliveries and RescheduleDelivery notify, over a connection of its
// own (a pooled one could not wait), reconnecting after a failure and
// waking the dispatcher then, since notifications sent while it was away are
// lost. SQLite has no notifications: the channel only closes, and the
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
	conn, err := db.listen(ctx)
	if err != nil {
		return nil, err
	}
	go func() {
		defer close(out)
		for {
			_, err := conn.WaitForNotification(ctx)
			if err == nil {
				wake(out)
				continue
			}
			closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = conn.Close(closeCtx)
			cancel()
			if conn = db.relisten(ctx); conn == nil {
				return
			}
			wake(out)
		}
	}()
	return out, nil
}

// relisten reconnects every second until it succeeds or ctx ends (nil).
func (db *DB) relisten(ctx context.Context) *pgx.Conn {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if conn, err := db.listen(ctx); err == nil {
			return conn
		}
	}
}

// listen opens a connection with the pool's settings (search_path included)
// and LISTENs on this database's delivery channel.
func (db *DB) listen(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, db.url)
	if err != nil {
		return nil, unavailable(fmt.Errorf("store: listen for deliveries: %w", err))
	}
	var channel string
	if err := conn.QueryRow(ctx, "SELECT "+channelExpr).Scan(&channel); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("store: listen for deliveries: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("store: listen for deliveries: %w", err)
	}
	return conn, nil
}

func wake(c chan<- struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
