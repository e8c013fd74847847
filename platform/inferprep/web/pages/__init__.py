"""The HTML pages (Jinja2 + htmx): one router per resource."""
