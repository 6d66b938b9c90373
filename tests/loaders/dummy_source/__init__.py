"""A dummy source (synthetic, for tests only): what adding a source takes — this folder and one
line in the registry (tests/loaders/test_new_source.py adds it)."""

SOURCE = "dummy-synthetic"
