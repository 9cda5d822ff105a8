"""The `json` task."""
