"""What several test modules share, one module per topic (docs/testing.md, "Shared
helpers: tests/support" lists them): no test module imports another
(tests/unit/test_test_layout.py). Fixtures stay in conftest.py files; their helpers live here."""
