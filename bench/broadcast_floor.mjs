// The floor of delivering one event to many WebSocket subscribers on this machine: a bare Node
// server that speaks just enough graphql-transport-ws (ack, subscribe, ping) and, on each POST
// /publish, sends every subscription one `next` message shaped like a runPublished event. No
// GraphQL, no database. bench/gateway.py times it with the same subscriber process as the
// gateway and the registry subgraph, so the table says how much of their latency is delivery.
//
//     node bench/broadcast_floor.mjs PORT
import http from "node:http";
import { createRequire } from "node:module";

// `ws` as the gateway has it (gateway/node_modules, installed by `make setup`).
const { WebSocketServer } = createRequire(new URL("../gateway/package.json", import.meta.url))("ws");

const port = Number(process.argv[2]);
const subscriptions = []; // [socket, operation id]

const server = http.createServer((request, response) => {
  const chunks = [];
  request.on("data", (chunk) => chunks.push(chunk));
  request.on("end", () => {
    if (request.method !== "POST" || request.url !== "/publish") {
      response.writeHead(404).end();
      return;
    }
    const { name } = JSON.parse(Buffer.concat(chunks).toString() || "{}");
    const data = { runPublished: { cursor: name, run: { digest: `sha256:${name}`, name } } };
    for (const [socket, id] of subscriptions) socket.send(JSON.stringify({ id, type: "next", payload: { data } }));
    response.writeHead(204).end();
  });
});

new WebSocketServer({ server, path: "/graphql", handleProtocols: () => "graphql-transport-ws" }).on("connection", (socket) => {
  socket.on("message", (raw) => {
    const message = JSON.parse(raw.toString());
    if (message.type === "connection_init") socket.send(JSON.stringify({ type: "connection_ack" }));
    else if (message.type === "ping") socket.send(JSON.stringify({ type: "pong" }));
    else if (message.type === "subscribe") subscriptions.push([socket, message.id]);
  });
  socket.on("close", () => {
    for (let i = subscriptions.length - 1; i >= 0; i--) if (subscriptions[i][0] === socket) subscriptions.splice(i, 1);
  });
});

server.listen(port, "127.0.0.1", () => console.log("READY"));
