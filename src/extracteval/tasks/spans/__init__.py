"""The `spans` task."""
