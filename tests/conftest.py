"""Shared pytest configuration: the tests directory is importable, golden-file updates."""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite tests/golden/*.txt from the current printer output")
