"""Puts the model-parallel library (libraries/smdistributed-modelparallel, not installed) on
sys.path. The conftest imports it, and so does the ranks' fork server first (world.py): Python
3.11's fork server starts with the default sys.path, not the test process's."""

import sys
from pathlib import Path

LIBRARY_DIR = Path(__file__).resolve().parents[3] / "libraries" / "smdistributed-modelparallel"
if str(LIBRARY_DIR) not in sys.path:
    sys.path.insert(0, str(LIBRARY_DIR))  # spawned ranks inherit the parent's sys.path
