"""The one GraphQL-over-HTTP client of our tools (the CLI, the runner): it speaks to the API
only, never to the database."""
