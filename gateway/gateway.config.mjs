// Hive Gateway in front of the KernelIndex subgraphs (registry, benchmarks), as `kernelindex
// serve` starts it (gateway/stack.py) and as deploy/ runs it.
// - The client's Authorization header reaches the subgraphs, so mutations authenticate.
// - Subscriptions travel to the subgraphs over WebSocket (graphql-transport-ws): Strawberry does
//   not speak the gateway's default SSE transport. connection_init's payload (the API key of
//   benchmarkJobUpdated) is passed on.
// - Every path but /graphql (and the gateway's own health checks) goes to the web process
//   (pages, GraphiQL, static files) at KERNELINDEX_WEB_URL, but /exports/ (bulk exports) to the
//   registry subgraph at KERNELINDEX_EXPORTS_URL; /healthz answers "ok" here.
import { maxAliasesPlugin } from "@escape.tech/graphql-armor-max-aliases";
import { maxDepthPlugin } from "@escape.tech/graphql-armor-max-depth";
import { maxDirectivesPlugin } from "@escape.tech/graphql-armor-max-directives";
import { maxTokensPlugin } from "@escape.tech/graphql-armor-max-tokens";
import { defineConfig } from "@graphql-hive/gateway";
import { GraphQLError, Kind, parse, print, visit } from "graphql";
import http from "node:http";
import { WebSocketServer } from "ws";

// The subgraphs' query limits (server/settings.py, the one source: `serve` passes
// Settings.query_limits() as KERNELINDEX_QUERY_LIMITS). These defaults are the same numbers
// (tests/federation/test_edge_limits.py checks it), for a gateway started without it (deploy/).
export const DEFAULT_LIMITS = {
  maxDepth: 12,
  maxTokens: 4000,
  maxAliases: 30,
  maxDirectives: 50,
  maxFragments: 100,
  maxFields: 500,
  maxBodyBytes: 1048576,
  requestDeadlineMs: 30000,
};
export const LIMITS = { ...DEFAULT_LIMITS, ...JSON.parse(process.env.KERNELINDEX_QUERY_LIMITS || "{}") };
// Browser origins allowed to call /graphql (CORS); none unless KERNELINDEX_CORS_ORIGINS names them.
export const CORS_ORIGINS = (process.env.KERNELINDEX_CORS_ORIGINS ?? "").split(",").map((o) => o.trim()).filter(Boolean);

const GATEWAY_PATHS = new Set(["/graphql", "/healthcheck", "/readiness", "/readiness/supergraph"]);
// Hop-by-hop headers and the ones fetch() recomputes are not passed back to the client.
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
const MAX_BODY_BYTES = LIMITS.maxBodyBytes;

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

// The request target a page is forwarded with: a path that starts with a single "/" (then its
// query), from the raw request line where Node gives it. Anything else is refused (null): a
// network-path reference ("//host/...", "/\\host", "//user@host", "///host") would replace the
// web process's host when resolved against its URL, and an absolute form ("GET http://host/")
// names another host outright; the gateway forwards to the web process only.
function pageTarget(rawTarget) {
  if (typeof rawTarget !== "string" || !rawTarget.startsWith("/")) return null;
  if (rawTarget[1] === "/" || rawTarget[1] === "\\" || rawTarget.includes("\\")) return null;
  return rawTarget;
}

// A request whose target is not such a path is answered 404 by Node's server itself, before Hive
// Gateway builds a URL of it (an absolute form would make that URL fail, with a 500 and a stack
// trace for the client; "//host" forms would name another host).
function refuseForeignTargets() {
  const emit = http.Server.prototype.emit;
  if (emit.refusesForeignTargets) return;
  http.Server.prototype.emit = Object.assign(
    function (event, request, response, ...rest) {
      if (event === "request" && pageTarget(request.url) === null) {
        response.writeHead(404, { "content-type": "text/plain", connection: "close" });
        response.end("not found");
        return true;
      }
      return emit.call(this, event, request, response, ...rest);
    },
    { refusesForeignTargets: true },
  );
}
refuseForeignTargets();

// Headers never sent to the web process: hop-by-hop ones (RFC 9110 7.6.1, and any the client's
// Connection header names), the ones fetch() recomputes, and the client's credentials (the pages
// are built from public GraphQL answers; a key or cookie has no business there).
const HOP_BY_HOP = ["connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate", "te", "trailer", "transfer-encoding", "upgrade"];
const NEVER_FORWARDED = [...HOP_BY_HOP, "host", "content-length", "authorization", "cookie"];

