"""Loopback HTTP servers that speak the providers' wire formats, for provider tests."""
