"""Manifest loading: YAML with positions, the JSON Schema contract, typed objects."""
