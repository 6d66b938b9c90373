// Hive Gateway in front of the KernelIndex subgraphs (registry, benchmarks), as `kernelindex
// serve` starts it (gateway/stack.py) and as deploy/ runs it.
// - The client's Authorization header reaches the subgraphs, so mutations authenticate.
// - Subscriptions travel to the subgraphs over WebSocket (graphql-transport-ws): Strawberry does
//   not speak the gateway's default SSE transport. connection_init's payload (the API key of
//   benchmarkJobUpdated) is passed on.
// - Every path but /graphql (and the gateway's own health checks) goes to the web process
//   (pages, GraphiQL, static files) at KERNELINDEX_WEB_URL; /healthz answers "ok" here.
import { defineConfig } from "@graphql-hive/gateway";
import { GraphQLError } from "graphql";
import { WebSocketServer } from "ws";

const GATEWAY_PATHS = new Set(["/graphql", "/healthcheck", "/readiness"]);
// Hop-by-hop headers and the ones fetch() recomputes are not passed on.
const DROPPED_REQUEST_HEADERS = ["host", "connection", "keep-alive", "transfer-encoding", "content-length"];
const DROPPED_RESPONSE_HEADERS = ["connection", "keep-alive", "transfer-encoding", "content-encoding", "content-length"];

// At most this many subscriptions at once on one client connection (the subgraphs do not limit
// the gateway's own upstream connections, which carry many clients' subscriptions).
const MAX_SUBSCRIPTIONS_PER_CONNECTION = 20;

function limitSubscriptionsPerConnection(limit) {
  const active = new WeakMap(); // client WebSocket -> subscriptions running on it
  return {
    onSubscribe({ args, setResultAndStopExecution }) {
      const socket = args.contextValue?.socket;
      if (!socket) return undefined;
      const running = active.get(socket) ?? 0;
      if (running >= limit) {
        const message = `at most ${limit} subscriptions may run at once on one connection; complete one first or open another connection`;
        setResultAndStopExecution({ errors: [new GraphQLError(message, { extensions: { code: "TOO_MANY_SUBSCRIPTIONS" } })] });
        return undefined;
      }
      active.set(socket, running + 1);
      let released = false;
      const release = () => {
        if (!released) {
          released = true;
          active.set(socket, (active.get(socket) ?? 1) - 1);
        }
      };
      return {
        onSubscribeResult({ result }) {
          if (typeof result?.[Symbol.asyncIterator] !== "function") {
            release(); // refused or failed before it started
            return undefined;
          }
          return { onEnd: release };
        },
        onSubscribeError: release,
      };
    },
  };
}

// The subgraphs' bound on an HTTP request body and on a WebSocket message (server/settings.py
// max_body_bytes, enforced there by server/request_body.py and uvicorn's ws_max_size).
const MAX_BODY_BYTES = 1048576;

// Every request body is read up to the limit, Content-Length or not (a chunked body is counted as
// it arrives), and refused past it with the subgraphs' 413 and code; a body within it is handed on.
function limitRequestBodies(maxBytes) {
  const tooLarge = (fetchAPI) =>
    new fetchAPI.Response(
      JSON.stringify({ errors: [{ message: `request body is larger than the limit of ${maxBytes} bytes`, extensions: { code: "PAYLOAD_TOO_LARGE" } }] }),
      { status: 413, headers: { "content-type": "application/json" } },
    );
  return {
    async onRequest({ request, setRequest, endResponse, fetchAPI }) {
      if (request.body == null) return;
      const declared = request.headers.get("content-length");
      if (declared !== null) {
        // Node's HTTP parser ends the body at the declared length: only its number need be checked.
        if (Number(declared) > maxBytes) endResponse(tooLarge(fetchAPI));
        return;
      }
      // A chunked body declares no length: counted as it arrives, refused once past the limit.
      const reader = request.body.getReader();
      const chunks = [];
      let received = 0;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        received += value.byteLength;
        if (received > maxBytes) {
          reader.cancel().catch(() => {});
          endResponse(tooLarge(fetchAPI));
          return;
        }
        chunks.push(value);
      }
      const headers = new fetchAPI.Headers(request.headers);
      headers.delete("transfer-encoding");
      headers.set("content-length", String(received));
      setRequest(new fetchAPI.Request(request.url, { method: request.method, headers, body: Buffer.concat(chunks), signal: request.signal }));
    },
  };
}

