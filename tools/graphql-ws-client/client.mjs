// Runs the graphql-ws client (graphql-transport-ws), as a dashboard would,
// for the subscription tests (cmd/worktrack/e2e/graphqlws_test.go).
//
//   node client.mjs '<json options>'
//
// Options: url (ws://…/graphql), key (sent in connection_init as
// {"authorization": "Bearer <key>"}; none when empty), query, variables,
// count (subscriptions to open, default 1) and mode:
//
//   "events"  opens count subscriptions and prints, one JSON line each,
//             {"sub": i, "next": <data.events>}, {"sub": i, "error": [...]},
//             {"sub": i, "complete": true}, and {"closed": {code, reason}} when
//             the socket closes; it stops when stdin ends.
//   "resume"  one subscription that a dashboard keeps alive across
//             reconnects, from the event after (if given): every
//             resumeEveryMs it drops the socket and subscribes again with
//             after = the last event received. It
//             prints {"resumes": n, "ids": [...]} once it has received the
//             event id written on stdin (or stdin ends).
import { createClient } from "graphql-ws";
import WebSocket from "ws";
import readline from "node:readline";

const opts = JSON.parse(process.argv[2]);
const print = (v) => process.stdout.write(JSON.stringify(v) + "\n");

function connect(onClosed) {
  return createClient({
    url: opts.url,
    webSocketImpl: WebSocket,
    lazy: false,
    retryAttempts: 0,
    connectionParams: opts.key ? { authorization: `Bearer ${opts.key}` } : undefined,
    on: { closed: (e) => onClosed && onClosed({ code: e.code, reason: e.reason }) },
  });
}

const stdin = readline.createInterface({ input: process.stdin });

if (opts.mode === "events") {
  const client = connect((closed) => print({ closed }));
  for (let i = 0; i < (opts.count || 1); i++) {
    client.subscribe(
      { query: opts.query, variables: opts.variables || {} },
      {
        next: (r) => print(r.errors ? { sub: i, error: r.errors } : { sub: i, next: r.data.events }),
        error: (e) => print(Array.isArray(e) ? { sub: i, error: e } : { sub: i, failed: String(e && (e.reason || e.message || e.code)) }),
        complete: () => print({ sub: i, complete: true }),
      },
    );
  }
  stdin.on("close", async () => {
    await client.dispose();
    process.exit(0);
  });
} else if (opts.mode === "resume") {
  const ids = [];
  let from = opts.after || null; // resume after this event at first
  let want = null;
  let resumes = 0;
  let client = null;
  let finished = false;
  const finish = async () => {
    if (finished) return;
    finished = true;
    if (client) await client.dispose();
    // A pipe is written asynchronously: exit once the line is out.
    process.stdout.write(JSON.stringify({ resumes, ids }) + "\n", () => process.exit(0));
  };
  let generation = 0;
  const start = () => {
    const last = ids.length ? ids[ids.length - 1] : from;
    const variables = last ? { after: last } : {};
    const mine = generation;
    client = connect();
    client.subscribe(
      { query: "subscription($after: ID) { events(after: $after) { id } }", variables },
      {
        next: (r) => {
          // A client being disposed: what it still receives is not
          // recorded, and the next subscription replays it (after = the
          // last event recorded).
          if (mine !== generation) return;
          if (r.errors) {
            print({ error: r.errors });
            process.exit(1);
          }
          ids.push(r.data.events.id);
          if (want && r.data.events.id === want) finish();
        },
        error: (e) => {
          // Disposing a client ends its subscription with the socket's close.
          if (!finished && mine === generation) {
            print({ error: Array.isArray(e) ? e : String(e && (e.reason || e.message || e.code)) });
            process.exit(1);
          }
        },
        complete: () => {},
      },
    );
  };
  start();
  let resuming = false;
  const timer = setInterval(async () => {
    if (finished || resuming) return;
    resuming = true;
    const old = client;
    generation++;
    await old.dispose();
    resumes++;
    if (!finished) start();
    resuming = false;
  }, opts.resumeEveryMs || 1000);
  stdin.on("line", (line) => {
    want = line.trim();
    if (ids.includes(want)) finish();
  });
  stdin.on("close", () => {
    clearInterval(timer);
    finish();
  });
} else {
  print({ failed: `unknown mode ${opts.mode}` });
  process.exit(2);
}
