package store

import "github.com/worktrack/worktrack/core/ports"

// PGClaim exposes PostgreSQL's claim statement, with its arguments, to the
// plan checks of store_test.
func PGClaim(r ports.ClaimRequest) (string, []any) { return pgClaim(r) }
