"""The system prompt: section templates, the renderer and its cache."""
