// The GraphiQL page of GET /graphql, bundled by `make graphiql` (esbuild)
// into web/graphiql/graphiql.js: no script or style comes from a CDN.
import React from "react";
import { createRoot } from "react-dom/client";
import { GraphiQL } from "graphiql";
import { createGraphiQLFetcher } from "@graphiql/toolkit";
import { createClient } from "graphql-ws";
import { getOperationAST, parse } from "graphql";

const endpoint = new URL("/graphql", window.location.href);
const socket = new URL(endpoint);
socket.protocol = endpoint.protocol === "https:" ? "wss:" : "ws:";

const overHTTP = createGraphiQLFetcher({ url: endpoint.href });

function isSubscription(params) {
  try {
    return getOperationAST(parse(params.query), params.operationName)?.operation === "subscription";
  } catch {
    return false;
  }
}

// Queries and mutations go over HTTP POST; subscriptions over a WebSocket
// (graphql-transport-ws) on the same path, the key from the Headers pane
// sent in connection_init.
function fetcher(params, opts) {
  if (!isSubscription(params)) {
    return overHTTP(params, opts);
  }
  const headers = opts?.headers ?? {};
  const auth = Object.entries(headers).find(([k]) => k.toLowerCase() === "authorization")?.[1];
  const client = createClient({ url: socket.href, connectionParams: auth ? { authorization: auth } : {} });
  const iterator = client.iterate({ query: params.query, variables: params.variables, operationName: params.operationName });
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    next: () => iterator.next(),
    async return() {
      await iterator.return?.();
      await client.dispose();
      return { done: true, value: undefined };
    },
  };
}

// GraphiQL keeps tabs and history in localStorage, each with its request
// headers, even with shouldPersistHeaders off. Headers hold the API key:
// this storage drops every "headers" member before anything is written.
function withoutHeaders(value) {
  if (Array.isArray(value)) return value.map(withoutHeaders);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).filter(([k]) => k !== "headers").map(([k, v]) => [k, withoutHeaders(v)]));
  }
  return value;
}

const storage = {
  getItem: (key) => window.localStorage.getItem(key),
  setItem: (key, value) => {
    if (key.endsWith("headers")) return; // the headers pane itself
    let kept = value;
    try {
      kept = JSON.stringify(withoutHeaders(JSON.parse(value)));
    } catch {
      // not JSON: a query or variables text, kept as it is
    }
    window.localStorage.setItem(key, kept);
  },
  removeItem: (key) => window.localStorage.removeItem(key),
  clear: () => window.localStorage.clear(),
  get length() {
    return window.localStorage.length;
  },
};

const example = `# Put your API key in the Headers pane below:
#   {"Authorization": "Bearer wtk_..."}
# It stays in this tab: it is never saved in the browser.

{
  me {
    email
    role
  }
}
`;

createRoot(document.getElementById("graphiql")).render(
  React.createElement(GraphiQL, {
    fetcher,
    storage,
    defaultQuery: example,
    defaultHeaders: '{"Authorization": "Bearer "}',
    // Headers hold the API key: never written to localStorage.
    shouldPersistHeaders: false,
    isHeadersEditorEnabled: true,
    defaultEditorToolsVisibility: "headers",
  }),
);
