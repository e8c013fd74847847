"""The JSON API (OpenAPI at /docs): one router per resource."""
