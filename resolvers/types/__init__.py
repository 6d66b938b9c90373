"""GraphQL object types, one module per concept."""
