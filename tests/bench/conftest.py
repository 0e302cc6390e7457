"""bbrbench tests: helpers live in benchutil.py, on the path here (bbrbench itself is installed in .venv)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
