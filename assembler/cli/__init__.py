"""The `assemble` command: a thin shell over the library."""
