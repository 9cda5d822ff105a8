"""The `entities` task."""
