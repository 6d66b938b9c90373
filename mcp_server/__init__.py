"""The KernelIndex MCP server (`kernelindex mcp`): read-only tools over our GraphQL API.

Named `mcp_server`, not `mcp`, so that it never shadows the official SDK's `mcp` package. It
imports `client` (the API) and `registry` (digests, schemas, signatures) only: import-linter.
"""
