"""The `toolcalls` task."""
