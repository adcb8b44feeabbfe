"""Small, documented example functions used by the demo job and the docs."""
