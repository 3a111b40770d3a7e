import sys
from pathlib import Path

# Let test modules import the shared helpers next to them.
sys.path.insert(0, str(Path(__file__).parent))


def pytest_configure(config):
    config.addinivalue_line("markers", "fast: quick comparisons against brute force")
