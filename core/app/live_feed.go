package app

import (
	"context"
	"slices"
	"time"
)

// Run reads the log for the subscribers until ctx ends. With or without
// subscribers it positions the events that committed, woken by this
// process's commits and by the poll, so that every committed event is in
// the log within the poll's second whoever reads (and, on PostgreSQL, the
// other processes' feeds hear of it at once). Subscriptions end with their
// own contexts.
func (l *Live) Run(ctx context.Context) {
	local, stop := l.logged.Subscribe()
	defer stop()
	watch, err := l.d.Watch.WatchEvents(ctx)
	if err != nil {
		l.o.Logger.Warn("live feed: not watching other processes' events; polling", "error", err.Error())
	}
	poll := time.NewTicker(l.o.Poll)
	defer poll.Stop()
	// What a process that stopped left unpositioned, before any
	// subscriber takes the log's end.
	if _, err := l.d.Log.PositionEvents(ctx); err != nil && ctx.Err() == nil {
		l.o.Logger.Warn("live feed: positioning the log failed", "error", err.Error())
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-local:
		case _, ok := <-watch:
			if !ok {
				watch = nil
			}
		case <-poll.C:
		case <-l.kick:
		}
		if l.Subscriptions() == 0 {
			l.forget()
			if _, err := l.d.Log.PositionEvents(ctx); err != nil && ctx.Err() == nil {
				l.o.Logger.Warn("live feed: positioning the log failed", "error", err.Error())
			}
		} else if err := l.advance(ctx); err != nil && ctx.Err() == nil {
			l.o.Logger.Warn("live feed: reading the log failed; retrying", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(l.o.Pause):
		}
	}
}

// forget drops the window while nobody subscribes.
func (l *Live) forget() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.known, l.window = false, nil
}

// advance positions what committed, reads the new events into the window,
// and wakes the subscribers.
func (l *Live) advance(ctx context.Context) error {
	l.mu.Lock()
	known, head := l.known, l.base+int64(len(l.window))
	l.mu.Unlock()
	if !known {
		// Before positioning: what this run positions is read below.
		last, err := l.d.Log.LastPosition(ctx)
		if err != nil {
			return err
		}
		l.mu.Lock()
		l.known, l.base, l.window = true, last, nil
		l.mu.Unlock()
		head = last
	}
	if _, err := l.d.Log.PositionEvents(ctx); err != nil {
		return err
	}
	for {
		events, err := l.d.Log.ReadLog(ctx, head, page)
		if err != nil {
			return err
		}
		if len(events) == 0 {
			return nil
		}
		l.mu.Lock()
		for _, e := range events {
			if e.Seq != l.base+int64(len(l.window))+1 {
				// A gap cannot happen (positions are consecutive and given
				// in one transaction); if it did, start the window afresh
				// rather than serve it: subscribers read the database.
				l.base, l.window = e.Seq-1, nil
			}
			l.window = append(l.window, e)
		}
		// Trim in steps of a quarter window, not at every event.
		if over := len(l.window) - l.o.Window; over > l.o.Window/4 {
			l.base += int64(over)
			l.window = slices.Clone(l.window[over:])
		}
		close(l.changed)
		l.changed = make(chan struct{})
		head = l.base + int64(len(l.window))
		l.mu.Unlock()
		if len(events) < page {
			return nil
		}
	}
}

func wake(c chan<- struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
