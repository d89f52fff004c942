-- Idempotency keys of REST POSTs (contract section 10): the first request per
-- (API key, Idempotency-Key) and, once it succeeded, its response.

-- +goose Up
CREATE TABLE idempotency_keys (
    api_key_id      text COLLATE "C" NOT NULL REFERENCES api_keys (id),
    idempotency_key text COLLATE "C" NOT NULL,
    method          text NOT NULL,
    path            text NOT NULL,
    body_hash       text NOT NULL,
    done            boolean NOT NULL DEFAULT false,
    response_status integer,
    response_body   bytea,
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (api_key_id, idempotency_key)
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);
