"""The web platform: FastAPI pages (Jinja2 + htmx) and a JSON API over one service layer."""

from .app import create_app, create_from_env

__all__ = ["create_app", "create_from_env"]
