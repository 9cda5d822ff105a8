"""The `fields` task."""
