// Hive Gateway in front of the KernelIndex subgraph (used by tests/federation/test_gateway.py).
// - The client's Authorization header reaches the subgraph, so mutations authenticate.
// - Subscriptions travel to the subgraph over WebSocket (graphql-transport-ws): Strawberry does
//   not speak the gateway's default SSE transport.
import { defineConfig } from "@graphql-hive/gateway";

export const gatewayConfig = defineConfig({
  propagateHeaders: {
    fromClientToSubgraphs({ request }) {
      const authorization = request.headers.get("authorization");
      return authorization ? { authorization } : {};
    },
  },
  transportEntries: {
    "*.http": {
      options: {
        subscriptions: { kind: "ws", location: "/graphql" },
      },
    },
  },
});
