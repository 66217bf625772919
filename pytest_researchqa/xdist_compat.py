"""Everything that knows about pytest-xdist, in one place.

xdist is optional: without it, ``is_worker`` is always False and no hook here
is registered. ``worker_queue`` reads an xdist internal (the worker's queue
of assigned test indices) so model calls for upcoming rows can start early;
if a future xdist changes it, the function returns None and workers simply
start each row's call when the row begins (slower, still correct).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import pytest


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def worker_queue(config: pytest.Config) -> Optional[Any]:
    """The xdist worker's queue of assigned items (an internal; None when absent or changed)."""
    if not is_worker(config):
        return None
    for plugin in config.pluginmanager.get_plugins():
        queue = getattr(plugin, "torun", None)
        if queue is not None and hasattr(queue, "lock"):
            return queue
    return None


def upcoming_items(item: pytest.Item) -> list[pytest.Item]:
    """Items this worker will run after ``item`` (empty when the queue cannot be read)."""
    queue = worker_queue(item.config)
    if queue is None:
        return []
    try:
        with queue.lock() as pending:
            return [item.session.items[i] for i in pending if isinstance(i, int)]
    except Exception:  # an xdist change must cost speed, never the run
        return []


class ControllerHooks:
    """Hooks that exist only under xdist, registered on the controller."""

    def __init__(self, on_collection: Callable[[list[str]], None],
                 on_node_down: Callable[[dict[str, Any]], None]) -> None:
        self._on_collection = on_collection
        self._on_node_down = on_node_down

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self._on_collection(ids)

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        # A crashed worker sends no output: read defensively.
        self._on_node_down(dict(getattr(node, "workeroutput", None) or {}))
