"""The `structured` task."""
