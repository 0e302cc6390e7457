"""The link_path fixture (linkpath.py) for every integration test that runs traffic through bbrkit-link."""
from linkpath import link_path  # noqa: F401
