package store

// ClaimSQL exposes the claim statement to the plan checks of store_test.
const ClaimSQL = claimSQL