function forwardedHeaders(incoming, fetchAPI) {
  const headers = new fetchAPI.Headers(incoming);
  const named = (incoming.get("connection") ?? "").split(",").map((name) => name.trim().toLowerCase()).filter(Boolean);
  for (const name of [...NEVER_FORWARDED, ...named]) headers.delete(name);
  headers.set("x-forwarded-host", incoming.get("host") ?? "");
  return headers;
}

// Fields and fragment definitions of a document, counted right after it is parsed (the token
// limit has bounded its size), before validation: graphql-js's overlapping-fields check is
// quadratic in the fields of one selection, and the planner's work grows with them.
function limitDocumentSize({ maxFields, maxFragments }) {
  return {
    onParse() {
      return ({ result, replaceParseResult }) => {
        if (result == null || result instanceof Error) return;
        let fields = 0;
        let fragments = 0;
        visit(result, {
          [Kind.FIELD]() {
            fields += 1;
          },
          [Kind.FRAGMENT_DEFINITION]() {
            fragments += 1;
          },
        });
        const over =
          fields > maxFields
            ? `the document has ${fields} fields; at most ${maxFields}`
            : fragments > maxFragments
              ? `the document defines ${fragments} fragments; at most ${maxFragments}`
              : null;
        if (over) replaceParseResult(new GraphQLError(over, { extensions: { code: "GRAPHQL_VALIDATION_FAILED" } }));
      };
    },
  };
}

// The parser and validation limits, applied before any planning, with the subgraphs' numbers.
// graphql-armor's errors carry no code: codeEveryError() gives them the subgraphs' codes.
function queryLimits(limits) {
  // The validation rules report their refusal as a validation error (by default they throw it,
  // which bypasses the rest of validation and its error handling).
  const reported = { propagateOnRejection: false, onReject: [(context, error) => context?.reportError(error)] };
  const armor = [
    maxTokensPlugin({ n: limits.maxTokens }),
    // graphql-armor counts the root field as level 1, Strawberry's limiter (graphql-depth-limit)
    // as 0: the same documents pass both with this n.
    maxDepthPlugin({
      ...reported,
      n: limits.maxDepth + 1,
      flattenFragments: true,
      exposeLimits: false,
      errorMessage: `the query is deeper than the maximum depth of ${limits.maxDepth} below its root fields`,
    }),
    maxAliasesPlugin({ ...reported, n: limits.maxAliases, allowList: [] }),
    maxDirectivesPlugin({ ...reported, n: limits.maxDirectives }),
  ];
  // The token limit first: it bounds the document the field and fragment counts walk.
  return [...(on("armor") ? armor.slice(0, 1) : []), ...(on("counts") ? [limitDocumentSize(limits)] : []), ...(on("armor") ? armor.slice(1) : [])];
}

// A hard end-to-end bound on one HTTP request to /graphql (WebSocket subscriptions are long-lived
// by design and bounded per connection instead): past it the client gets a coded 504 and the
// request's signal is aborted, which cancels its subgraph requests.
function requestDeadline(ms) {
  return {
    onRequest({ request, url, requestHandler, setRequestHandler, fetchAPI }) {
      if (url.pathname !== "/graphql") return;
      const deadline = new AbortController();
      Object.defineProperty(request, "signal", { value: AbortSignal.any([request.signal, deadline.signal]) });
      const late = () =>
        new fetchAPI.Response(
          JSON.stringify({ errors: [{ message: `the request took longer than the deadline of ${ms / 1000} s`, extensions: { code: "DEADLINE_EXCEEDED" } }] }),
          { status: 504, headers: { "content-type": "application/json" } },
        );
      setRequestHandler((req, ctx) =>
        new Promise((resolve, reject) => {
          const timer = setTimeout(() => {
            deadline.abort(new Error("deadline exceeded"));
            resolve(late());
          }, ms);
          Promise.resolve()
            .then(() => requestHandler(req, ctx))
            .then(
              (response) => {
                clearTimeout(timer);
                resolve(response);
              },
              (error) => {
                clearTimeout(timer);
                reject(error);
              },
            );
        }),
      );
    },
  };
}

