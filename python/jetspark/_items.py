"""What JVM-built pickles call to restore a Python item inside a result.

The JVM never decodes user items: it keeps each item's own pickle, and when a result holds items (a
`max_by`, a `to_list`, a key) it writes them as ``jetspark._items.loads(<the item's pickle>)``, so Python
gets back exactly the objects it gave.
"""

from __future__ import annotations

import pickle
from typing import Any


def loads(data: bytes) -> Any:
    return pickle.loads(data)
