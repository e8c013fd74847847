import sys

sys.path.insert(0, "{REFERENCE_DIR}")
from add_vectors import add  # noqa: E402
