"""The web frontend: server-rendered pages built only from GraphQL queries POSTed to an API
endpoint (the same queries a browser-side frontend would send), each with a JSON twin."""

from web.app import create_web_app

__all__ = ["create_web_app"]
