"""``config.yaml`` (SPEC §3): ``settings`` parses and validates it, ``env`` applies the environment to it."""
