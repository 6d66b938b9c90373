"""The runner: claims benchmark jobs over GraphQL, runs the harness, posts signed results."""
