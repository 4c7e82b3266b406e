"""Text to the model: the native readers, the JSON reader, templates and references."""
