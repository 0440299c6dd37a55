"""``config.yaml`` (docs/design/index.md#configuration): ``settings`` parses and validates it, ``env`` applies the
environment to it."""
