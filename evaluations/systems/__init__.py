"""Systems under test: anything that, given a query, returns ranked documents and optionally an answer.

One contract (``SystemRequest`` -> ``SystemResponse``) for the built-in LanceDB pipeline, a user's Python
callable (``--system module:function``) and an HTTP endpoint (``--system https://…``).
"""

from evaluations.systems.base import RetrievedItem, System, SystemRequest, SystemResponse, SystemUsage
from evaluations.systems.factory import build_system

__all__ = ["RetrievedItem", "System", "SystemRequest", "SystemResponse", "SystemUsage", "build_system"]
