"""Static checks of manifests: everything `assemble validate` reports, running no code."""
