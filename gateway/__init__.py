"""Assembly: settings, the Starlette app, the schema object, auth, the CLI, the embedded database."""