// /readiness (what deploy/ probes) is 200 only while every subgraph answers its /healthz, which
// pings the database, within the time below: a stalled database or subgraph makes it 503 with
// the reasons, and it is 200 again once they answer. KERNELINDEX_HEALTH_URLS lists them (`serve`
// sets it); without it, Hive Gateway's own check (the supergraph is loaded) is all.
const HEALTH_URLS = (process.env.KERNELINDEX_HEALTH_URLS ?? "").split(",").filter(Boolean);
const READINESS_TIMEOUT_MS = 2000;

function readinessChecks(urls, timeoutMs) {
  return {
    async onRequest({ url, endResponse, fetchAPI }) {
      if (url.pathname !== "/readiness" || urls.length === 0) return;
      const failures = [];
      await Promise.all(
        urls.map(async (healthUrl) => {
          try {
            const response = await fetchAPI.fetch(healthUrl, { signal: AbortSignal.timeout(timeoutMs) });
            await response.arrayBuffer();
            if (response.status !== 200) failures.push(`${healthUrl}: HTTP ${response.status}`);
          } catch (error) {
            failures.push(`${healthUrl}: ${error?.name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : String(error?.message ?? error)}`);
          }
        }),
      );
      const ready = failures.length === 0;
      endResponse(
        new fetchAPI.Response(JSON.stringify(ready ? { ready } : { ready, failures }), {
          status: ready ? 200 : 503,
          headers: { "content-type": "application/json" },
        }),
      );
    },
  };
}

// One transport for subscriptions: WebSocket (graphql-transport-ws), where the per-connection
// limits apply. Over HTTP (SSE, multipart, or plain) a subscription is refused as the subgraphs
// refuse it.
function subscriptionsOverWebSocketOnly() {
  return {
    onSubscribe({ args, setResultAndStopExecution }) {
      if (args.contextValue?.socket) return;
      const message = "subscriptions are served over WebSocket (graphql-transport-ws) at /graphql, not over HTTP";
      setResultAndStopExecution({ errors: [new GraphQLError(message, { extensions: { code: "WEBSOCKET_REQUIRED" } })] });
    },
  };
}

// Identical live public subscriptions share one upstream subscription, as the subgraphs share
// one execution (server/websocket.py): without this, 1,000 clients of `runPublished` make the
// registry send every event 1,000 times and the gateway read and plan each copy. Shared: one
// public root field (SHAREABLE_FIELDS) without `after` (a resuming client replays its own
// backlog), from a connection that presents no key (the upstream connection carries the
// client's). A late joiner gets the events that follow its subscribe, as a fresh subscription
// would; a client more than MAX_SHARED_BACKLOG results behind gets a SLOW_CONSUMER error (it
// resumes with `after`); the upstream subscription ends when its last client leaves.
const SHAREABLE_FIELDS = new Set(["runPublished", "comparisonGroupChanged"]);
const MAX_SHARED_BACKLOG = 1000;

function shareKey(args) {
  const params = args.contextValue?.connectionParams ?? {};
  if (Object.values(params).some((value) => value != null && value !== "")) return null;
  const operations = (args.document?.definitions ?? []).filter(
    (d) => d.kind === Kind.OPERATION_DEFINITION && (args.operationName == null || d.name?.value === args.operationName),
  );
  if (operations.length !== 1 || operations[0].operation !== "subscription") return null;
  const selections = operations[0].selectionSet.selections;
  if (selections.length !== 1 || selections[0].kind !== Kind.FIELD || !SHAREABLE_FIELDS.has(selections[0].name.value)) return null;
  const variables = args.variableValues ?? {};
  for (const argument of selections[0].arguments ?? []) {
    if (argument.name.value !== "after") continue;
    const value = argument.value;
    if (value.kind === Kind.NULL) continue;
    if (value.kind === Kind.VARIABLE && variables[value.name.value] == null) continue;
    return null;
  }
  return `${print(args.document)}\u0000${args.operationName ?? ""}\u0000${JSON.stringify(variables)}`;
}

class SharedSubscription {
  constructor(key, source, streams) {
    this.key = key;
    this.source = source;
    this.streams = streams;
    this.listeners = new Set();
    this.ended = false;
    this.pump();
  }

  async pump() {
    let failure = null;
    try {
      for await (const result of this.source) {
        for (const listener of this.listeners) listener.offer(result);
      }
    } catch (error) {
      failure = error;
    }
    this.end(failure);
  }

