package app

import (
	"context"

	"github.com/worktrack/worktrack/core/ports"
)

// The answers of keyed requests (ports.KeyedRequest) commit in the
// transaction of the change they make: the one rule that makes a retried
// request run once or replay, never run twice
// (docs/api.md#idempotent-requests). Every use case a keyed POST calls
// claims the key first in its unit of work (claimKey) and commits its
// result last (commitAnswer).

// claimKey holds the key of ctx's keyed request for ctx's transaction,
// before the change: a request with the same key that committed first (on
// another process) makes it idempotency_key_in_use, and one still running
// there makes it wait. Without a keyed request it does nothing.
func claimKey(ctx context.Context, store ports.AnswerStore) error {
	if !keyed(ctx) {
		return nil
	}
	return store.ClaimKey(ctx, ports.KeyedRequestFrom(ctx))
}

// commitAnswer records, inside ctx's transaction, the answer of the keyed
// request ctx carries, rendered from result. Without a keyed request, or
// when the edge keeps no answer for it, it does nothing.
func commitAnswer(ctx context.Context, store ports.AnswerStore, result any) error {
	if !keyed(ctx) {
		return nil
	}
	k := ports.KeyedRequestFrom(ctx)
	ans, err := k.Render(result)
	if err != nil {
		return err
	}
	return store.CommitAnswer(ctx, k, ans)
}

// keyed reports whether ctx's request commits an answer: a use case that
// writes outside a transaction when it can (a single create on PostgreSQL)
// opens one for a keyed request, to hold the answer with the change.
func keyed(ctx context.Context) bool {
	k := ports.KeyedRequestFrom(ctx)
	return k != nil && k.Render != nil
}
