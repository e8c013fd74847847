"""The errors of the service layer: each carries the HTTP status the web layer answers with.

Here, below every module that raises them (``services``, ``cohorts``, ``release_policy``, ...),
so a policy module can raise ``Locked`` without importing the service layer; ``services``
re-exports every name::

    ServiceError         400
     ├── NotFound        404  unknown exercise or submission
     ├── CodeTooLarge    413  code over the size cap
     ├── NotUTF8         422  bytes that are not UTF-8
     ├── BadRequest      422  any other invalid field
     └── Locked          403  the editorial or reference before a pass
"""

from __future__ import annotations


class ServiceError(Exception):
    http_status = 400


class NotFound(ServiceError):
    http_status = 404


class CodeTooLarge(ServiceError):
    http_status = 413


class NotUTF8(ServiceError):
    http_status = 422


class BadRequest(ServiceError):
    http_status = 422


class Locked(ServiceError):
    http_status = 403