  end(failure) {
    if (this.streams.get(this.key) === this) this.streams.delete(this.key);
    this.ended = true;
    for (const listener of this.listeners) listener.finish(failure);
    this.listeners.clear();
  }

  leave(listener) {
    this.listeners.delete(listener);
    if (this.listeners.size === 0 && !this.ended) {
      this.ended = true;
      if (this.streams.get(this.key) === this) this.streams.delete(this.key);
      this.source.return?.();
    }
  }

  // One client's iterator over the shared results (each a shallow copy: plugins may rewrite a
  // result's errors per client).
  listen() {
    const queue = [];
    let wake = null;
    let done = false;
    let failure = null;
    const shared = this;
    const listener = {
      offer(result) {
        if (done) return;
        if (queue.length >= MAX_SHARED_BACKLOG) {
          queue.length = 0;
          const message = "this subscriber fell too far behind and was dropped; subscribe again with `after` set to the last cursor received";
          queue.push({ errors: [new GraphQLError(message, { extensions: { code: "SLOW_CONSUMER" } })] });
          done = true;
          shared.leave(listener);
        } else {
          queue.push({ ...result });
        }
        wake?.();
      },
      finish(error) {
        done = true;
        failure = error ?? null;
        wake?.();
      },
    };
    this.listeners.add(listener);
    const stop = () => {
      if (!done) {
        done = true;
        shared.leave(listener);
      }
      queue.length = 0;
      wake?.();
      return Promise.resolve({ value: undefined, done: true });
    };
    return {
      [Symbol.asyncIterator]() {
        return this;
      },
      async next() {
        for (;;) {
          if (queue.length) return { value: queue.shift(), done: false };
          if (failure) {
            const error = failure;
            failure = null;
            throw error;
          }
          if (done) return { value: undefined, done: true };
          await new Promise((resolve) => {
            wake = resolve;
          });
          wake = null;
        }
      },
      return: stop,
      throw: stop,
    };
  }
}

function shareLiveSubscriptions() {
  const streams = new Map(); // key -> SharedSubscription, or the promise of the first subscribe
  return {
    onSubscribe({ args, subscribeFn, setSubscribeFn }) {
      const key = shareKey(args);
      if (key == null) return;
      setSubscribeFn(async (subscribeArgs) => {
        for (;;) {
          const found = streams.get(key);
          if (found instanceof SharedSubscription && !found.ended) return found.listen();
          if (found) {
            await found.catch(() => {}); // another client is opening it: join when it is open
            continue;
          }
          const opening = Promise.resolve(subscribeFn(subscribeArgs));
          streams.set(key, opening);
          let result;
          try {
            result = await opening;
          } finally {
            if (streams.get(key) === opening) streams.delete(key);
          }
          if (typeof result?.[Symbol.asyncIterator] !== "function") return result; // refused: not shared
          const stream = new SharedSubscription(key, result, streams);
          streams.set(key, stream);
          return stream.listen();
        }
      });
    },
  };
}

// The query planner renames a field it fetches twice (`_v2_comparisonGroup`); an error's path
// names the client's response keys instead.
const PLANNER_ALIAS = /^_v\d+_(.+)$/;

// graphql-armor's validation rules word their refusals as syntax errors.
const ARMOR_VALIDATION = /^Syntax Error: (?=the query is deeper|Aliases limit|Directives limit)/;

function codeFor(error) {
  const message = String(error.message ?? "");
  if (ARMOR_VALIDATION.test(message)) return "GRAPHQL_VALIDATION_FAILED";
  if (message.startsWith("Syntax Error")) return "GRAPHQL_PARSE_FAILED";
  if (message.startsWith("Variable \"$")) return "BAD_USER_INPUT";
  if (error.path == null) return "GRAPHQL_VALIDATION_FAILED";
  return "INTERNAL_SERVER_ERROR";
}

