-- Idempotency keys of REST POSTs (contract section 10): the first request per
-- (API key, Idempotency-Key) and, once it succeeded, its response.

-- +goose Up
CREATE TABLE idempotency_keys (
    api_key_id      TEXT NOT NULL REFERENCES api_keys (id),
    idempotency_key TEXT NOT NULL,
    method          TEXT NOT NULL,
    path            TEXT NOT NULL,
    body_hash       TEXT NOT NULL,
    done            INTEGER NOT NULL DEFAULT 0,
    response_status INTEGER,
    response_body   BLOB,
    created_at      TEXT NOT NULL,
    PRIMARY KEY (api_key_id, idempotency_key)
) STRICT;
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);
