"""The `labels` task."""