// Every error the gateway answers with has extensions.code, and a path in the client's terms.
function codeEveryError() {
  const fix = (error, fallback, rewrite = false) => {
    if (error == null || typeof error !== "object") return error;
    const path = Array.isArray(error.path) ? error.path.map((key) => (typeof key === "string" ? key.replace(PLANNER_ALIAS, "$1") : key)) : error.path;
    const code = error.extensions?.code;
    if (typeof code === "string" && path === error.path && !rewrite) return error;
    return new GraphQLError(String(error.message).replace(ARMOR_VALIDATION, ""), {
      nodes: error.nodes,
      source: error.source,
      positions: error.positions,
      path,
      originalError: error.originalError,
      extensions: { ...error.extensions, code: typeof code === "string" ? code : (fallback ?? codeFor(error)) },
    });
  };
  const fixResult = (result) => {
    if (result && Array.isArray(result.errors)) result.errors = result.errors.map((error) => fix(error));
    if (result && Array.isArray(result.incremental)) result.incremental.forEach(fixResult);
  };
  // An error of execution without a path was raised before any field ran: coercing the
  // client's variables (a string for an Int), which is the client's input, as in the subgraphs.
  const inputErrors = (result) => {
    for (const error of result?.errors ?? []) {
      if (error.path == null && typeof error.extensions?.code !== "string") {
        error.extensions = { ...error.extensions, code: "BAD_USER_INPUT" };
      }
    }
  };
  // The planner fetches the root fields that go to one subgraph together, aliased by their
  // position in the operation (`_v1_comparisonGroup` is its second root field): an error's first
  // path key is put back as the client's response key of that field.
  const clientPaths = (document, operationName) => {
    const operation = document?.definitions?.find(
      (d) => d.kind === Kind.OPERATION_DEFINITION && (operationName == null || d.name?.value === operationName),
    );
    if (!operation) return null;
    const fragments = new Map(document.definitions.filter((d) => d.kind === Kind.FRAGMENT_DEFINITION).map((d) => [d.name.value, d]));
    const roots = [];
    const collect = (selectionSet, depth) => {
      for (const selection of selectionSet?.selections ?? []) {
        if (selection.kind === Kind.FIELD) roots.push({ key: selection.alias?.value ?? selection.name.value, name: selection.name.value });
        else if (depth < 8 && selection.kind === Kind.INLINE_FRAGMENT) collect(selection.selectionSet, depth + 1);
        else if (depth < 8 && selection.kind === Kind.FRAGMENT_SPREAD) collect(fragments.get(selection.name.value)?.selectionSet, depth + 1);
      }
    };
    collect(operation.selectionSet, 0);
    return (result) => {
      for (const error of result?.errors ?? []) {
        const first = Array.isArray(error.path) ? error.path[0] : null;
        const match = typeof first === "string" ? /^_v(\d+)_(.+)$/.exec(first) : null;
        const root = match ? roots[Number(match[1])] : null;
        if (root && root.name === match[2]) {
          // GraphQLError's path is read-only: the error is rebuilt with the client's key.
          const index = result.errors.indexOf(error);
          result.errors[index] = new GraphQLError(error.message, {
            nodes: error.nodes,
            source: error.source,
            positions: error.positions,
            path: [root.key, ...error.path.slice(1)],
            originalError: error.originalError,
            extensions: error.extensions,
          });
        }
      }
    };
  };
  const planned = (result) => (result?.errors ?? []).some((e) => Array.isArray(e.path) && /^_v\d+_/.test(String(e.path[0])));
  const restorePaths = (result, context) => {
    if (!planned(result) || typeof context?.params?.query !== "string") return;
    let document;
    try {
      document = parse(context.params.query); // it passed the limits: bounded
    } catch {
      return;
    }
    clientPaths(document, context.params.operationName)?.(result);
  };
  return {
    // Validation's refusals (graphql-js's rules and graphql-armor's) are coded as such here,
    // before they can be taken for input errors.
    onValidate() {
      return ({ result, setResult }) => {
        if (!Array.isArray(result) || result.length === 0) return;
        setResult(result.map((error) => fix(error, "GRAPHQL_VALIDATION_FAILED", true)));
      };
    },
    onExecutionResult({ result, context }) {
      const each = (one) => {
        restorePaths(one, context);
        inputErrors(one);
      };
      if (Array.isArray(result)) result.forEach(each);
      else if (result && typeof result[Symbol.asyncIterator] !== "function") each(result);
    },
    onResultProcess({ result }) {
      if (Array.isArray(result)) result.forEach(fixResult);
      else if (result && typeof result[Symbol.asyncIterator] !== "function") fixResult(result);
    },
  };
}

// Paths under /exports/ (the bulk exports, server/exports.py) go to the registry subgraph at
// KERNELINDEX_EXPORTS_URL, which reads the database; every other path to the web process.
const EXPORTS_PREFIX = "/exports/";

