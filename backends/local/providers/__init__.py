"""Provider drivers, found by name through the `pluginsdk.providers` entry-point group."""