// Hive Gateway's CLI creates its `ws` server without `maxPayload` (ws's default: 100 MiB) and has no
// option for it, so the bound is set on the server before each upgrade completes: from the first
// message (connection_init included), ws closes a connection whose message is larger with 1009
// "message too big", as the subgraphs do.
function limitWebSocketMessages(maxBytes) {
  const completeUpgrade = WebSocketServer.prototype.completeUpgrade;
  if (completeUpgrade.limitedTo !== undefined) return;
  WebSocketServer.prototype.completeUpgrade = Object.assign(
    function (...args) {
      this.options.maxPayload = maxBytes;
      return completeUpgrade.apply(this, args);
    },
    { limitedTo: maxBytes },
  );
}
limitWebSocketMessages(MAX_BODY_BYTES);

// Demand control: the same maximum and default list size as the subgraphs.
const MAX_COST = 5000;
const DEFAULT_LIST_SIZE = 10;

// Hive Gateway refuses with COST_ESTIMATED_TOO_EXPENSIVE; clients see the subgraphs' code.
function costLimitCode() {
  const renamed = (result) => {
    for (const error of result?.errors ?? []) {
      if (error.extensions?.code === "COST_ESTIMATED_TOO_EXPENSIVE") {
        error.extensions.code = "COST_LIMIT";
      }
    }
  };
  return {
    onExecutionResult({ result }) {
      if (Array.isArray(result)) result.forEach(renamed);
      else renamed(result);
    },
  };
}

function forwardPagesTo(webUrl) {
  return {
    async onRequest({ request, url, endResponse, fetchAPI }) {
      if (GATEWAY_PATHS.has(url.pathname)) return;
      if (url.pathname === "/healthz") {
        endResponse(new fetchAPI.Response("ok", { headers: { "content-type": "text/plain" } }));
        return;
      }
      if (!webUrl) return;
      const headers = new fetchAPI.Headers(request.headers);
      for (const name of DROPPED_REQUEST_HEADERS) headers.delete(name);
      headers.set("x-forwarded-host", request.headers.get("host") ?? "");
      const init = { method: request.method, headers, redirect: "manual" };
      if (request.method !== "GET" && request.method !== "HEAD") init.body = await request.arrayBuffer();
      let upstream;
      try {
        upstream = await fetchAPI.fetch(new URL(url.pathname + url.search, webUrl), init);
      } catch {
        endResponse(new fetchAPI.Response("the web process is not answering", { status: 502 }));
        return;
      }
      const responseHeaders = new fetchAPI.Headers(upstream.headers);
      for (const name of DROPPED_RESPONSE_HEADERS) responseHeaders.delete(name);
      endResponse(new fetchAPI.Response(upstream.body, { status: upstream.status, headers: responseHeaders }));
    },
  };
}

export const gatewayConfig = defineConfig({
  propagateHeaders: {
    fromClientToSubgraphs({ request }) {
      const authorization = request?.headers.get("authorization");
      return authorization ? { authorization } : {};
    },
  },
  transportEntries: {
    "*.http": {
      options: {
        subscriptions: {
          kind: "ws",
          location: "/graphql",
          // Interpolated per client connection; empty values are left out. The gateway shares one
          // upstream connection among subscriptions with the same parameters (e.g. all anonymous).
          options: {
            connectionParams: {
              Authorization: "{context.connectionParams.Authorization}",
              apiKey: "{context.connectionParams.apiKey}",
            },
          },
        },
      },
    },
  },
  // The subgraphs' cost limit (resolvers/cost_limit.py: MAX_COST, DEFAULT_LIST_SIZE), applied
  // here too, to each subgraph request the plan makes, before it is sent.
  demandControl: { maxCost: MAX_COST, listSize: DEFAULT_LIST_SIZE },
  plugins: () => [
    limitRequestBodies(MAX_BODY_BYTES),
    forwardPagesTo(process.env.KERNELINDEX_WEB_URL),
    limitSubscriptionsPerConnection(MAX_SUBSCRIPTIONS_PER_CONNECTION),
    costLimitCode(),
  ],
  maskedErrors: { maskError: keepSubgraphCodes },
});

// A subgraph refuses a subscription (UNAUTHENTICATED, FORBIDDEN, NOT_FOUND, ...) with a
// graphql-transport-ws `error` message; the gateway's WebSocket client rejects with its list of
// errors, which the default masking would turn into "Unexpected error.". Those are the
// subgraph's answers to the client: pass on their message and code. Anything else stays masked.
function keepSubgraphCodes(error, message) {
  for (let cause = error; cause; cause = cause.originalError ?? cause.cause) {
    const first = Array.isArray(cause) ? cause[0] : null;
    if (first && typeof first.message === "string" && typeof first.extensions?.code === "string") {
      return new GraphQLError(first.message, { extensions: first.extensions, path: error.path });
    }
    if (cause instanceof GraphQLError && cause.originalError == null) return cause;
    if (Array.isArray(cause)) break;
  }
  return new GraphQLError(message, { extensions: { code: "INTERNAL_SERVER_ERROR", unexpected: true }, path: error.path });
}
