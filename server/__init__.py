"""The subgraph server: one Starlette process per subgraph (registry, benchmarks) serving
GraphQL over HTTP and WebSocket, with its schema, authentication, body limits, settings and
start-up data."""
