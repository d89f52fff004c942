package store

import (
	"context"
	"testing"
	"time"
)

// Commits that arrive while a notification is being sent ask for one more,
// however many they are; a commit after the last send gets its own.
func TestAnnouncerCoalescesABurstIntoOneMoreNotification(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	a := &announcer{send: func(context.Context) error {
		started <- struct{}{}
		<-release
		return nil
	}}

	sent := func(what string) {
		t.Helper()
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatalf("no notification %s", what)
		}
	}
	a.announce()
	sent("for the first commit")
	for range 50 {
		a.announce()
	}
	release <- struct{}{}
	sent("for the commits made while the first was sent") // one, not 50
	release <- struct{}{}
	idle := func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return !a.running
	}
	for !idle() {
		select {
		case <-started:
			t.Fatal("a third notification for one burst")
		case <-time.After(time.Millisecond):
		}
	}

	a.announce()
	sent("for a commit after the burst")
	release <- struct{}{}
}

// A stream of commits gets at most one notification per gap: the one asked
// for while the last was sent goes out a gap after it, not at once.
func TestAnnouncerSpacesNotificationsByTheGap(t *testing.T) {
	const gap = 50 * time.Millisecond
	sends := make(chan time.Time, 10)
	release := make(chan struct{})
	a := &announcer{gap: gap, send: func(context.Context) error {
		sends <- time.Now()
		<-release
		return nil
	}}
	a.announce()
	<-sends
	for range 10 {
		a.announce() // while the first is being sent
	}
	ended := time.Now()
	release <- struct{}{}
	second := <-sends
	if waited := second.Sub(ended); waited < gap {
		t.Fatalf("the second notification went out %v after the first, want at least %v", waited, gap)
	}
	release <- struct{}{}
	for {
		a.mu.Lock()
		idle := !a.running
		a.mu.Unlock()
		if idle {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if n := len(sends); n != 0 {
		t.Fatalf("%d more notifications for one burst", n)
	}
}
