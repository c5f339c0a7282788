"""Tools' schemas: a Python function or a JSON Schema made into a tool (`tool`), its argument
schema from type hints and docstrings, the constraints the grammar holds and those the validator
checks after decoding. Imports only the shared modules beside this room."""