function forwardPagesTo(webUrl, exportsUrl) {
  const webOrigin = webUrl ? new URL(webUrl).origin : null;
  const exportsOrigin = exportsUrl ? new URL(exportsUrl).origin : null;
  return {
    async onRequest({ request, url, serverContext, endResponse, fetchAPI }) {
      if (GATEWAY_PATHS.has(url.pathname)) return;
      if (url.pathname === "/healthz") {
        endResponse(new fetchAPI.Response("ok", { headers: { "content-type": "text/plain" } }));
        return;
      }
      if (!webOrigin) return;
      // Node's raw request target (the URL Hive Gateway builds from it has already been resolved).
      const raw = serverContext?.req?.url ?? url.pathname + url.search;
      const target = pageTarget(raw);
      const origin = exportsOrigin && url.pathname.startsWith(EXPORTS_PREFIX) ? exportsOrigin : webOrigin;
      const upstreamUrl = target === null ? null : new URL(origin + target);
      if (upstreamUrl === null || upstreamUrl.origin !== origin) {
        endResponse(new fetchAPI.Response("not found", { status: 404, headers: { "content-type": "text/plain" } }));
        return;
      }
      const init = { method: request.method, headers: forwardedHeaders(request.headers, fetchAPI), redirect: "manual" };
      if (request.method !== "GET" && request.method !== "HEAD") init.body = await request.arrayBuffer();
      let upstream;
      try {
        upstream = await fetchAPI.fetch(upstreamUrl, init);
      } catch {
        endResponse(new fetchAPI.Response(`the ${origin === webOrigin ? "web process" : "registry subgraph"} is not answering`, { status: 502 }));
        return;
      }
      const responseHeaders = new fetchAPI.Headers(upstream.headers);
      for (const name of DROPPED_RESPONSE_HEADERS) responseHeaders.delete(name);
      endResponse(new fetchAPI.Response(upstream.body, { status: upstream.status, headers: responseHeaders }));
    },
  };
}

// Each of our plugins can be switched off by name for bench/gateway_overhead.py, which measures
// what each costs (KERNELINDEX_GATEWAY_PLUGINS_OFF=cost,body,...). `serve` never sets it.
const OFF = new Set((process.env.KERNELINDEX_GATEWAY_PLUGINS_OFF ?? "").split(",").filter(Boolean));
const on = (name) => !OFF.has(name);

export const gatewayConfig = defineConfig({
  ...(on("auth") && {
    propagateHeaders: {
      fromClientToSubgraphs({ request }) {
        const authorization = request?.headers.get("authorization");
        return authorization ? { authorization } : {};
      },
    },
  }),
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
  ...(on("cost") && { demandControl: { maxCost: MAX_COST, listSize: DEFAULT_LIST_SIZE } }),
  // With KERNELINDEX_HEALTH_URLS, /readiness is readinessChecks()'s (Hive Gateway's own check
  // answers before any plugin, so it moves aside; a gateway that serves has its supergraph).
  ...(HEALTH_URLS.length ? { readinessCheckEndpoint: "/readiness/supergraph" } : {}),
  // No upstreamTimeout: Hive Gateway applies it to subscriptions too, and its timer's abort of a
  // subscription older than that crashed the gateway (an unhandled TimeoutError). An HTTP
  // request's subgraph fetches end with it: requestDeadline() aborts its signal.
  // CORS only for the configured origins, never with credentials (the API authenticates with a
  // bearer key, not cookies); without KERNELINDEX_CORS_ORIGINS no cross-origin access at all.
  cors: CORS_ORIGINS.length ? { origin: CORS_ORIGINS, credentials: false, methods: ["GET", "POST"] } : false,
  plugins: () =>
    [
      readinessChecks(HEALTH_URLS, READINESS_TIMEOUT_MS),
      on("body") && limitRequestBodies(MAX_BODY_BYTES),
      on("web") && forwardPagesTo(process.env.KERNELINDEX_WEB_URL, process.env.KERNELINDEX_EXPORTS_URL),
      on("deadline") && requestDeadline(LIMITS.requestDeadlineMs),
      ...queryLimits(LIMITS),
      subscriptionsOverWebSocketOnly(),
      on("subscriptions") && limitSubscriptionsPerConnection(MAX_SUBSCRIPTIONS_PER_CONNECTION),
      on("share") && shareLiveSubscriptions(),
      on("cost") && costLimitCode(),
      on("errors") && codeEveryError(),
    ].filter(Boolean),
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
