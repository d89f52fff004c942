package server

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"

	"github.com/coder/websocket"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/graph"
)

// The protocol rules a socket enforces on every message of the client
// before gqlgen reads it (socket.NextReader): what graphql-transport-ws
// allows at each point, the ids of running operations, and the rate limit
// of subscribes (docs/graphql.md#live-updates-subscriptions).
type admission int

const (
	admitted admission = iota // gqlgen reads it
	answered                  // answered here; gqlgen never sees it
	refused                   // the socket is closing
)

// clientMessage is a message of the client, of either subprotocol.
type clientMessage struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Payload json.RawMessage `json:"payload"`
}

// objectOrNone reports whether a message's payload is absent, null or a
// JSON object, as the protocol wants every payload but subscribe's.
func objectOrNone(p json.RawMessage) bool {
	p = bytes.TrimSpace(p)
	return len(p) == 0 || bytes.Equal(p, []byte("null")) || p[0] == '{'
}

// admit decides what becomes of one message of the client. Over
// graphql-transport-ws, a message the protocol does not allow at that
// point closes the socket with 4400: one that is not a JSON object with a
// type a client sends, a connection_init whose payload is present but not
// an object, a second connection_init, anything but connection_init, ping
// and pong before it, a subscribe without an id or an object payload, a
// complete without an id. A subscribe whose id an operation of the socket
// still runs under closes it with 4409. A ping before connection_init is
// answered here (gqlgen answers pings only after it). The legacy graphql-ws
// subprotocol is left to gqlgen, but for a connection_init's payload,
// which must be an object there too. Finally a subscribe (or the legacy
// start) is charged to the key's rate limit (charge).
func (s *socket) admit(data []byte) admission {
	var m clientMessage
	valid := json.Unmarshal(data, &m) == nil
	if s.Subprotocol() != "graphql-transport-ws" {
		if valid && m.Type == "connection_init" && !objectOrNone(m.Payload) {
			return s.refuse(CloseBadRequest, "The payload of connection_init must be an object.")
		}
		if valid && m.Type == "start" && !s.charge(m.ID) {
			return answered
		}
		return admitted
	}
	if !valid || m.Type == "" {
		return s.refuse(CloseBadRequest, "A message must be a JSON object with a type.")
	}
	s.mu.Lock()
	initSent := s.initSent
	_, duplicate := s.running[m.ID]
	s.mu.Unlock()
	switch m.Type {
	case "connection_init":
		switch {
		case initSent:
			return s.refuse(CloseBadRequest, "Too many initialisation requests: connection_init was sent already.")
		case !objectOrNone(m.Payload):
			return s.refuse(CloseBadRequest, "The payload of connection_init must be an object.")
		}
		s.mu.Lock()
		s.initSent = true
		s.mu.Unlock()
		return admitted
	case "ping", "pong":
		switch {
		case !objectOrNone(m.Payload):
			return s.refuse(CloseBadRequest, "The payload of "+m.Type+" must be an object.")
		case initSent:
			return admitted
		case m.Type == "ping":
			_ = s.WriteJSON(map[string]any{"type": "pong"})
		}
		return answered
	}
	if !initSent {
		return s.refuse(CloseBadRequest, "Send connection_init, and wait for connection_ack, first.")
	}
	switch m.Type {
	case "subscribe":
		switch p := bytes.TrimSpace(m.Payload); {
		case m.ID == "":
			return s.refuse(CloseBadRequest, "A subscribe needs an id.")
		case len(p) == 0 || p[0] != '{':
			return s.refuse(CloseBadRequest, "The payload of subscribe must be an object.")
		case duplicate:
			return s.refuse(CloseDuplicateID, "Subscriber for "+m.ID+" already exists")
		}
		if !s.charge(m.ID) {
			return answered
		}
		s.mu.Lock()
		if s.running == nil {
			s.running = map[string]struct{}{}
		}
		s.running[m.ID] = struct{}{}
		s.mu.Unlock()
		return admitted
	case "complete":
		if m.ID == "" {
			return s.refuse(CloseBadRequest, "A complete needs an id.")
		}
		s.ended(m.ID)
		return admitted
	}
	return s.refuse(CloseBadRequest, "A client sends no message of type "+m.Type+".")
}

// refuse closes the socket with code and reason.
func (s *socket) refuse(code websocket.StatusCode, reason string) admission {
	s.closeWith(code, reason)
	return refused
}

// ended forgets the operation id: the client or the server completed it,
// and it may be used again.
func (s *socket) ended(id string) {
	s.mu.Lock()
	delete(s.running, id)
	s.mu.Unlock()
}

// charge takes one request of the key's rate limit for the subscribe
// message id, and reports whether the message may go on to gqlgen: past the
// limit, it is answered with an error message here. Before connection_init
// succeeded (the legacy protocol, which gqlgen refuses then), it goes on
// uncharged.
func (s *socket) charge(id string) bool {
	s.mu.Lock()
	who := s.who
	s.mu.Unlock()
	if who.KeyID == "" {
		return true
	}
	err := s.edge.TakeRequest(context.Background(), who)
	if err == nil {
		return true
	}
	e := httpedge.PublicError(s.gin, err)
	item := map[string]any{"message": e.Message, "extensions": graph.Extensions(e, httpedge.RequestID(s.gin))}
	var payload any = []any{item}
	if s.Subprotocol() != "graphql-transport-ws" {
		payload = item // the legacy protocol's error payload is one error
	}
	_ = s.WriteJSON(map[string]any{"id": id, "type": "error", "payload": payload})
	return false
}

// sentMessage is the type and id of a message the server writes. gqlgen's
// messages are structs with the fields Type and ID, read by reflection
// (encoding every event twice would cost more); any other value is read
// from its JSON.
func sentMessage(v any) (typ, id string) {
	rv := reflect.Indirect(reflect.ValueOf(v))
	if rv.Kind() == reflect.Struct {
		t, i := rv.FieldByName("Type"), rv.FieldByName("ID")
		if t.Kind() == reflect.String && i.Kind() == reflect.String {
			return t.String(), i.String()
		}
	}
	var m struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	}
	if raw, err := json.Marshal(v); err == nil {
		_ = json.Unmarshal(raw, &m)
	}
	return m.Type, m.ID
}
